//! Host-side launch over raw CubeCL handles.

use cubecl::features::{AtomicUsage, TypeUsage};
use cubecl::ir::features::Plane;
use cubecl::ir::{ElemType, FloatKind, Type, UIntKind};
use cubecl::prelude::*;
use cubecl::server::Handle;

use super::indices::scatter_nd_resolve_indices;
use super::kernel::{
    ReduceOp, scatter_nd_assign, scatter_nd_atomic, scatter_nd_clear, scatter_nd_combine_buckets,
    scatter_nd_gather, scatter_nd_link_rows, scatter_nd_reduce_lists, scatter_nd_segment_lists,
};
use super::packed::{
    WordKind, scatter_nd_gather_packed, scatter_nd_reduce_lists_packed,
    scatter_nd_segment_lists_packed,
};
use super::split::scatter_nd_reduce_lists_split;
use crate::launch::{bits_elem, can_bind, elementwise_geometry, require_len, require_word_aligned};
use crate::{KernelError, StorageWidth};

/// How each update combines with the element it targets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScatterReduction {
    /// The update replaces the element; with duplicate targets, one candidate wins.
    Assign,
    /// The element becomes `op(element, update)` for every update that targets it.
    Reduce(ReduceOp),
}

/// What happens to an index tuple that is still outside its dimension after negative values
/// were wrapped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum OutOfRange {
    /// The update row is dropped.
    #[default]
    Skip,
    /// Each coordinate is clamped to `[0, dim - 1]` (rows targeting a dimension of size 0 are
    /// still dropped: it has no valid index).
    Clamp,
}

/// How a launch applies the updates; see the [module docs](super).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScatterStrategy {
    /// Plain stores, for [`ScatterReduction::Assign`].
    Store,
    /// Native atomics on the data type.
    Atomic,
    /// Per-target linked lists built with a 32-bit atomic exchange, then reduced by one unit
    /// per target element (for `Assign`, that unit stores one of the candidates). With
    /// [`SegmentedLists`](Self::SegmentedLists), the only strategies for data held in words
    /// (see [`data_in_words`]).
    Lists,
    /// [`Lists`](Self::Lists) with one list per target (no [`list_buckets`] split), whose
    /// reductions cut each list into segments of about
    /// `sqrt(rows)` rows, reduced side by side by one more launch before the walk
    /// (`scatter_nd_segment_lists`), so that no unit walks a chain of dependent loads much
    /// longer than `2 * sqrt(rows)`, however many rows share a target, for scratch the size
    /// of the updates (a reduction's partial value per update element). The GPU choice: a GPU
    /// runs each link at memory latency, while a CPU driver walks a long list from its caches
    /// faster than it runs the extra launch (on lavapipe, 2^12 and 2^16 rows onto 7 targets took
    /// 1.15-1.6x the time of the plain lists with segments).
    SegmentedLists,
}

impl ScatterStrategy {
    /// Whether this is one of the lists strategies.
    pub fn uses_lists(self) -> bool {
        matches!(self, Self::Lists | Self::SegmentedLists)
    }
}

/// The shapes of a ScatterND launch, all contiguous and row-major.
///
/// The output is `[dims..., slice]`-shaped (the indexed dimensions, then everything after them
/// flattened), the indices `[rows, dims.len()]` and the updates `[rows, slice]`.
#[derive(Clone, Copy, Debug)]
pub struct ScatterNdLayout<'a> {
    /// Sizes of the `k` indexed dimensions of the output.
    pub dims: &'a [usize],
    /// Number of index tuples (update rows).
    pub rows: usize,
    /// Elements per update row: the product of the output's dimensions after the indexed ones.
    pub slice: usize,
}

/// The strategy [`launch_scatter_nd`] should use for `reduction` on data of `data_elem`:
/// plain stores for `Assign`; native atomics when the runtime reports the operation for
/// `Atomic<data_elem>` (measured 1.15x faster than the lists for i32 `Add` with 16 updates
/// per target on lavapipe); the lists otherwise, segmented where the runtime has plane
/// operations (GPUs: cubecl-wgpu turns planes off on CPU adapters, and OpenGL has none).
pub fn scatter_strategy(
    client: &Client,
    data_elem: ElemType,
    reduction: ScatterReduction,
) -> ScatterStrategy {
    let lists = if client.properties().features.plane.contains(Plane::Ops) {
        ScatterStrategy::SegmentedLists
    } else {
        ScatterStrategy::Lists
    };
    if data_in_words(client, data_elem, reduction) {
        return lists;
    }
    let op = match reduction {
        ScatterReduction::Assign => return ScatterStrategy::Store,
        ScatterReduction::Reduce(op) => op,
    };
    if atomic_supports(client, compute_elem(data_elem, op), op) {
        ScatterStrategy::Atomic
    } else {
        lists
    }
}

/// Whether [`launch_scatter_nd`] holds data of `elem` in 32-bit words for `reduction`, because
/// the runtime cannot bind the type the kernel would declare or, for a reduction, compute with
/// it: 8- and 16-bit elements packed two or four to a word (8- and 16-bit integers and `bf16`
/// on WGSL, and `f16` there for `Min`/`Max`, which choose on raw bits as 16-bit integers WGSL
/// does not have; those and `f16` on OpenGL), 64-bit ones as word pairs (OpenGL). Such data
/// always takes the lists ([`ScatterStrategy::uses_lists`]).
pub fn data_in_words(client: &Client, data_elem: ElemType, reduction: ScatterReduction) -> bool {
    matches!(
        data_binding(client, data_elem, reduction),
        Ok(DataBinding::Packed { .. } | DataBinding::Split { .. })
    )
}

/// How the kernels hold the data of a scatter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum DataBinding {
    /// Bound as this element type: the data's own, the unsigned type of its width (bools, and
    /// signed `Add`/`Mul`), whichever the kernel computes in.
    Typed(ElemType),
    /// 32-bit words holding `32 / bits` elements each.
    Packed {
        /// The element width in bits: 8 or 16.
        bits: u32,
        /// How arithmetic reads an element's bits.
        kind: WordKind,
    },
    /// 64-bit elements as pairs of 32-bit words, low word first.
    Split {
        /// How arithmetic reads an element's bits.
        kind: WordKind,
    },
}

/// How the kernels bind data of `elem` for `reduction` on this runtime; see [`data_in_words`].
fn data_binding(
    client: &Client,
    elem: ElemType,
    reduction: ScatterReduction,
) -> Result<DataBinding, KernelError> {
    let bits = 8 * elem.size() as u32;
    let typed = match reduction {
        ScatterReduction::Assign => {
            let typed = bits_elem(client, elem)?;
            can_bind(client, typed).then_some(typed)
        }
        ScatterReduction::Reduce(op) => {
            // A reduction needs numbers: bools have no sum or minimum.
            if !matches!(
                elem,
                ElemType::Int(_) | ElemType::UInt(_) | ElemType::Float(_)
            ) {
                return Err(KernelError::UnsupportedType { elem, role: "data" });
            }
            let compute = compute_elem(elem, op);
            // 8- and 16-bit data takes the packed kernel unless the runtime computes with the
            // type and, for float `Min`/`Max` (which choose on raw bits), with the unsigned type
            // of its width: a compare-and-select may compile to a `min` with the hardware's own
            // NaN and signed-zero rules (f16 on WGSL has no u16).
            let arithmetic = client
                .properties()
                .type_usage(compute)
                .contains(TypeUsage::Arithmetic);
            let float_selection =
                matches!(elem, ElemType::Float(_)) && matches!(op, ReduceOp::Min | ReduceOp::Max);
            let narrow_typed =
                arithmetic && (!float_selection || selection_bits(client, elem).is_some());
            (can_bind(client, compute) && (bits > 16 || narrow_typed)).then_some(compute)
        }
    };
    if let Some(typed) = typed {
        return Ok(DataBinding::Typed(typed));
    }
    let kind = match (reduction, elem) {
        (ScatterReduction::Assign, _) | (_, ElemType::UInt(_)) => WordKind::Unsigned,
        (_, ElemType::Int(_)) => WordKind::Signed,
        (_, ElemType::Float(FloatKind::F16)) => WordKind::F16,
        (_, ElemType::Float(FloatKind::BF16)) => WordKind::BF16,
        // f64 `Add`/`Mul` need the runtime's f64 arithmetic; `Min`/`Max` only compare bits.
        (
            ScatterReduction::Reduce(ReduceOp::Min | ReduceOp::Max),
            ElemType::Float(FloatKind::F64),
        ) => WordKind::F64,
        _ => return Err(KernelError::UnsupportedType { elem, role: "data" }),
    };
    match bits {
        8 | 16 => Ok(DataBinding::Packed { bits, kind }),
        64 => Ok(DataBinding::Split { kind }),
        _ => Err(KernelError::UnsupportedType { elem, role: "data" }),
    }
}

/// Index tuples as the kernels read them.
struct BoundIndices {
    handle: Handle,
    elem: ElemType,
    /// Whether negative values count from the end.
    signed: bool,
    /// Whether the values are 64 bits wide.
    wide: bool,
    /// Whether out-of-range coordinates are clamped (otherwise the tuple is skipped).
    clamp: bool,
}

/// The index tuples as the kernels read them: as given where the runtime binds their type;
/// otherwise (8- and 16-bit indices on WGSL and OpenGL, 64-bit ones on OpenGL) one launch
/// resolves them into `u32` coordinates (wrapped, clamped, or out of range for every dimension),
/// which the kernels then read as unsigned indices with the `Skip` policy.
///
/// `dims` holds the `k` indexed dimensions and `index_len` the number of indices, checked
/// against the handle by the caller (with [`require_index_binding`]).
fn bound_indices(
    client: &Client,
    indices: ScatterNdIndices,
    dims: &Handle,
    index_len: usize,
    k: usize,
) -> BoundIndices {
    let ScatterNdIndices {
        handle,
        elem,
        out_of_range,
    } = indices;
    let signed = matches!(elem, ElemType::Int(_));
    let clamp = out_of_range == OutOfRange::Clamp;
    if can_bind(client, elem) {
        return BoundIndices {
            handle,
            elem,
            signed,
            wide: elem.size() > 4,
            clamp,
        };
    }
    let coordinates = client.empty(index_len.max(1) * size_of::<u32>());
    let words = (index_len * elem.size()).div_ceil(4);
    if index_len > 0 {
        let (cubes, dim) = elementwise_geometry(client, index_len);
        // SAFETY: the index handle holds `index_len` indices (checked by the caller), the words
        // that hold them, which CubeCL binds whole; unit `i < index_len` reads the word(s) of
        // index `i`, dimension `i % k < k`, and writes coordinate `i` of `index_len`.
        unsafe {
            scatter_nd_resolve_indices::launch_unchecked(
                client,
                cubes,
                dim,
                AddressType::from_len(words.max(index_len)),
                BufferArg::from_raw_parts(handle, words),
                BufferArg::from_raw_parts(dims.clone(), k),
                BufferArg::from_raw_parts(coordinates.clone(), index_len),
                index_len,
                k,
                8 * elem.size() as u32,
                signed,
                clamp,
            );
        }
    }
    BoundIndices {
        handle: coordinates,
        elem: ElemType::UInt(UIntKind::U32),
        signed: false,
        wide: false,
        clamp: false,
    }
}

/// Returns an error unless the kernels can read indices of `elem` from `handle`: bound as their
/// own type, or as 32-bit words (8-, 16- and 64-bit integers), from a word-aligned handle.
fn require_index_binding(
    client: &Client,
    elem: ElemType,
    handle: &Handle,
) -> Result<(), KernelError> {
    if can_bind(client, elem) {
        return Ok(());
    }
    if !matches!(elem.size(), 1 | 2 | 8) {
        return Err(KernelError::UnsupportedType {
            elem,
            role: "indices",
        });
    }
    require_word_aligned(handle, "indices")
}

/// The type a reduction `op` computes in for data of `elem`: the unsigned type of the same
/// width for a signed `Add` or `Mul` (the same two's-complement bits, and unsigned arithmetic
/// wraps on every runtime, where signed overflow is undefined behaviour in CUDA's C++), `elem`
/// otherwise.
fn compute_elem(elem: ElemType, op: ReduceOp) -> ElemType {
    match (elem, op) {
        (ElemType::Int(_), ReduceOp::Add | ReduceOp::Mul) => StorageWidth::from_bytes(elem.size())
            .map(StorageWidth::unsigned)
            .unwrap_or(elem),
        _ => elem,
    }
}

/// Whether the runtime has a native atomic `op` on `elem` that keeps the crate's rule. Float
/// `Min`/`Max` atomics follow the hardware's NaN and signed-zero rules, so floats never use them.
fn atomic_supports(client: &Client, elem: ElemType, op: ReduceOp) -> bool {
    let usage = client.properties().atomic_type_usage(Type::atomic(elem));
    match op {
        ReduceOp::Add => usage.contains(AtomicUsage::Add),
        ReduceOp::Min | ReduceOp::Max => {
            !matches!(elem, ElemType::Float(_)) && usage.contains(AtomicUsage::MinMax)
        }
        ReduceOp::Mul => false,
    }
}

/// The unsigned integer type `Min`/`Max` choose on for data of `elem`, where the runtime
/// computes with it (not 16-bit integers on WGSL): see the lists kernel's `combine`.
fn selection_bits(client: &Client, elem: ElemType) -> Option<ElemType> {
    let bits = StorageWidth::from_bytes(elem.size())?.unsigned();
    client
        .properties()
        .type_usage(bits)
        .contains(TypeUsage::Arithmetic)
        .then_some(bits)
}

/// The checked element counts of a layout, and how its indices are read.
struct Sizes {
    /// Index tuple size.
    k: usize,
    /// Number of target slices, below `u32::MAX`.
    targets: usize,
    /// Elements of the scattered-into (or gathered-from) tensor.
    output_len: usize,
    /// Elements of the updates (or of the gathered rows).
    units: usize,
    /// Elements of the indices.
    index_len: usize,
}

/// Checks a layout against the kernels' limits: `k > 0`, an integer index type, fewer than
/// `u32::MAX` target slices and rows, and no size that overflows `usize`.
fn sizes(layout: ScatterNdLayout<'_>, index_elem: ElemType) -> Result<Sizes, KernelError> {
    let ScatterNdLayout { dims, rows, slice } = layout;
    let k = dims.len();
    if !matches!(index_elem, ElemType::Int(_) | ElemType::UInt(_)) {
        return Err(KernelError::NotAnInteger { elem: index_elem });
    }
    if k == 0 {
        return Err(KernelError::ShapeMismatch {
            detail: "the index tuples have no coordinates (k = 0)".into(),
        });
    }
    let targets = dims.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d));
    let targets =
        targets
            .filter(|&t| t < u32::MAX as usize)
            .ok_or_else(|| KernelError::TooLarge {
                detail: format!(
                    "the indexed dimensions {dims:?} give u32::MAX or more target slices; the \
                 kernels number them in 32 bits"
                ),
            })?;
    let too_large = |what: &str| KernelError::TooLarge {
        detail: format!("{what} overflows usize"),
    };
    if rows >= u32::MAX as usize {
        return Err(KernelError::TooLarge {
            detail: format!("{rows} index tuples do not fit the kernels' 32-bit row links"),
        });
    }
    Ok(Sizes {
        k,
        targets,
        output_len: targets
            .checked_mul(slice)
            .ok_or_else(|| too_large("the output size"))?,
        units: rows
            .checked_mul(slice)
            .ok_or_else(|| too_large("the updates size"))?,
        index_len: rows
            .checked_mul(k)
            .ok_or_else(|| too_large("the indices size"))?,
    })
}

/// The index tuples of a scatter or a gather: `layout.rows * k` integers, and what a tuple out
/// of range does.
#[derive(Clone, Debug)]
pub struct ScatterNdIndices {
    /// The buffer, `[rows, k]` row-major.
    pub handle: Handle,
    /// The integer type of the indices; signed ones count from the end when negative.
    pub elem: ElemType,
    /// What a tuple still out of range after that does: skipped or clamped.
    pub out_of_range: OutOfRange,
}

/// The data buffers of [`launch_scatter_nd`]: the tensor scattered into, in place, and the
/// update rows, both of `elem`.
#[derive(Clone, Debug)]
pub struct ScatterNdData {
    /// Holds the input on entry and the result on return: `prod(layout.dims) * layout.slice`
    /// elements.
    pub output: Handle,
    /// `layout.rows * layout.slice` elements.
    pub updates: Handle,
    /// The element type of both.
    pub elem: ElemType,
}

/// Writes to `output` (`layout.rows * layout.slice` elements of `data_elem`) the slices of
/// `input` (`prod(layout.dims) * layout.slice` elements) that the index tuples of `indices`
/// address, row by row: ScatterND's adjoint for the updates. Indices resolve exactly as in
/// [`launch_scatter_nd`]; a skipped tuple's row is zeros. Nothing is read back to the host.
///
/// # Errors
///
/// As [`launch_scatter_nd`]'s, for the same layout. Nothing is launched then.
pub fn launch_gather_nd(
    client: &Client,
    input: Handle,
    output: Handle,
    data_elem: ElemType,
    indices: &ScatterNdIndices,
    layout: ScatterNdLayout<'_>,
) -> Result<(), KernelError> {
    let ScatterNdIndices {
        handle: indices,
        elem: index_elem,
        out_of_range,
    } = indices.clone();
    let Sizes {
        k,
        output_len: input_len,
        units,
        index_len,
        ..
    } = sizes(layout, index_elem)?;
    let binding = data_binding(client, data_elem, ScatterReduction::Assign)?;
    require_index_binding(client, index_elem, &indices)?;
    let bytes = data_elem.size();
    require_len(&input, input_len, bytes, "input")?;
    require_len(&output, units, bytes, "output")?;
    require_len(&indices, index_len, index_elem.size(), "indices")?;
    if !matches!(binding, DataBinding::Typed(_)) {
        require_word_aligned(&input, "input")?;
        require_word_aligned(&output, "output")?;
    }
    if units == 0 {
        return Ok(());
    }
    let dims = dims_u32(client, layout.dims);
    let BoundIndices {
        handle: indices,
        elem: index_elem,
        signed,
        wide,
        clamp,
    } = bound_indices(
        client,
        ScatterNdIndices {
            handle: indices,
            elem: index_elem,
            out_of_range,
        },
        &dims,
        index_len,
        k,
    );
    // Word indices reach twice the element count for 64-bit data.
    let address = AddressType::from_len(input_len.max(units).max(index_len).saturating_mul(2));
    // SAFETY (every launch): the handles hold `input_len`, `units` (elements, or for data held
    // in words the words that hold them, which CubeCL binds whole), `index_len` and `k` elements
    // (checked above); each unit guards itself against `units` (or `words`), and reads the
    // input only at a target slice built from coordinates checked against their dimensions,
    // below `input_len`. An empty input has a dimension of size 0, which no tuple resolves
    // into.
    match binding {
        DataBinding::Packed { bits, .. } => {
            let words = (units * bytes).div_ceil(4);
            let input_words = (input_len * bytes).div_ceil(4);
            let (cubes, dim) = elementwise_geometry(client, words);
            unsafe {
                scatter_nd_gather_packed::launch_unchecked(
                    client,
                    cubes,
                    dim,
                    address,
                    BufferArg::from_raw_parts(output, words),
                    BufferArg::from_raw_parts(indices, index_len),
                    BufferArg::from_raw_parts(input, input_words),
                    BufferArg::from_raw_parts(dims, k),
                    layout.slice,
                    units,
                    words,
                    k,
                    signed,
                    wide,
                    clamp,
                    bits,
                    index_elem,
                );
            }
        }
        DataBinding::Typed(_) | DataBinding::Split { .. } => {
            // Only bits move, so 64-bit elements held as word pairs gather as u32 rows of twice
            // the slice: word `w` of a gathered row is word `w` of its input slice.
            let (data_elem, per_element) = match binding {
                DataBinding::Typed(data_elem) => (data_elem, 1),
                _ => (ElemType::UInt(UIntKind::U32), 2),
            };
            let units = units * per_element;
            let (cubes, dim) = elementwise_geometry(client, units);
            unsafe {
                scatter_nd_gather::launch_unchecked(
                    client,
                    cubes,
                    dim,
                    address,
                    BufferArg::from_raw_parts(output, units),
                    BufferArg::from_raw_parts(indices, index_len),
                    BufferArg::from_raw_parts(input, input_len * per_element),
                    BufferArg::from_raw_parts(dims, k),
                    layout.slice * per_element,
                    units,
                    k,
                    signed,
                    wide,
                    clamp,
                    [data_elem, index_elem],
                );
            }
        }
    }
    Ok(())
}

/// The indexed dimensions as the u32 buffer the kernels read.
fn dims_u32(client: &Client, dims: &[usize]) -> Handle {
    let dims: Vec<u32> = dims.iter().map(|&d| d as u32).collect();
    client.create_from_slice(u32::as_bytes(&dims))
}

/// Applies `data.updates` to `data.output` at the index tuples of `indices`, in place, without
/// reading anything back to the host.
///
/// - `data.output` already holds the input: `prod(layout.dims) * layout.slice` elements of
///   `data.elem`; `data.updates` holds `layout.rows * layout.slice` of them.
/// - `indices` holds `layout.rows * k` integers, where `k = layout.dims.len()`. Negative values
///   of signed indices count from the end of their dimension once; a tuple still out of range
///   is skipped or clamped, as `indices.out_of_range` says. No tuple makes a kernel touch memory
///   outside the three buffers.
/// - `strategy` is usually [`scatter_strategy`]'s choice; `Lists` works for every reduction and
///   dtype, `Atomic` only where the runtime has the atomic operation.
///
/// Returns the strategy used.
///
/// # Errors
///
/// [`KernelError`] when an element type cannot be bound or is not a number (reductions), the
/// index type is not an integer, a handle is too small, `k` is 0, the output has `u32::MAX` or
/// more target slices, or the strategy does not fit the reduction
/// ([`KernelError::InvalidPlan`]). Nothing is launched then.
pub fn launch_scatter_nd(
    client: &Client,
    data: &ScatterNdData,
    indices: &ScatterNdIndices,
    layout: ScatterNdLayout<'_>,
    reduction: ScatterReduction,
    strategy: ScatterStrategy,
) -> Result<ScatterStrategy, KernelError> {
    let ScatterNdData {
        output,
        updates,
        elem: data_elem,
    } = data.clone();
    let ScatterNdIndices {
        handle: indices,
        elem: index_elem,
        out_of_range,
    } = indices.clone();
    let ScatterNdLayout { dims, rows, slice } = layout;
    let Sizes {
        k,
        targets,
        output_len,
        units,
        index_len,
    } = sizes(layout, index_elem)?;

    // Assign only moves bits: bools run as the unsigned type of their width. A signed `Add` or
    // `Mul` computes in the unsigned type of its width (`compute_elem`). Data the runtime cannot
    // bind (or compute with) is held in 32-bit words (`data_in_words`).
    let binding = data_binding(client, data_elem, reduction)?;
    let op = match reduction {
        ScatterReduction::Assign => None,
        ScatterReduction::Reduce(op) => Some(op),
    };
    let valid = match (strategy, binding, op) {
        (ScatterStrategy::Store, DataBinding::Typed(_), None) => true,
        (ScatterStrategy::Atomic, DataBinding::Typed(elem), Some(op)) => {
            atomic_supports(client, elem, op)
        }
        (ScatterStrategy::Lists | ScatterStrategy::SegmentedLists, _, _) => true,
        _ => false,
    };
    if !valid {
        let held = match binding {
            DataBinding::Typed(_) => "",
            DataBinding::Packed { .. } => " (held packed in 32-bit words, which needs the lists)",
            DataBinding::Split { .. } => " (held as 32-bit word pairs, which needs the lists)",
        };
        return Err(KernelError::InvalidPlan {
            detail: format!(
                "strategy {strategy:?} cannot apply {reduction:?} to {data_elem}{held}"
            ),
        });
    }
    require_index_binding(client, index_elem, &indices)?;
    let bytes = data_elem.size();
    require_len(&output, output_len, bytes, "output")?;
    require_len(&updates, units, bytes, "updates")?;
    require_len(&indices, index_len, index_elem.size(), "indices")?;
    if !matches!(binding, DataBinding::Typed(_)) {
        require_word_aligned(&output, "output")?;
        require_word_aligned(&updates, "updates")?;
    }
    if units == 0 || output_len == 0 {
        return Ok(strategy);
    }

    let dims_handle = dims_u32(client, dims);
    let BoundIndices {
        handle: indices,
        elem: index_elem,
        signed,
        wide,
        clamp,
    } = bound_indices(
        client,
        ScatterNdIndices {
            handle: indices,
            elem: index_elem,
            out_of_range,
        },
        &dims_handle,
        index_len,
        k,
    );
    // Word indices reach twice the element count for 64-bit data.
    let address = AddressType::from_len(output_len.max(units).max(index_len).saturating_mul(2));
    // SAFETY: `dims_handle` holds exactly `k` u32 values.
    let dims_arg = || unsafe { BufferArg::from_raw_parts(dims_handle.clone(), k) };
    let (element_cubes, element_dim) = elementwise_geometry(client, units);

    // SAFETY: the handles hold `output_len`, `units` and `index_len` elements (checked above;
    // packed data is bound as the words that hold them, which CubeCL binds whole). Every kernel
    // guards its unit against `units` (or `rows`, `targets`); a target slice is below `targets`
    // because each coordinate was checked against its dimension, so
    // `target * slice + col < output_len`; rows and list links are below `rows`.
    unsafe {
        match (strategy, binding) {
            (ScatterStrategy::Store, DataBinding::Typed(data_elem)) => {
                scatter_nd_assign::launch_unchecked(
                    client,
                    element_cubes,
                    element_dim,
                    address,
                    BufferArg::from_raw_parts(output, output_len),
                    BufferArg::from_raw_parts(indices, index_len),
                    BufferArg::from_raw_parts(updates, units),
                    dims_arg(),
                    slice,
                    units,
                    k,
                    signed,
                    wide,
                    clamp,
                    [data_elem, index_elem],
                )
            }
            (ScatterStrategy::Atomic, DataBinding::Typed(data_elem)) => {
                scatter_nd_atomic::launch_unchecked(
                    client,
                    element_cubes,
                    element_dim,
                    address,
                    BufferArg::from_raw_parts(output, output_len),
                    BufferArg::from_raw_parts(indices, index_len),
                    BufferArg::from_raw_parts(updates, units),
                    dims_arg(),
                    slice,
                    units,
                    k,
                    signed,
                    wide,
                    clamp,
                    op.expect("checked: Atomic comes with a reduction"),
                    [data_elem, index_elem],
                )
            }
            _ => launch_lists(
                client,
                &ListsLaunch {
                    output,
                    updates,
                    indices: BoundIndices {
                        handle: indices,
                        elem: index_elem,
                        signed,
                        wide,
                        clamp,
                    },
                    dims: dims_handle.clone(),
                    k,
                    rows,
                    slice,
                    targets,
                    output_len,
                    units,
                    index_len,
                    address,
                },
                binding,
                op,
                strategy == ScatterStrategy::SegmentedLists,
            ),
        }
    }
    Ok(strategy)
}

/// What the lists strategy launches over: the checked buffers and sizes of a scatter.
struct ListsLaunch {
    output: Handle,
    updates: Handle,
    indices: BoundIndices,
    dims: Handle,
    k: usize,
    rows: usize,
    slice: usize,
    targets: usize,
    output_len: usize,
    units: usize,
    index_len: usize,
    address: AddressType,
}

/// Lists per target for `rows` update rows onto `targets` target slices, in the plain lists
/// strategy (the segmented one keeps one list per target): 1, unless the rows average 16 or
/// more per target; then about the square root of that average (4 to 1024), so that no list is
/// much longer than the number of lists its target has. The average is over every target, so a
/// few hot targets in a large tensor keep one list each: [`ScatterStrategy::SegmentedLists`]
/// bounds those walks too.
pub fn list_buckets(rows: usize, targets: usize) -> usize {
    let per_target = rows / targets.max(1);
    if per_target < 16 {
        1
    } else {
        (per_target as f64).sqrt().ceil().clamp(4.0, 1024.0) as usize
    }
}

/// `segment_bits` that turns segments off (see [`list_segment_bits`]).
const NO_SEGMENTS: u32 = 32;

/// Segments for the lists' reduction of `rows` update rows: about one row in `2^bits` starts
/// one (see `scatter_nd_segment_lists`), with `2^bits` about `sqrt(rows)` (16 to 4096), so that
/// neither a segment nor the chain of segments on one list is much longer than `sqrt(rows)`
/// even when every row has the same target, which [`list_buckets`] cannot tell from the sizes.
/// None ([`NO_SEGMENTS`]) below 256 rows, where no list can be long. On an NVIDIA H100 (WGSL)
/// `Add` with 2^20 rows onto 7 targets of a `[2^22, 64]` tensor took 60 ms through one list per
/// target (150,000 links each), against 1.6 ms through atomics.
fn list_segment_bits(rows: usize) -> u32 {
    if rows < 256 {
        NO_SEGMENTS
    } else {
        (rows.ilog2() / 2).clamp(4, 12)
    }
}

/// The segment buffers of a lists reduction (see `scatter_nd_segment_lists`): a reduced value
/// per update element and a link per row, or one of each, never read, with segments off.
struct Segments {
    /// About one row in `2^bits` starts a segment; [`NO_SEGMENTS`]: none.
    bits: u32,
    values: Handle,
    values_len: usize,
    links: Handle,
    links_len: usize,
}

impl Segments {
    /// Allocates them for `units` update elements (values of `value_bytes`) in `rows` rows
    /// under `bits` ([`list_segment_bits`] or [`NO_SEGMENTS`]).
    fn new(client: &Client, bits: u32, units: usize, rows: usize, value_bytes: usize) -> Self {
        let (values_len, links_len) = if bits == NO_SEGMENTS {
            (1, 1)
        } else {
            (units, rows)
        };
        Self {
            bits,
            values: client.empty(values_len * value_bytes),
            values_len,
            links: client.empty(links_len * size_of::<u32>()),
            links_len,
        }
    }

    /// Whether rows start segments at all.
    fn on(&self) -> bool {
        self.bits != NO_SEGMENTS
    }

    fn values(&self) -> BufferArg {
        // SAFETY: `values` holds `values_len` values, allocated above.
        unsafe { BufferArg::from_raw_parts(self.values.clone(), self.values_len) }
    }

    fn links(&self) -> BufferArg {
        // SAFETY: `links` holds `links_len` u32, allocated above.
        unsafe { BufferArg::from_raw_parts(self.links.clone(), self.links_len) }
    }
}

/// The lists strategy: clear the heads, link the rows, reduce each list (and, with several
/// lists per target, fold their partial results into the output).
///
/// # Safety
///
/// The buffers of `lists` hold what its sizes say (the launcher checked them), data held in
/// words as `binding` says; `op` is `None` only for `Assign`.
unsafe fn launch_lists(
    client: &Client,
    lists: &ListsLaunch,
    binding: DataBinding,
    op: Option<ReduceOp>,
    segmented: bool,
) {
    let ListsLaunch {
        output,
        updates,
        indices,
        dims,
        k,
        rows,
        slice,
        targets,
        output_len,
        units,
        index_len,
        address,
    } = lists;
    // `Assign` only moves bits: 64-bit elements held as word pairs take the typed kernel as u32
    // rows of twice the slice. The units of each target's head row write all its words, so
    // duplicates never tear an element.
    let (binding, per_element) = match (binding, op) {
        (DataBinding::Split { .. }, None) => (DataBinding::Typed(ElemType::UInt(UIntKind::U32)), 2),
        _ => (binding, 1),
    };
    let (rows, targets) = (*rows, *targets);
    let (slice, output_len, units) = (
        *slice * per_element,
        *output_len * per_element,
        *units * per_element,
    );
    // Long lists are cut into segments (the segmented lists: GPUs), or else split into several
    // lists per target, for typed reductions only (words keep one writer per element). One
    // mechanism per strategy: segments bound every walk whatever the duplication.
    let segment_bits = match op {
        Some(_) if segmented => list_segment_bits(rows),
        _ => NO_SEGMENTS,
    };
    let buckets = match (binding, op) {
        (DataBinding::Typed(_), Some(_)) if !segmented => list_buckets(rows, targets),
        _ => 1,
    };
    let lists_len = targets * buckets;
    let heads = client.empty(lists_len * size_of::<u32>());
    let next = client.empty(rows * size_of::<u32>());
    let row_targets = client.empty(rows * size_of::<u32>());
    let (element_cubes, element_dim) = elementwise_geometry(client, units);
    // SAFETY (every launch): the scratch buffers hold `lists_len`, `rows` and `rows` u32; the
    // kernels guard their units against `lists_len`, `rows`, `units` or `output_len`, and index
    // lists below `targets * buckets`, rows below `rows`, elements below `output_len` and
    // partials below `lists_len * slice` (the caller's checks for the rest). With segments, the
    // segment buffers hold `units` values and `rows` links, indexed by update element and row;
    // without, they hold one each and no kernel reads them (no row starts a segment).
    unsafe {
        let (cubes, dim) = elementwise_geometry(client, lists_len);
        scatter_nd_clear::launch_unchecked(
            client,
            cubes,
            dim,
            *address,
            BufferArg::from_raw_parts(heads.clone(), lists_len),
            lists_len,
        );
        let (cubes, dim) = elementwise_geometry(client, rows);
        scatter_nd_link_rows::launch_unchecked(
            client,
            cubes,
            dim,
            *address,
            BufferArg::from_raw_parts(indices.handle.clone(), *index_len),
            BufferArg::from_raw_parts(dims.clone(), *k),
            BufferArg::from_raw_parts(heads.clone(), lists_len),
            BufferArg::from_raw_parts(next.clone(), rows),
            BufferArg::from_raw_parts(row_targets.clone(), rows),
            rows,
            buckets as u32,
            *k,
            indices.signed,
            indices.wide,
            indices.clamp,
            indices.elem,
        );
        let heads_arg = || BufferArg::from_raw_parts(heads.clone(), lists_len);
        let next_arg = || BufferArg::from_raw_parts(next.clone(), rows);
        let targets_arg = || BufferArg::from_raw_parts(row_targets.clone(), rows);
        match binding {
            DataBinding::Typed(data_elem) => {
                let bits = selection_bits(client, data_elem);
                let selection = bits.unwrap_or(ElemType::UInt(UIntKind::U32));
                let partial = buckets > 1;
                let partials_len = if partial { lists_len * slice } else { 1 };
                let partials = client.empty(partials_len * data_elem.size());
                let segments = Segments::new(client, segment_bits, units, rows, data_elem.size());
                if let (true, Some(op)) = (segments.on(), op) {
                    scatter_nd_segment_lists::launch_unchecked(
                        client,
                        element_cubes.clone(),
                        element_dim,
                        *address,
                        segments.values(),
                        segments.links(),
                        BufferArg::from_raw_parts(updates.clone(), units),
                        next_arg(),
                        targets_arg(),
                        slice,
                        units,
                        segments.bits,
                        op,
                        bits.is_some(),
                        [data_elem, selection],
                    );
                }
                scatter_nd_reduce_lists::launch_unchecked(
                    client,
                    element_cubes,
                    element_dim,
                    *address,
                    BufferArg::from_raw_parts(output.clone(), output_len),
                    BufferArg::from_raw_parts(partials.clone(), partials_len),
                    BufferArg::from_raw_parts(updates.clone(), units),
                    heads_arg(),
                    next_arg(),
                    targets_arg(),
                    segments.values(),
                    segments.links(),
                    slice,
                    units,
                    buckets as u32,
                    segments.bits,
                    op,
                    partial,
                    bits.is_some(),
                    [data_elem, selection],
                );
                if let (true, Some(op)) = (partial, op) {
                    let (cubes, dim) = elementwise_geometry(client, output_len);
                    scatter_nd_combine_buckets::launch_unchecked(
                        client,
                        cubes,
                        dim,
                        *address,
                        BufferArg::from_raw_parts(output.clone(), output_len),
                        BufferArg::from_raw_parts(partials, partials_len),
                        heads_arg(),
                        slice,
                        output_len,
                        buckets as u32,
                        op,
                        bits.is_some(),
                        [data_elem, selection],
                    );
                }
            }
            DataBinding::Split { kind } => {
                let op = op.expect("Assign on word pairs took the typed kernel above");
                scatter_nd_reduce_lists_split::launch_unchecked(
                    client,
                    element_cubes,
                    element_dim,
                    *address,
                    BufferArg::from_raw_parts(output.clone(), 2 * output_len),
                    BufferArg::from_raw_parts(updates.clone(), 2 * units),
                    heads_arg(),
                    next_arg(),
                    targets_arg(),
                    slice,
                    units,
                    op,
                    kind,
                );
            }
            DataBinding::Packed { bits, kind } => {
                let bytes = bits as usize / 8;
                let update_words = (units * bytes).div_ceil(4);
                // A segment holds one element's bits per word.
                let segments = Segments::new(client, segment_bits, units, rows, size_of::<u32>());
                if let (true, Some(op)) = (segments.on(), op) {
                    scatter_nd_segment_lists_packed::launch_unchecked(
                        client,
                        element_cubes.clone(),
                        element_dim,
                        *address,
                        segments.values(),
                        segments.links(),
                        BufferArg::from_raw_parts(updates.clone(), update_words),
                        next_arg(),
                        targets_arg(),
                        slice,
                        units,
                        segments.bits,
                        bits,
                        op,
                        kind,
                    );
                }
                scatter_nd_reduce_lists_packed::launch_unchecked(
                    client,
                    element_cubes,
                    element_dim,
                    *address,
                    BufferArg::from_raw_parts(output.clone(), (output_len * bytes).div_ceil(4)),
                    BufferArg::from_raw_parts(updates.clone(), update_words),
                    heads_arg(),
                    next_arg(),
                    targets_arg(),
                    segments.values(),
                    segments.links(),
                    slice,
                    units,
                    segments.bits,
                    bits,
                    op,
                    kind,
                );
            }
        }
    }
}
