//! Host-side launch of a sort or top-k over raw CubeCL handles.

use cubecl::ir::{ElemType, FloatKind, UIntKind};
use cubecl::prelude::*;
use cubecl::server::Handle;

use super::counters::COUNTER_WORDS;
use super::keys::{KeyFormat, KeyKind, sort_keys};
use super::output::{sort_gather_values, sort_write_indices};
use super::radix::{DIGIT_BITS, DIGITS, sort_count_digits, sort_scan_blocks, sort_scatter_digits};
use super::short::sort_segments_in_cube;
use crate::KernelError;
use crate::capture::launch_unchecked;
use crate::launch::{
    elementwise_geometry, fits_integer, has_planes, require_len, require_word_aligned,
};
use crate::nonzero::nonzero_scan_tiles;

/// Units per cube of the radix passes.
const TILE: usize = 128;

/// Elements each unit of a radix pass holds: a tile is `TILE * RUN` elements.
const RUN: usize = 8;

/// Count-table entries each unit of the table's block scan adds up.
const SCAN_PER_UNIT: usize = 16;

/// DirectML's `DML_AXIS_DIRECTION`: which end of the order comes first.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SortOrder {
    /// Smallest first (`INCREASING`).
    #[default]
    Ascending,
    /// Largest first (`DECREASING`).
    Descending,
}

/// How the sort runs: whether its cube scans use plane (subgroup) operations or shared memory,
/// and up to which axis length one cube sorts a whole sequence in shared memory in one launch
/// instead of the radix passes over device memory. Every plan orders ties the same way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SortPlan {
    /// Whether the cube scans use plane operations (the runtime must have them).
    pub planes: bool,
    /// The longest axis sorted by one cube, at most [`CUBE_SORT_MAX`]; 0 never does. Shorter
    /// still where the runtime's shared memory cannot hold it (64-bit keys need more).
    pub cube_len: usize,
}

/// The longest axis one cube sorts: 128 units of 32 elements.
pub const CUBE_SORT_MAX: usize = CUBE_UNITS * 32;

/// Units of the one-cube sort.
const CUBE_UNITS: usize = 128;

impl SortPlan {
    /// Plane scans where `client` reports plane operations (GPUs), shared memory elsewhere
    /// (lavapipe: cubecl-wgpu turns planes off on CPU adapters; OpenGL); one cube sorts every
    /// axis its shared memory holds.
    pub fn for_client(client: &Client) -> Self {
        Self {
            planes: has_planes(client),
            cube_len: CUBE_SORT_MAX,
        }
    }
}

/// Shared memory of the one-cube sort of `capacity` elements with `key_words`-word keys: the keys
/// and positions, the counters' scan (a word per unit and counter word), and under 256 words
/// more (the scan's run offsets, the digit totals, the plane ranks).
fn cube_sort_bytes(capacity: usize, key_words: usize) -> usize {
    (capacity * (key_words + 1) + COUNTER_WORDS * CUBE_UNITS + 256) * size_of::<u32>()
}

/// Elements per unit of the one-cube sort of `axis_len` elements under `plan`, if one cube
/// sorts it: the smallest power of two that covers the axis.
fn cube_sort_run(
    client: &Client,
    plan: SortPlan,
    axis_len: usize,
    key_words: usize,
) -> Option<usize> {
    let per_unit = axis_len.div_ceil(CUBE_UNITS).max(1).next_power_of_two();
    let capacity = CUBE_UNITS * per_unit;
    let shared = crate::capture::properties(client)
        .hardware
        .max_shared_memory_size;
    (axis_len <= plan.cube_len.min(CUBE_SORT_MAX) && cube_sort_bytes(capacity, key_words) <= shared)
        .then_some(per_unit)
}

/// The shape of a sort along one axis of a contiguous `[outer, axis_len, inner]` input, keeping
/// the first `k` of each of the `outer * inner` sequences: the output is `[outer, k, inner]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SortShape {
    /// The product of the dimensions before the axis.
    pub outer: usize,
    /// The axis's length.
    pub axis_len: usize,
    /// The product of the dimensions after the axis.
    pub inner: usize,
    /// How many of each sequence to keep, at most `axis_len`.
    pub k: usize,
}

/// The input of [`launch_top_k`]: `outer * axis_len * inner` contiguous elements.
#[derive(Clone, Debug)]
pub struct SortInput {
    /// The values, read as 32-bit words, so the handle must start on a 4-byte boundary.
    pub values: Handle,
    /// The values' type: any float of 16, 32 or 64 bits, any integer of 8 to 64 bits.
    pub elem: ElemType,
}

/// Where [`launch_top_k`] writes: `outer * k * inner` elements each, written as 32-bit words
/// (both handles must start on a 4-byte boundary; the bytes of the last word past the last
/// element are overwritten).
#[derive(Clone, Debug)]
pub struct SortOutput {
    /// The values, in the input's type.
    pub values: Handle,
    /// The positions along the axis.
    pub indices: Handle,
    /// The positions' integer type, of 8 to 64 bits; it must hold `axis_len - 1`.
    pub indices_elem: ElemType,
}

/// The key format of `elem`, or an error for a type the sort does not order.
fn key_format(elem: ElemType) -> Result<KeyFormat, KernelError> {
    let unsupported = KernelError::UnsupportedType {
        elem,
        role: "sorted values",
    };
    let bits = 8 * elem.size() as u32;
    let (kind, infinity) = match elem {
        ElemType::Float(FloatKind::F16) => (KeyKind::Float, 0x7C00),
        ElemType::Float(FloatKind::BF16) => (KeyKind::Float, 0x7F80),
        ElemType::Float(FloatKind::F32 | FloatKind::Flex32) => (KeyKind::Float, 0x7F80_0000),
        ElemType::Float(FloatKind::F64) => (KeyKind::Float, 0x7FF0_0000),
        ElemType::Int(_) if matches!(bits, 8 | 16 | 32 | 64) => (KeyKind::Signed, 0),
        ElemType::UInt(_) if matches!(bits, 8 | 16 | 32 | 64) => (KeyKind::Unsigned, 0),
        _ => return Err(unsupported),
    };
    Ok(KeyFormat {
        kind,
        bits,
        infinity,
    })
}

/// 32-bit words that hold `len` elements of `bits` bits.
fn words_of(len: usize, bits: u32) -> usize {
    (len * bits as usize).div_ceil(32)
}

/// Writes into `output` the first `shape.k` elements of each sequence along the axis of
/// `input` in `order`, and their positions along the axis. Elements that compare equal keep
/// increasing position in both orders, so the result is fully determined. Floats follow a total
/// order: `-0.0` equals `+0.0`, every NaN equals every other and ranks above `+inf`; values
/// come back bit for bit as stored.
///
/// A stable LSD radix sort of order-preserving keys (see the [module](super)), batched over
/// every sequence: four launches per 4-bit digit and three more, none of them waiting on
/// another workgroup, and nothing read back to the host. `plan` picks the cube scans
/// ([`SortPlan::for_client`] chooses for the runtime). Every buffer is read and written as
/// 32-bit words, so every type runs on every runtime.
///
/// # Errors
///
/// [`KernelError`] when `k` exceeds the axis, the input's type is not one the sort orders, the
/// indices' type is not an integer of 8 to 64 bits or cannot hold `axis_len - 1`, the input has
/// more than `u32::MAX` key words, or a handle is too small or misaligned. Nothing is launched
/// then.
pub fn launch_top_k(
    client: &Client,
    input: &SortInput,
    output: &SortOutput,
    shape: SortShape,
    order: SortOrder,
    plan: SortPlan,
) -> Result<(), KernelError> {
    let SortShape {
        outer,
        axis_len,
        inner,
        k,
    } = shape;
    if k > axis_len {
        return Err(KernelError::ShapeMismatch {
            detail: format!("k = {k} exceeds the axis's length {axis_len}"),
        });
    }
    let format = key_format(input.elem)?;
    let index_bits = 8 * output.indices_elem.size() as u32;
    if !matches!(output.indices_elem, ElemType::Int(_) | ElemType::UInt(_))
        || !matches!(index_bits, 8 | 16 | 32 | 64)
    {
        return Err(KernelError::NotAnInteger {
            elem: output.indices_elem,
        });
    }
    if !fits_integer(axis_len.saturating_sub(1) as i64, output.indices_elem) {
        return Err(KernelError::ValueOutOfRange {
            detail: format!(
                "positions up to {} do not fit the indices' type {}",
                axis_len - 1,
                output.indices_elem
            ),
        });
    }
    let too_large = || KernelError::TooLarge {
        detail: format!("{shape:?} has more key words than 32-bit offsets count"),
    };
    let len = outer
        .checked_mul(axis_len)
        .and_then(|n| n.checked_mul(inner))
        .filter(|&n| n.saturating_mul(format.words()) <= u32::MAX as usize)
        .ok_or_else(too_large)?;
    let out_len = outer * k * inner;
    require_word_aligned(&input.values, "input")?;
    require_word_aligned(&output.values, "values")?;
    require_word_aligned(&output.indices, "indices")?;
    require_len(&input.values, len, format.bits as usize / 8, "input")?;
    require_len(&output.values, out_len, format.bits as usize / 8, "values")?;
    require_len(&output.indices, out_len, index_bits as usize / 8, "indices")?;
    if out_len == 0 {
        return Ok(());
    }

    let (sort, sorted) = RadixSort::run(
        client,
        &input.values,
        (len, axis_len, inner),
        format,
        order,
        plan,
    );
    sort.outputs(
        &input.values,
        output,
        sorted,
        out_len,
        (k, inner),
        index_bits,
    );
    Ok(())
}

/// The scratch and geometry of one radix sort of `len` keys in segments of `axis_len`.
struct RadixSort<'a> {
    client: &'a Client,
    format: KeyFormat,
    planes: bool,
    len: usize,
    axis_len: usize,
    tiles_per_segment: usize,
    tiles: usize,
    /// Key words (planes `len` apart) and positions, twice: each pass moves one to the other.
    keys: [Handle; 2],
    positions: [Handle; 2],
    /// The count table, its blocks' totals and offsets, and the total the offsets' scan writes.
    counts: Handle,
    table_len: usize,
    block_totals: Handle,
    block_offsets: Handle,
    blocks: usize,
    total: Handle,
    address: AddressType,
}

/// Each sequence's positions along the axis in sorted order, as `u32`, sequence by sequence
/// (`shape.k` is ignored): what the crate's own operators build on (non-maximum suppression
/// takes its score order from it). The input must be `f32`, contiguous, with `inner` of 1, and
/// not empty; the caller checks its size.
pub(crate) fn sorted_positions(
    client: &Client,
    scores: &Handle,
    (outer, axis_len): (usize, usize),
    order: SortOrder,
    plan: SortPlan,
) -> Handle {
    let format = key_format(ElemType::Float(FloatKind::F32)).expect("f32 has a key format");
    let (sort, sorted) = RadixSort::run(
        client,
        scores,
        (outer * axis_len, axis_len, 1),
        format,
        order,
        plan,
    );
    sort.positions[sorted].clone()
}

impl<'a> RadixSort<'a> {
    /// The keys of `len` elements of `input` in sequences of `axis_len` (from the caller's
    /// shape), sorted in `order` by the one-cube sort or the radix passes; returns the sort and
    /// which positions buffer holds the result.
    fn run(
        client: &'a Client,
        input: &Handle,
        (len, axis_len, inner): (usize, usize, usize),
        format: KeyFormat,
        order: SortOrder,
        plan: SortPlan,
    ) -> (Self, usize) {
        let sort = Self::new(client, len, axis_len, format, plan.planes);
        let flip = match order {
            SortOrder::Ascending => 0,
            SortOrder::Descending => format.low_mask(),
        };
        sort.keys(input, inner, flip);
        let sorted = match cube_sort_run(client, plan, axis_len, format.words()) {
            Some(per_unit) => sort.in_cube(per_unit),
            None => sort.passes(),
        };
        (sort, sorted)
    }

    fn new(
        client: &'a Client,
        len: usize,
        axis_len: usize,
        format: KeyFormat,
        planes: bool,
    ) -> Self {
        let segments = len / axis_len;
        let tiles_per_segment = axis_len.div_ceil(TILE * RUN);
        let tiles = segments * tiles_per_segment;
        let table_len = tiles * DIGITS;
        let blocks = table_len.div_ceil(TILE * SCAN_PER_UNIT);
        let key_words = len * format.words();
        let words = |n: usize| client.empty(n.max(1) * size_of::<u32>());
        // Every index a unit forms: keys and positions, the table, and the tiles' units.
        let reach = (key_words + 2 * len)
            .max(table_len + TILE * SCAN_PER_UNIT)
            .max((tiles + 1) * TILE * RUN * 2);
        Self {
            client,
            format,
            planes,
            len,
            axis_len,
            tiles_per_segment,
            tiles,
            keys: [words(key_words), words(key_words)],
            positions: [words(len), words(len)],
            counts: words(table_len),
            table_len,
            block_totals: words(blocks),
            block_offsets: words(blocks + 1),
            blocks,
            total: words(1),
            address: AddressType::from_len(reach),
        }
    }

    /// One cube per tile.
    fn tile_cubes(&self) -> CubeCount {
        cubecl::calculate_cube_count_elemwise(
            self.client,
            self.tiles * TILE,
            CubeDim::new_1d(TILE as u32),
        )
    }

    /// The keys and positions of every element, into the first buffers.
    fn keys(&self, input: &Handle, inner: usize, flip: u32) {
        let (cubes, dim) = elementwise_geometry(self.client, self.len);
        let input_words = words_of(self.len, self.format.bits);
        // SAFETY: unit `g < len` reads the input words of element `g` of a contiguous input of
        // `len` elements (checked by the caller), and writes `keys` below `len * words()` and
        // `positions` below `len`, the sizes they were made with.
        unsafe {
            launch_unchecked!(sort_keys(
                self.client,
                cubes,
                dim,
                self.address,
                BufferArg::from_raw_parts(input.clone(), input_words),
                BufferArg::from_raw_parts(self.keys[0].clone(), self.len * self.format.words()),
                BufferArg::from_raw_parts(self.positions[0].clone(), self.len),
                self.len,
                self.axis_len,
                inner,
                flip,
                self.format,
            ));
        }
    }

    /// The whole sort of each segment in one cube, `per_unit` elements to a unit: the sorted
    /// positions go to the second buffer.
    fn in_cube(&self, per_unit: usize) -> usize {
        let segments = self.len / self.axis_len;
        let key_words = self.len * self.format.words();
        let passes = if self.format.words() == 2 {
            16
        } else {
            self.format.bits / DIGIT_BITS
        };
        // SAFETY: cube `s < segments` reads keys and positions of segment `s` (below `len` and
        // `key_words`) and writes positions below `len`; its shared memory holds `128 *
        // per_unit >= axis_len` elements, every index below `axis_len`.
        unsafe {
            launch_unchecked!(sort_segments_in_cube(
                self.client,
                cubecl::calculate_cube_count_elemwise(
                    self.client,
                    segments * CUBE_UNITS,
                    CubeDim::new_1d(CUBE_UNITS as u32)
                ),
                CubeDim::new_1d(CUBE_UNITS as u32),
                self.address,
                BufferArg::from_raw_parts(self.keys[0].clone(), key_words),
                BufferArg::from_raw_parts(self.positions[0].clone(), self.len),
                BufferArg::from_raw_parts(self.positions[1].clone(), self.len),
                self.len,
                self.axis_len,
                segments,
                passes,
                self.format.words(),
                per_unit,
                CUBE_UNITS,
                self.planes,
            ));
        }
        1
    }

    /// Every radix pass, low digits first; returns which of the two buffers ends up sorted.
    fn passes(&self) -> usize {
        let mut from = 0;
        for word in 0..self.format.words() {
            let bits = self.format.bits.min(32);
            for shift in (0..bits).step_by(DIGIT_BITS as usize) {
                self.pass(from, word * self.len, shift);
                from = 1 - from;
            }
        }
        from
    }

    /// One pass: count the digit at `shift` of the key word at `word_offset`, scan the table,
    /// move every element from buffer `from` to the other.
    fn pass(&self, from: usize, word_offset: usize, shift: u32) {
        let key_words = self.len * self.format.words();
        let block = TILE * SCAN_PER_UNIT;
        // SAFETY (all four launches): units read keys below `word_offset + len <= key_words`
        // and positions below `len`, at `segment * axis_len + position` for an existing
        // element; the count table is written below `table_len` (`segment < len / axis_len`,
        // `tile < tiles_per_segment`, 16 digits); the block scan touches entries below
        // `table_len` and block totals below `blocks`; the offsets' scan reads `blocks` totals
        // and writes `blocks + 1` offsets and one total; the scatter stores below `len` only
        // (checked in the kernel) and reads block offsets below `blocks`.
        unsafe {
            launch_unchecked!(sort_count_digits(
                self.client,
                self.tile_cubes(),
                CubeDim::new_1d(TILE as u32),
                self.address,
                BufferArg::from_raw_parts(self.keys[from].clone(), key_words),
                BufferArg::from_raw_parts(self.counts.clone(), self.table_len),
                self.axis_len,
                self.tiles_per_segment,
                self.tiles,
                word_offset,
                shift,
                TILE,
                RUN,
                self.planes,
            ));
            launch_unchecked!(sort_scan_blocks(
                self.client,
                cubecl::calculate_cube_count_elemwise(
                    self.client,
                    self.blocks * TILE,
                    CubeDim::new_1d(TILE as u32)
                ),
                CubeDim::new_1d(TILE as u32),
                self.address,
                BufferArg::from_raw_parts(self.counts.clone(), self.table_len),
                BufferArg::from_raw_parts(self.block_totals.clone(), self.blocks),
                self.table_len,
                self.blocks,
                TILE,
                SCAN_PER_UNIT,
                self.planes,
            ));
            launch_unchecked!(nonzero_scan_tiles(
                self.client,
                CubeCount::Static(1, 1, 1),
                CubeDim::new_1d(TILE as u32),
                self.address,
                BufferArg::from_raw_parts(self.block_totals.clone(), self.blocks),
                BufferArg::from_raw_parts(self.block_offsets.clone(), self.blocks + 1),
                BufferArg::from_raw_parts(self.total.clone(), 1),
                self.blocks,
                self.blocks.div_ceil(TILE),
                TILE,
                self.planes,
                ElemType::UInt(UIntKind::U32),
            ));
            launch_unchecked!(sort_scatter_digits(
                self.client,
                self.tile_cubes(),
                CubeDim::new_1d(TILE as u32),
                self.address,
                BufferArg::from_raw_parts(self.keys[from].clone(), key_words),
                BufferArg::from_raw_parts(self.positions[from].clone(), self.len),
                BufferArg::from_raw_parts(self.counts.clone(), self.table_len),
                BufferArg::from_raw_parts(self.block_offsets.clone(), self.blocks + 1),
                BufferArg::from_raw_parts(self.keys[1 - from].clone(), key_words),
                BufferArg::from_raw_parts(self.positions[1 - from].clone(), self.len),
                self.len,
                self.axis_len,
                self.tiles_per_segment,
                self.tiles,
                word_offset,
                shift,
                block,
                self.format.words(),
                TILE,
                RUN,
                self.planes,
            ));
        }
    }

    /// The values and indices of the first `k` of each sorted segment (`sorted` says which
    /// buffer holds them).
    fn outputs(
        &self,
        input: &Handle,
        output: &SortOutput,
        sorted: usize,
        out_len: usize,
        (k, inner): (usize, usize),
        index_bits: u32,
    ) {
        let positions = &self.positions[sorted];
        let input_words = words_of(self.len, self.format.bits);
        let value_words = words_of(out_len, self.format.bits);
        let index_words = words_of(out_len, index_bits);
        let (cubes, dim) = elementwise_geometry(self.client, value_words);
        // SAFETY: unit `w < value_words` writes value word `w` (the words of `out_len`
        // elements, which the caller checked the handle holds and CubeCL binds whole) and reads
        // positions below `len` and the input words of elements below `len` (each position is
        // clamped below `axis_len`).
        unsafe {
            launch_unchecked!(sort_gather_values(
                self.client,
                cubes,
                dim,
                self.address,
                BufferArg::from_raw_parts(input.clone(), input_words),
                BufferArg::from_raw_parts(positions.clone(), self.len),
                BufferArg::from_raw_parts(output.values.clone(), value_words),
                out_len,
                value_words,
                k,
                self.axis_len,
                inner,
                self.format.bits,
            ));
        }
        let (cubes, dim) = elementwise_geometry(self.client, index_words);
        // SAFETY: as above, for the index words.
        unsafe {
            launch_unchecked!(sort_write_indices(
                self.client,
                cubes,
                dim,
                self.address,
                BufferArg::from_raw_parts(positions.clone(), self.len),
                BufferArg::from_raw_parts(output.indices.clone(), index_words),
                out_len,
                index_words,
                k,
                self.axis_len,
                inner,
                index_bits,
            ));
        }
    }
}
