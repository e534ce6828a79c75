//! Host-side launch over raw CubeCL handles, and which strategy runs where.
//!
//! | strategy | chosen for | launches |
//! |---|---|---|
//! | `Store` | `Assign` on data the runtime binds | 1 |
//! | `Atomic` | a reduction with the runtime's native atomic (never float `Min`/`Max`) | 1 |
//! | `Sorted` | every other reduction; all data held in words | `2 + S + L` (`Assign`: `2 + S`) |
//! | `Deterministic`, `Assign` | typed data: each target's latest row | 3 (no sort) |
//! | `Deterministic`, float `Add` | `f16`, `bf16`, `f32`: the exact sum | `2 + S + L` |
//! | `Deterministic`, float `Mul` | `f16`, `bf16`, `f32`: the tree, then the walk | `4 + S + L` |
//! | `Deterministic`, `f64` `Add`/`Mul` | the index-order walk | `2 + S` |
//! | `Deterministic`, the rest | integers, `Min`/`Max`: exact in any order | as `Sorted` |
//!
//! `S` is the sort of `rows` keys of the bits the target count needs (one launch where they fit
//! a cube, else `1 + 2 * ceil(bits / 8)`); `L` the levels of the tree of nodes, one per width
//! `32 * 8^l` of at most `rows`. Float `Mul` clears the count of its list of uncertain
//! elements; the walk in index order is one launch, and on CPU drivers one per `2^15` sorted
//! rows plus the clearing of its own list. Index tuples of a type the runtime cannot bind add one launch. The
//! launch-budget test counts the bench's cases.

mod checks;
mod general;
mod indices;
mod ordered;
mod plan;
mod sorted;
mod strategy;

use crate::capture::launch_unchecked;
use cubecl::ir::{ElemType, UIntKind};
use cubecl::prelude::*;
use cubecl::server::Handle;

pub use self::indices::{OutOfRange, ScatterNdIndices};
pub use self::strategy::{
    ScatterReduction, ScatterStrategy, data_in_words, deterministic_strategy, scatter_strategy,
};

use self::checks::{Sizes, sizes};
use self::general::launch_general;
use self::indices::{BoundIndices, bound_indices, check_indices, dims_arg};
use self::ordered::ordered_step;
use self::plan::{ScatterLaunch, exact_sum_format};
use self::strategy::{DataBinding, atomic_supports, data_binding, deterministic_binding};
use crate::KernelError;
use crate::launch::{elementwise_geometry, require_len, require_word_aligned};
use crate::scatter_nd::{
    ReduceOp, scatter_nd_assign, scatter_nd_atomic, scatter_nd_gather, scatter_nd_gather_packed,
};

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
    let Sizes {
        output_len: input_len,
        units,
        index_len,
        ..
    } = sizes(layout, indices.elem)?;
    let binding = data_binding(client, data_elem, ScatterReduction::Assign)?;
    check_indices(client, indices, index_len)?;
    let bytes = data_elem.size();
    require_len(&input, input_len, bytes, "input")?;
    require_len(&output, units, bytes, "output")?;
    if !matches!(binding, DataBinding::Typed(_)) {
        require_word_aligned(&input, "input")?;
        require_word_aligned(&output, "output")?;
    }
    if units == 0 {
        return Ok(());
    }
    let BoundIndices {
        handle: indices,
        elem: index_elem,
        read,
    } = bound_indices(client, indices.clone(), layout.dims, index_len);
    // Word indices reach twice the element count for 64-bit data.
    let address = AddressType::from_len(input_len.max(units).max(index_len).saturating_mul(2));
    // SAFETY (every launch): the handles hold `input_len`, `units` (elements, or for data held
    // in words the words that hold them, which CubeCL binds whole), `index_len` and `k` elements
    // (checked above); each unit guards itself against `units` (or `words`), and reads the
    // input only at a target slice built from coordinates checked against their dimensions,
    // below `input_len`. An empty input has a dimension of size 0, which no tuple resolves
    // into.
    match binding {
        DataBinding::Words { bits, .. } if bits < 64 => {
            let words = (units * bytes).div_ceil(4);
            let input_words = (input_len * bytes).div_ceil(4);
            let (cubes, dim) = elementwise_geometry(client, words);
            unsafe {
                launch_unchecked!(scatter_nd_gather_packed(
                    client,
                    cubes,
                    dim,
                    address,
                    BufferArg::from_raw_parts(output, words),
                    BufferArg::from_raw_parts(indices, index_len),
                    BufferArg::from_raw_parts(input, input_words),
                    dims_arg(layout.dims),
                    layout.slice,
                    units,
                    words,
                    read,
                    bits,
                    index_elem,
                ));
            }
        }
        _ => {
            // Only bits move, so 64-bit elements held as word pairs gather as u32 rows of twice
            // the slice: word `w` of a gathered row is word `w` of its input slice.
            let (data_elem, per_element) = match binding {
                DataBinding::Typed(data_elem) => (data_elem, 1),
                _ => (ElemType::UInt(UIntKind::U32), 2),
            };
            let units = units * per_element;
            let (cubes, dim) = elementwise_geometry(client, units);
            unsafe {
                launch_unchecked!(scatter_nd_gather(
                    client,
                    cubes,
                    dim,
                    address,
                    BufferArg::from_raw_parts(output, units),
                    BufferArg::from_raw_parts(indices, index_len),
                    BufferArg::from_raw_parts(input, input_len * per_element),
                    dims_arg(layout.dims),
                    layout.slice * per_element,
                    units,
                    read,
                    [data_elem, index_elem],
                ));
            }
        }
    }
    Ok(())
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
/// - `strategy` is usually [`scatter_strategy`]'s choice; `Sorted` works for every reduction and
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
    let ScatterNdLayout { dims, rows, slice } = layout;
    let Sizes {
        targets,
        output_len,
        units,
        index_len,
        ..
    } = sizes(layout, indices.elem)?;

    // Assign only moves bits: bools run as the unsigned type of their width. A signed `Add` or
    // `Mul` computes in the unsigned type of its width (`compute_elem`). Data the runtime cannot
    // bind (or compute with) is held in 32-bit words (`data_in_words`), and so are 16-bit
    // floats in a deterministic `Add` or `Mul` (`deterministic_binding`).
    let op = match reduction {
        ScatterReduction::Assign => None,
        ScatterReduction::Reduce(op) => Some(op),
    };
    let binding = data_binding(client, data_elem, reduction)?;
    let binding = if strategy.is_deterministic() {
        deterministic_binding(binding, data_elem, op)
    } else {
        binding
    };
    let valid = match (strategy, binding, op) {
        (ScatterStrategy::Store, DataBinding::Typed(_), None) => true,
        (ScatterStrategy::Atomic, DataBinding::Typed(elem), Some(op)) => {
            atomic_supports(client, elem, op)
        }
        // Float `Add` sums exactly (16- and 32-bit floats); float `Mul` takes its tree, `f64`
        // `Add` and `Mul` index order.
        (strategy, _, Some(ReduceOp::Add | ReduceOp::Mul))
            if strategy.is_deterministic() && matches!(data_elem, ElemType::Float(_)) =>
        {
            exact_sum_format(binding, op).is_some() || ordered_step(binding, op).is_some()
        }
        (strategy, _, _) => strategy.takes_any_reduction(),
    };
    if !valid {
        let held = match binding {
            DataBinding::Typed(_) => "",
            DataBinding::Words { bits: 64, .. } => {
                " (held as 32-bit word pairs, which needs the rows sorted by target)"
            }
            DataBinding::Words { .. } => {
                " (held packed in 32-bit words, which needs the rows sorted by target)"
            }
        };
        return Err(KernelError::InvalidPlan {
            detail: format!(
                "strategy {strategy:?} cannot apply {reduction:?} to {data_elem}{held}"
            ),
        });
    }
    check_indices(client, indices, index_len)?;
    let bytes = data_elem.size();
    require_len(&output, output_len, bytes, "output")?;
    require_len(&updates, units, bytes, "updates")?;
    if !matches!(binding, DataBinding::Typed(_)) {
        require_word_aligned(&output, "output")?;
        require_word_aligned(&updates, "updates")?;
    }
    if units == 0 || output_len == 0 {
        return Ok(strategy);
    }

    let bound = bound_indices(client, indices.clone(), dims, index_len);
    let (index_elem, read) = (bound.elem, bound.read);
    // Word indices reach twice the element count for 64-bit data.
    let address = AddressType::from_len(output_len.max(units).max(index_len).saturating_mul(2));
    let (element_cubes, element_dim) = elementwise_geometry(client, units);

    // SAFETY: the handles hold `output_len`, `units` and `index_len` elements (checked above;
    // packed data is bound as the words that hold them, which CubeCL binds whole). Every kernel
    // guards its unit against `units` (or `rows`, `targets`); a target slice is below `targets`
    // because each coordinate was checked against its dimension, so
    // `target * slice + col < output_len`; rows and list links are below `rows`.
    unsafe {
        match (strategy, binding) {
            (ScatterStrategy::Store, DataBinding::Typed(data_elem)) => {
                launch_unchecked!(scatter_nd_assign(
                    client,
                    element_cubes,
                    element_dim,
                    address,
                    BufferArg::from_raw_parts(output, output_len),
                    BufferArg::from_raw_parts(bound.handle, index_len),
                    BufferArg::from_raw_parts(updates, units),
                    dims_arg(dims),
                    slice,
                    units,
                    read,
                    [data_elem, index_elem],
                ))
            }
            (ScatterStrategy::Atomic, DataBinding::Typed(data_elem)) => {
                launch_unchecked!(scatter_nd_atomic(
                    client,
                    element_cubes,
                    element_dim,
                    address,
                    BufferArg::from_raw_parts(output, output_len),
                    BufferArg::from_raw_parts(bound.handle, index_len),
                    BufferArg::from_raw_parts(updates, units),
                    dims_arg(dims),
                    slice,
                    units,
                    read,
                    op.expect("checked: Atomic comes with a reduction"),
                    [data_elem, index_elem],
                ))
            }
            _ => launch_general(
                client,
                &ScatterLaunch {
                    output,
                    updates,
                    indices: bound,
                    dims,
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
                strategy,
            ),
        }
    }
    Ok(strategy)
}
