//! The options of ScatterND.

pub use crate::scatter_nd_rules::{OutOfBounds, Reduction};

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
