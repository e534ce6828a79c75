//! ScatterND's arguments at the backend level: the reduction and the out-of-range policy that
//! [`DmlOps`](super::DmlOps) takes. The tensor layer maps its user options onto them once.

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

/// What a backend does with an index tuple that is still outside its dimension after negative
/// indices were wrapped: [`OutOfBounds`](crate::OutOfBounds) without `Error`, which the tensor
/// extension trait checks on the host before any backend runs. In both modes the kernels guard
/// their own reads and writes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum OutOfRange {
    /// The whole update row is dropped.
    #[default]
    Skip,
    /// Each coordinate is clamped to `[0, dim - 1]`; rows that target a dimension of size 0 are
    /// dropped.
    Clamp,
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
