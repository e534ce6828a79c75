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
    /// The result is a function of the inputs alone, the same bits on every run and every
    /// device (Flex's): with `Assign`, among duplicates the update latest in index order wins
    /// (ONNX's reference loop); float `Add` (f16, bf16, f32) sums each element's value and
    /// updates exactly, whatever their magnitudes, and rounds once, so it is never less
    /// accurate than adding them in index order. Float `Mul` (f16, bf16, f32) is the exact
    /// product of each element's value and updates rounded once, or where a product lies too
    /// near a rounding boundary for the fixed tree that computes it, the product in index
    /// order, each step rounded once: never less accurate than index order. `f64` `Add` and
    /// `Mul` combine in index order (NaN results are the type's canonical quiet NaN). Integer reductions and `Min`/`Max` are exact in any order already. Default `false`:
    /// faster, but float sums and products and the `Assign` winner depend on the order the
    /// hardware applies duplicates.
    pub deterministic: bool,
}
