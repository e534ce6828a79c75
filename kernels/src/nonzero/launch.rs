//! Host-side launch of the compaction over raw CubeCL handles.

use crate::capture::launch_unchecked;
use cubecl::ir::{ElemType, UIntKind};
use cubecl::prelude::*;
use cubecl::server::Handle;

use super::count::{ElementRead, nonzero_tile_counts};
use super::geometry::Geometry;
use super::output_words::nonzero_output_words;
use super::padding::nonzero_fill_padding;
use super::plan::{CompactionPlan, CubeScan};
use super::scan::nonzero_scan_tiles;
use super::write::nonzero_write_coordinates;
use crate::launch::{
    CPU_VECTORS_PER_UNIT, RunGeometry, can_bind, elementwise_geometry, fits_integer,
    launch_vectors_then_tail, require_binding, require_len, require_word_aligned, vector_size_for,
};
use crate::{KernelError, StorageWidth};

/// Which bits make an element non-zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NonZeroPredicate {
    /// Any set bit: integers (`v != 0`) and booleans.
    AnyBit,
    /// Any set bit but the sign bit: IEEE floats, so that `-0.0` is zero and NaN is not.
    AnyBitButSign,
}

/// The input of [`launch_nonzero_coordinates`]: contiguous elements, read as raw bits.
#[derive(Clone, Debug)]
pub struct CompactionInput<'a> {
    /// The buffer: `dims.iter().product()` contiguous elements of `width`.
    pub handle: Handle,
    /// The elements' width: they are read as the unsigned integer of that width, or where the
    /// runtime [cannot bind](crate#types-the-runtime-cannot-bind) it as 32-bit words, which needs
    /// the handle to start on a 4-byte boundary.
    pub width: StorageWidth,
    /// Which bits make an element non-zero.
    pub predicate: NonZeroPredicate,
    /// The sizes of the input's last `dims.len()` dimensions, the coordinate width `N`; every
    /// dimension before them has size 1, so the element count is their product.
    pub dims: &'a [usize],
}

/// Where [`launch_nonzero_coordinates`] writes.
#[derive(Clone, Debug)]
pub struct CompactionOutput {
    /// One `elem`: the number of non-zero elements.
    pub count: Handle,
    /// `len * N` `elem`s, row-major `[len, N]` (`len` elements, `N` coordinates each).
    pub coordinates: Handle,
    /// The integer type of both outputs.
    pub elem: ElemType,
    /// The value of every padding row, or `None` to leave those rows as they were.
    pub fill: Option<i64>,
}

/// Writes the coordinates of the non-zero elements of `input` into `output.coordinates` and
/// their number into `output.count[0]`, without reading anything back to the host.
///
/// Row `i < count` of the coordinates gets the `i`-th non-zero element's coordinates in the
/// input's last `N` dimensions, in ascending element order; the other rows are left as they
/// were, or set to `output.fill` when given. `plan` lays the work out
/// ([`CompactionPlan::for_len`] chooses for the runtime and the size);
/// [`CubeScan::Planes`](super::CubeScan::Planes) needs plane operations, and its kernels fail to
/// compile where the runtime has none.
///
/// Three launches, none of which waits for the host: the tile counts (which read the input once
/// and leave one bit per element), the tile offsets (one cube), and the coordinates with the
/// padding (from the bits; without planes the padding takes a fourth launch of vector stores).
/// Every store is guarded by the buffers' lengths, whatever the scans compute.
/// [`CompactionStages`] runs them one at a time.
///
/// # Errors
///
/// As [`CompactionStages::new`]. Nothing is launched then.
pub fn launch_nonzero_coordinates(
    client: &Client,
    input: &CompactionInput<'_>,
    output: &CompactionOutput,
    plan: CompactionPlan,
) -> Result<(), KernelError> {
    CompactionStages::new(client, input, output, plan)?.run();
    Ok(())
}

/// A checked compaction with its scratch buffers allocated, launched one stage at a time:
/// [`launch_nonzero_coordinates`] is [`count`](Self::count), [`offsets`](Self::offsets) and
/// [`rows`](Self::rows) in that order. Apart, the stages are for timing each launch (the
/// `nonzero` benchmark's `NONZERO_BENCH_STAGES`); out of order they compute garbage but stay
/// inside their buffers, since every index is bounded by the checked geometry.
pub struct CompactionStages {
    client: Client,
    input: Handle,
    input_elem: ElemType,
    read: ElementRead,
    dims: Vec<u32>,
    count: Handle,
    coordinates: Handle,
    output_elem: ElemType,
    /// The type the scan writes the count in.
    count_elem: ElemType,
    fill: Option<i64>,
    /// With [`gathering`](Self::gathering), the elements the rows take (a compress); else a
    /// scratch word the write kernel binds and never reads.
    values: Handle,
    gather: bool,
    plan: CompactionPlan,
    len: usize,
    /// Input lanes per vector (the kernel's vector size).
    vector: usize,
    /// The input's length in the kernel's scalars (elements typed, words otherwise), a
    /// multiple of `vector`.
    scalars: usize,
    geometry: Geometry,
    tile_counts: Handle,
    tile_offsets: Handle,
    mask: Handle,
    /// The outputs, where the runtime cannot bind their type: `count` and `coordinates` are
    /// then `u32` scratch buffers, stored into these as 32-bit words after the compaction.
    output_words: Option<OutputWords>,
}

/// Outputs of an integer type the runtime cannot bind, written as 32-bit words.
struct OutputWords {
    count: Handle,
    coordinates: Handle,
    /// The output type's width: 8, 16 or 64.
    bits: u32,
    fill: Option<i64>,
}

impl CompactionStages {
    /// Checks `input`, `output` and `plan` against each other and the runtime, and allocates
    /// the scratch buffers from `client`'s memory pool. Launches nothing.
    ///
    /// # Errors
    ///
    /// [`KernelError`] when `output.elem` is not an integer, an input read as 32-bit words (see
    /// [`CompactionInput::width`]) or an output written as words (an integer type the runtime
    /// cannot bind) does not start on a 4-byte boundary, a handle is too small, the element count
    /// overflows or does not fit in `u32`, or `plan` is out of range.
    pub fn new(
        client: &Client,
        input: &CompactionInput<'_>,
        output: &CompactionOutput,
        plan: CompactionPlan,
    ) -> Result<Self, KernelError> {
        Self::build(client, input, output, output.elem, None, plan)
    }

    /// A compaction whose rows are the selected elements of `values` rather than their
    /// coordinates: row `i < count` of `output.coordinates` gets the element of `values` at the
    /// `i`-th set flag of the one-dimensional `input`, the other rows `output.fill`, and the
    /// count goes into `output.count` as `count_elem`. Compress's path for elements: the
    /// values are read once, where selected, and written once. Both `output.elem` (the values'
    /// type) and `count_elem` must be integer types the runtime binds.
    pub(crate) fn gathering(
        client: &Client,
        input: &CompactionInput<'_>,
        output: &CompactionOutput,
        count_elem: ElemType,
        values: Handle,
        plan: CompactionPlan,
    ) -> Result<Self, KernelError> {
        for (elem, role) in [(output.elem, "values"), (count_elem, "count")] {
            require_binding(client, elem, role)?;
        }
        require_len(
            &values,
            input.dims.iter().product(),
            output.elem.size(),
            "values",
        )?;
        Self::build(client, input, output, count_elem, Some(values), plan)
    }

    fn build(
        client: &Client,
        input: &CompactionInput<'_>,
        output: &CompactionOutput,
        count_elem: ElemType,
        values: Option<Handle>,
        plan: CompactionPlan,
    ) -> Result<Self, KernelError> {
        plan.check(client)?;
        let output_elem = output.elem;
        for elem in [output_elem, count_elem] {
            if !matches!(elem, ElemType::Int(_) | ElemType::UInt(_)) {
                return Err(KernelError::NotAnInteger { elem });
            }
        }
        if let Some(fill) = output.fill
            && !fits_integer(fill, output_elem)
        {
            return Err(KernelError::ValueOutOfRange {
                detail: format!("the fill {fill} does not fit the output type {output_elem}"),
            });
        }
        let (dims, input_width) = (input.dims, input.width);
        let width = dims.len();
        let len = dims
            .iter()
            .try_fold(1usize, |acc, &d| acc.checked_mul(d))
            .filter(|&len| u32::try_from(len).is_ok())
            .ok_or_else(|| KernelError::TooLarge {
                detail: format!(
                    "the coordinate dims {dims:?} hold more elements than the compaction's \
                     32-bit tile offsets count"
                ),
            })?;
        let elements = len
            .checked_mul(width)
            .ok_or_else(|| KernelError::TooLarge {
                detail: format!("{len} rows of {width} coordinates overflow usize"),
            })?;
        // Typed where the runtime binds the width's unsigned type, 32-bit words (which every
        // runtime binds) otherwise. With planes (GPUs) 8- and 16-bit elements are read as words
        // too wherever the buffer starts on a word: a unit holds `per_unit` vectors in flight, and a vector of
        // narrow lanes takes a register per lane in CUDA C++, which spilled (see the resource
        // table in benches/README.md).
        let narrow_as_words = plan.scan == CubeScan::Planes
            && input_width.bytes() < 4
            && require_word_aligned(&input.handle, "input").is_ok();
        let typed = can_bind(client, input_width.unsigned()) && !narrow_as_words;
        let input_elem = if typed {
            input_width.unsigned()
        } else {
            ElemType::UInt(UIntKind::U32)
        };
        require_len(&input.handle, len, input_width.bytes(), "input")?;
        if !typed {
            require_word_aligned(&input.handle, "input")?;
        }
        require_len(&output.count, 1, count_elem.size(), "count")?;
        require_len(
            &output.coordinates,
            elements,
            output_elem.size(),
            "coordinates",
        )?;
        // Where the runtime cannot bind the output type, the compaction writes u32 scratch
        // (every coordinate and the count fit: `len` fits in u32), stored as words at the end.
        let output_words = if can_bind(client, output_elem) {
            None
        } else {
            if !matches!(output_elem.size(), 1 | 2 | 8) {
                return Err(KernelError::UnsupportedType {
                    elem: output_elem,
                    role: "output",
                });
            }
            require_word_aligned(&output.count, "count")?;
            require_word_aligned(&output.coordinates, "coordinates")?;
            Some(OutputWords {
                count: output.count.clone(),
                coordinates: output.coordinates.clone(),
                bits: 8 * output_elem.size() as u32,
                fill: output.fill,
            })
        };
        let (count, coordinates, kernel_output_elem, kernel_count_elem, fill) = match output_words {
            None => (
                output.count.clone(),
                output.coordinates.clone(),
                output_elem,
                count_elem,
                output.fill,
            ),
            Some(_) => (
                client.empty(size_of::<u32>()),
                client.empty(elements.max(1) * size_of::<u32>()),
                ElemType::UInt(UIntKind::U32),
                ElemType::UInt(UIntKind::U32),
                None,
            ),
        };

        let (vector, element_bits, scalars) = if typed {
            // At most 32 lanes, so that a unit's flags for one vector fit in one mask word.
            let mut vector = vector_size_for(client, &[input_width.bytes()]).min(32);
            while vector > 1 && !len.is_multiple_of(vector) {
                vector /= 2;
            }
            (vector, 0, len)
        } else {
            // 32-bit words, the last one partly past the input for 8- and 16-bit elements
            // (CubeCL binds buffers rounded up to whole words, and the kernel counts no element
            // at or past `len`). The vector size divides the word count, and a 64-bit element
            // takes two lanes of one vector.
            let words = (len * input_width.bytes()).div_ceil(4);
            let mut vector = vector_size_for(client, &[4]).min(4);
            while vector > 1 && !words.is_multiple_of(vector) {
                vector /= 2;
            }
            let element_bits = 8 * input_width.bytes();
            if element_bits == 64 {
                vector = vector.max(2);
            }
            (vector, element_bits, words)
        };
        let read = ElementRead {
            ignore_sign: input.predicate == NonZeroPredicate::AnyBitButSign,
            element_bits,
        };
        let geometry = Geometry::new(len, width, (scalars, vector), read, plan);
        let mask_len = geometry.mask_len;
        Ok(Self {
            client: client.clone(),
            input: input.handle.clone(),
            input_elem,
            read,
            // Fits: the dims multiply to `len`, which fits in u32.
            dims: dims.iter().map(|&d| d as u32).collect(),
            count,
            coordinates,
            output_elem: kernel_output_elem,
            count_elem: kernel_count_elem,
            fill,
            gather: values.is_some(),
            values: values.unwrap_or_else(|| client.empty(size_of::<u64>())),
            plan,
            len,
            vector,
            scalars,
            geometry,
            // Zero-sized bindings are not portable: every scratch buffer holds at least one
            // element.
            tile_counts: client.empty(geometry.runs().max(1) * size_of::<u32>()),
            tile_offsets: client.empty((geometry.runs() + 1) * size_of::<u32>()),
            mask: client.empty(mask_len * size_of::<u32>()),
            output_words,
        })
    }

    fn cube_dim(&self) -> CubeDim {
        CubeDim::new_1d(self.plan.cube_size as u32)
    }

    /// One cube per tile.
    fn tile_cubes(&self) -> CubeCount {
        crate::launch::cube_count(&self.client, self.geometry.tiles)
    }

    /// Input vectors: `len / lanes` typed, whole vectors of words otherwise.
    fn vectors(&self) -> usize {
        self.scalars / self.vector
    }

    /// Whether the count kernel reads the input as 32-bit words: where the runtime [cannot
    /// bind](crate#types-the-runtime-cannot-bind) the unsigned type of the input's width. Otherwise
    /// it reads that type itself.
    pub fn reads_words(&self) -> bool {
        self.read.element_bits != 0
    }

    /// Whether the outputs are written as 32-bit words after the compaction (into `u32`
    /// scratch): where the runtime cannot bind their integer type.
    pub fn writes_words(&self) -> bool {
        self.output_words.is_some()
    }

    /// Step 1: reads the input once, writes each tile's count and the mask (one bit per
    /// element).
    pub fn count(&self) {
        let Geometry {
            shape,
            tiles,
            mask_len,
            address,
        } = self.geometry;
        if tiles == 0 {
            return;
        }
        // SAFETY: the kernel reads `input` below `vectors * vector = scalars` of its scalars
        // (elements, or whole words of a handle `new` checked to hold `len` elements, which
        // CubeCL binds rounded up to whole words) and writes `tile_counts` below `runs()`
        // (tile `t < tiles`, slot `s < cube_size` without planes) and the mask below
        // `tiles * words * cube_size` elements, by construction of the tile geometry `new`
        // checked.
        unsafe {
            launch_unchecked!(nonzero_tile_counts(
                &self.client,
                self.tile_cubes(),
                self.cube_dim(),
                address,
                self.vector,
                BufferArg::from_raw_parts(self.input.clone(), self.scalars),
                BufferArg::from_raw_parts(self.tile_counts.clone(), self.geometry.runs()),
                BufferArg::from_raw_parts(self.mask.clone(), mask_len),
                self.vectors(),
                tiles,
                self.len,
                shape,
                self.read,
                self.input_elem,
            ));
        }
    }

    /// Step 2, one cube: the offsets of the tiles (with planes) or of the units' runs (without)
    /// from their counts, and the total into `count`.
    pub fn offsets(&self) {
        let Geometry { shape, address, .. } = self.geometry;
        let runs = self.geometry.runs();
        // SAFETY: the kernel reads `tile_counts` below `runs` and writes `tile_offsets` below
        // `runs + 1` elements and `count[0]`.
        unsafe {
            launch_unchecked!(nonzero_scan_tiles(
                &self.client,
                CubeCount::Static(1, 1, 1),
                self.cube_dim(),
                address,
                BufferArg::from_raw_parts(self.tile_counts.clone(), runs.max(1)),
                BufferArg::from_raw_parts(self.tile_offsets.clone(), runs + 1),
                BufferArg::from_raw_parts(self.count.clone(), 1),
                runs,
                runs.div_ceil(shape.cube_size),
                shape.cube_size,
                shape.planes,
                self.count_elem,
            ));
        }
    }

    /// Step 3: the coordinates from the mask and the offsets, and the padding rows when a fill
    /// is given (by the write with planes, by one more launch of vector stores without); for
    /// outputs written as words ([`writes_words`](Self::writes_words)), then stored into them.
    pub fn rows(&self) {
        self.write_rows();
        self.fill_padding();
        self.store_output_words();
    }

    fn write_rows(&self) {
        let Geometry {
            shape,
            tiles,
            mask_len,
            address,
        } = self.geometry;
        if tiles == 0 || self.dims.is_empty() {
            return;
        }
        let dims: SequenceArg<u32> = self.dims.iter().copied().collect();
        let elements = self.len * self.dims.len();
        let values_len = if self.gather { self.len } else { 1 };
        // SAFETY: the kernel reads the mask and offsets below the lengths `new` allocated, and
        // `values` only below its length (`gathering` checked `len` elements);
        // every coordinate store checks its row against `len` and the padding stores stop at
        // `len * width`, so no scan result can send a store outside `coordinates`.
        unsafe {
            launch_unchecked!(nonzero_write_coordinates(
                &self.client,
                self.tile_cubes(),
                self.cube_dim(),
                address,
                BufferArg::from_raw_parts(self.mask.clone(), mask_len),
                BufferArg::from_raw_parts(self.tile_offsets.clone(), self.geometry.runs() + 1),
                BufferArg::from_raw_parts(self.coordinates.clone(), elements),
                BufferArg::from_raw_parts(self.values.clone(), values_len),
                dims,
                InputScalar::new(self.fill.unwrap_or(0), self.output_elem),
                self.vectors(),
                tiles,
                self.len,
                shape,
                // With planes (GPUs) the write's padding stores are coalesced; without (CPU
                // drivers) they run one scalar at a time, and `fill_padding` stores vectors.
                self.fill.is_some() && shape.planes,
                self.gather,
                self.output_elem,
            ));
        }
    }

    /// Every stage in order: [`count`](Self::count), [`offsets`](Self::offsets),
    /// [`rows`](Self::rows).
    pub fn run(&self) {
        self.count();
        self.offsets();
        self.rows();
    }

    /// The padding rows set to the fill with vector stores, where the runtime has no planes
    /// (see [`rows`](Self::rows)); nothing otherwise.
    fn fill_padding(&self) {
        let Some(fill) = self.fill else { return };
        if self.geometry.shape.planes || self.geometry.tiles == 0 || self.dims.is_empty() {
            return;
        }
        let width = self.dims.len();
        let elements = self.len * width;
        let vector = vector_size_for(&self.client, &[self.output_elem.size()]);
        launch_vectors_then_tail(elements, vector, |vector, first, vectors| {
            let run = RunGeometry::new(&self.client, vectors, CPU_VECTORS_PER_UNIT);
            let address =
                AddressType::from_len(elements.max(first.saturating_add(run.reach) * vector));
            // SAFETY: `coordinates` holds `elements` values (checked by `new`); the kernel
            // reads and writes vectors `first + i` for `i < vectors` only, which the split
            // keeps below `elements`.
            unsafe {
                launch_unchecked!(nonzero_fill_padding(
                    &self.client,
                    run.cubes,
                    run.dim,
                    address,
                    vector,
                    BufferArg::from_raw_parts(self.coordinates.clone(), elements / vector),
                    BufferArg::from_raw_parts(self.count.clone(), 1),
                    InputScalar::new(fill, self.output_elem),
                    width,
                    first,
                    vectors,
                    CPU_VECTORS_PER_UNIT,
                    self.output_elem,
                    self.count_elem,
                ));
            }
        });
    }

    /// Stores the `u32` scratch outputs into outputs of a type the runtime cannot bind, as
    /// 32-bit words; nothing otherwise.
    fn store_output_words(&self) {
        let Some(out) = &self.output_words else {
            return;
        };
        let values = self.len * self.dims.len();
        let words = match out.bits {
            64 => 2 * values,
            bits => (values * bits as usize / 8).div_ceil(4),
        };
        let count_words = if out.bits == 64 { 2 } else { 1 };
        let fill = out.fill.unwrap_or(0);
        let (cubes, dim) = elementwise_geometry(&self.client, words.max(1));
        // SAFETY: unit `w < max(words, 1)` reads scratch value(s) below `values` (`coordinates`
        // holds `max(values, 1)` u32) and `count[0]`, writes output word `w` only when
        // `w < words` (the output holds `values` elements, the words that hold them, which
        // CubeCL binds whole, checked by `new`), and unit 0 writes the count's word(s).
        unsafe {
            launch_unchecked!(nonzero_output_words(
                &self.client,
                cubes,
                dim,
                AddressType::from_len(words.max(values).max(1)),
                BufferArg::from_raw_parts(self.coordinates.clone(), values.max(1)),
                BufferArg::from_raw_parts(self.count.clone(), 1),
                BufferArg::from_raw_parts(out.coordinates.clone(), words.max(1)),
                BufferArg::from_raw_parts(out.count.clone(), count_words),
                values,
                words,
                self.dims.len(),
                fill as u32,
                (fill >> 32) as u32,
                out.bits,
                out.fill.is_some(),
            ));
        }
    }
}
