//! ScatterND's vocabulary, shared by every layer: how updates combine, what happens to an
//! out-of-range index tuple, and how an index resolves against its dimension. A leaf: it
//! imports nothing from the rest of the crate but the host allocation helper.

use burn::tensor::{DType, TensorData};

use crate::host::reserve;

/// How an update combines with the element it targets (DirectML's `Assign` plus ONNX's
/// `reduction` attribute).
///
/// With a reduction, every update is applied, duplicates included: integer results are exact,
/// float results equal the reduction in some order of the updates. With `Assign` and duplicate
/// index tuples, each element ends up equal to one of its candidates (which one is unspecified,
/// as in DirectML).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Reduction {
    /// `output[i] = update` (DirectML's ScatterND, ONNX `reduction="none"`).
    #[default]
    Assign,
    /// `output[i] += update` (wrapping on integers).
    Add,
    /// `output[i] *= update` (wrapping on integers).
    Mul,
    /// `output[i] = update` where `update < output[i]`, else unchanged, with `-0.0` ranked
    /// below `+0.0`: a NaN update never replaces a value and a NaN value stays. So the result
    /// never depends on the order duplicates arrive in, and is the same bits on every runtime.
    Min,
    /// `output[i] = update` where `update > output[i]`, else unchanged, with `+0.0` ranked
    /// above `-0.0`; NaN as for [`Min`](Self::Min).
    Max,
}

/// What happens to an index tuple that is still outside its dimension after negative indices
/// were wrapped (`-1` is the last element). In every mode the kernels guard their own reads and
/// writes: no index can make them touch memory outside the tensors.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum OutOfBounds {
    /// The whole update row is dropped (JAX's default, StableHLO).
    #[default]
    Skip,
    /// Each coordinate is clamped to `[0, dim - 1]` (WebNN). A dimension of size 0 has no valid
    /// index, so rows that target one are dropped.
    Clamp,
    /// [`try_scatter_nd`](crate::ScatterNdExt::try_scatter_nd) returns an error that names the
    /// first bad index tuple and the shape (ONNX Runtime). This reads the indices back to the
    /// host: one synchronisation.
    /// Backends, which run after that check, treat it as `Skip`.
    Error,
}

/// The values of an Int tensor's data, exactly (signed and unsigned 64-bit values both fit).
/// Read element by element: the only copy of the indices made is the returned one.
pub(crate) fn index_values(indices: &TensorData) -> Vec<i128> {
    let mut values = reserve("ScatterND", "the index values", indices.num_elements());
    match indices.dtype() {
        DType::U8 | DType::U16 | DType::U32 | DType::U64 => {
            values.extend(indices.iter::<u64>().map(i128::from))
        }
        _ => values.extend(indices.iter::<i64>().map(i128::from)),
    }
    values
}

/// The coordinate `value` addresses in a dimension of size `dim`: a negative value counts from
/// the end once; a value still out of range is `None`, or with `clamp` the nearest valid
/// coordinate (there is none when `dim == 0`).
pub(crate) fn resolve_index(value: i128, dim: usize, clamp: bool) -> Option<usize> {
    let dim = dim as i128;
    let wrapped = if value < 0 { value + dim } else { value };
    if (0..dim).contains(&wrapped) {
        Some(wrapped as usize)
    } else if clamp && dim > 0 {
        Some(wrapped.clamp(0, dim - 1) as usize)
    } else {
        None
    }
}

/// The dimensions that index tuples of size `k` address in an input of `shape`, and the
/// elements of the slice each addresses: the first `k` of its last `input_dims` dimensions and
/// the product of the rest (the leading dimensions `input_dims` leaves out have size 1, so the
/// layout is the same without them).
pub(crate) fn indexed_dims(shape: &[usize], input_dims: usize, k: usize) -> (&[usize], usize) {
    let (dims, slice) = shape[shape.len() - input_dims..].split_at(k);
    (dims, slice.iter().product())
}

/// The target slice of each index tuple in `indices` (`[rows, k]` row-major) over the indexed
/// dimensions `dims`, or `None` for a skipped tuple.
pub(crate) fn target_slices(indices: &[i128], dims: &[usize], clamp: bool) -> Vec<Option<usize>> {
    let tuples = indices.chunks_exact(dims.len());
    let mut targets = reserve("ScatterND", "the target of each index tuple", tuples.len());
    targets.extend(tuples.map(|tuple| {
        tuple.iter().zip(dims).try_fold(0usize, |target, (&v, &d)| {
            resolve_index(v, d, clamp).map(|c| target * d + c)
        })
    }));
    targets
}

/// The message for a tracked operand of a reduction without a gradient: the Autodiff backend
/// panics with it, and the tensor extension trait returns it as an error first.
pub(crate) fn not_differentiable(reduction: Reduction) -> String {
    format!(
        "the {reduction:?} reduction has no gradient here (only Assign and Add do), but an \
         operand is tracked by autodiff; detach the input and updates (`.detach()`) or use \
         Reduction::Add or Reduction::Assign"
    )
}
