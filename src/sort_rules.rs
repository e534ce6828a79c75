//! The sort's vocabulary, shared by every layer: which end of the order comes first. A leaf: it
//! imports nothing from the rest of the crate.

/// DirectML's `DML_AXIS_DIRECTION`: `Ascending` is `INCREASING` (the `k` smallest, smallest
/// first), `Descending` is `DECREASING` (the `k` largest, largest first). Ties keep increasing
/// index in both.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Order {
    /// Smallest first.
    #[default]
    Ascending,
    /// Largest first.
    Descending,
}
