//! The options of ScatterND.

use crate::ops::OutOfRange;
pub use crate::ops::Reduction;

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
    /// [`try_scatter_nd`](super::ScatterNdExt::try_scatter_nd) returns an error that names the
    /// first bad index tuple and the shape (ONNX Runtime). This reads the indices back to the
    /// host: one synchronisation.
    Error,
}

impl OutOfBounds {
    /// The backend's policy once the tensor layer has run its checks: `Error` was checked on
    /// the host before the call, so the backend skips (no tuple is out of range then).
    pub(crate) fn backend(self) -> OutOfRange {
        match self {
            Self::Clamp => OutOfRange::Clamp,
            Self::Skip | Self::Error => OutOfRange::Skip,
        }
    }
}

/// Options of [`ScatterNdExt::try_scatter_nd`](super::ScatterNdExt::try_scatter_nd). The default
/// is DirectML's operator: `Assign`, out-of-range updates skipped, every dimension real.
#[derive(Clone, Debug, Default)]
pub struct ScatterNdOptions {
    /// How updates combine with the elements they target.
    pub reduction: Reduction,
    /// What happens to out-of-range index tuples.
    pub out_of_bounds: OutOfBounds,
    /// DirectML's `InputDimensionCount`: how many trailing dimensions of the input are real
    /// (`None` = all). The leading ones must have size 1 and are ignored, so with an input of
    /// shape `[1, 1, 4, 6]` and `Some(2)` the index tuples address the dimensions of size 4 and 6.
    pub input_dims: Option<usize>,
    /// DirectML's `IndicesDimensionCount`: how many trailing dimensions of the indices are real
    /// (`None` = all). The leading ones must have size 1 and are ignored.
    pub indices_dims: Option<usize>,
}
