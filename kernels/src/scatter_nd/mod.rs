//! ScatterND: `output = input; output[indices[...]] = updates[...]`, with DirectML/ONNX
//! semantics: negative indices count from the end, out-of-range index tuples never touch memory
//! outside the buffers (skipped or clamped), and reductions apply every duplicate update.
//! [`launch_gather_nd`] is its adjoint for the backward pass: the slices the tuples address.
//!
//! The strategies ([`ScatterStrategy`]), chosen by [`scatter_strategy`] and passed to
//! [`launch_scatter_nd`]:
//!
//! - **Store** (`Assign`): one unit per update element stores it; with duplicate tuples each
//!   element ends up equal to one of its candidates, as DirectML specifies.
//! - **Atomic**: a native atomic per update element, where the runtime has one for the
//!   operation. Never for float `Min`/`Max`, whose atomics follow the hardware's NaN and
//!   signed-zero rules.
//! - **Sorted**: any reduction on any dtype, with 32-bit atomics only (the sort's histograms).
//!   The update rows are sorted by target with the crate's radix sort (stably, over the bits
//!   the target count needs); a fixed tree of aligned nodes over the sorted positions (chunks of
//!   32, then 8 nodes a node) reduces every node that holds one target's rows, a launch a
//!   level; then one unit per target element folds its run in index order, taking the largest
//!   nodes inside it, and writes once (`sorted.rs`). No unit reads more than about 64 values
//!   plus 16 a level, however many rows share a target.
//! - **Deterministic**: a result that depends on the operands alone. `Assign` keeps each
//!   target's latest row in index order (an atomic maximum), whose groups of columns move in
//!   vectors (`latest.rs`); float `Add` sums exactly on a fixed integer grid per format along
//!   the sorted rows' passes and rounds once (`sorted_sum.rs`); float `Mul` multiplies on the
//!   same passes with a wider significand and rounds once (`sorted_product.rs`), or in index
//!   order where that rounding is uncertain, as `f64` `Add` and `Mul` always do (`ordered.rs`);
//!   the reductions that are exact in any order take the sorted rows' passes.
//!
//! Float `Min`/`Max` rank `-0.0` below `+0.0` and never let a NaN update win, choosing on raw
//! bits so that no compiler substitutes a `min` instruction: the result does not depend on the
//! order of the updates.
//!
//! Data of a [type the runtime cannot bind](crate#types-the-runtime-cannot-bind) (or, for a
//! reduction, compute with) is held in 32-bit words ([`data_in_words`]) and always takes the
//! sorted rows, so that exactly one unit writes each element: a packed element's unit XORs its
//! change into the word atomically; a 64-bit element's unit stores both its words. `f16`/`bf16`
//! round to nearest even at each step; `f64` in words takes `Min`/`Max` but not `Add`/`Mul`.
//! Indices of such a type are first resolved into `u32` coordinates by one launch
//! ([`scatter_nd_resolve_indices()`]).

mod exact;
mod fields;
mod indices;
mod kernel;
mod latest;
mod launch;
mod ordered;
mod packed;
mod product_node;
mod sorted;
mod sorted_product;
mod sorted_sum;
mod split;
mod words;

pub use exact::SumFormat;
pub use indices::{IndexRead, scatter_nd_resolve_indices};
pub use kernel::{
    ReduceOp, scatter_nd_assign, scatter_nd_atomic, scatter_nd_clear, scatter_nd_gather,
    scatter_nd_link_rows, scatter_nd_row_targets,
};
pub use latest::{GROUP_COLUMNS, scatter_nd_assign_latest};
pub use launch::{
    OutOfRange, ScatterNdData, ScatterNdIndices, ScatterNdLayout, ScatterReduction,
    ScatterStrategy, data_in_words, deterministic_strategy, launch_gather_nd, launch_scatter_nd,
    scatter_strategy,
};
pub use ordered::{WALK_CUBE, scatter_nd_ordered_f64, scatter_nd_ordered_product};
pub use packed::{WordKind, scatter_nd_gather_packed};
pub use sorted::{
    CHUNK_ROWS, NODE_FAN, node_count, scatter_nd_sorted_join, scatter_nd_sorted_nodes,
};
pub use sorted_product::{scatter_nd_sorted_product_join, scatter_nd_sorted_product_nodes};
pub use sorted_sum::{scatter_nd_sorted_sum_join, scatter_nd_sorted_sum_nodes};
pub use words::{scatter_nd_sorted_join_words, scatter_nd_sorted_nodes_words};
