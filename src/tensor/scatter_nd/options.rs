//! The options of ScatterND.

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
    /// `output[i] = update` where `update < output[i]`, else unchanged: a NaN update never
    /// replaces a value, a NaN value stays, and `-0.0` and `+0.0` never replace each other. The
    /// same bits on every runtime (the kernels choose on raw bits, never with a hardware `min`).
    Min,
    /// `output[i] = update` where `update > output[i]`, else unchanged; NaN and signed zeros as
    /// for [`Min`](Self::Min).
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
    /// [`try_scatter_nd`](super::ScatterNdExt::try_scatter_nd) returns an error that names the
    /// first bad index tuple and the shape (ONNX Runtime). This reads the indices back to the
    /// host: one synchronisation. At the backend level ([`DmlOps`](crate::DmlOps)) it behaves
    /// like `Skip`.
    Error,
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
