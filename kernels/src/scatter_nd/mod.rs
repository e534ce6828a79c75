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
//! - **Lists**: any reduction on any dtype with a 32-bit atomic exchange only. Each update row
//!   pushes itself onto a linked list per target slice; the unit of each list's head walks it
//!   and writes once, so no update is lost and nothing spins. A walk is a chain of dependent
//!   loads, so long lists are cut: where rows average 16 or more per target, each target gets
//!   several lists ([`list_buckets`]) folded by one more launch; on GPUs
//!   ([`ScatterStrategy::SegmentedLists`]) each list is cut into segments of about
//!   `sqrt(rows)` rows, reduced side by side first, which also bounds a few hot targets.
//!
//! - **Deterministic**: a result that depends on the operands alone. `Assign` lists keep only
//!   their latest row in index order (an atomic maximum), whose groups of columns move in
//!   vectors (`latest.rs`); float `Add` sums exactly on a fixed integer grid per format,
//!   walking segments of each target's list side by side, and rounds once
//!   (`scatter_nd_exact_*`, see `exact_add.rs`), or with
//!   [`ScatterStrategy::ListedDeterministic`] (CPU drivers) the same sum along each target's
//!   whole list (`scatter_nd_listed_sum*`, see `listed_sum.rs`); float `Mul` sorts the rows
//!   by target stably and multiplies each target's terms in a fixed tree with a wider
//!   significand, rounded once (`product.rs`), or in index order where that rounding is
//!   uncertain, as `f64` `Add` and `Mul` always do (`ordered.rs`); the reductions that are exact in any order walk the lists (one per
//!   target).
//!
//! Float `Min`/`Max` rank `-0.0` below `+0.0` and never let a NaN update win, choosing on raw
//! bits so that no compiler substitutes a `min` instruction: the result does not depend on the
//! order of the updates.
//!
//! Data of a [type the runtime cannot bind](crate#types-the-runtime-cannot-bind) (or, for a
//! reduction, compute with) is held in 32-bit words ([`data_in_words`]) and always takes the
//! lists, so that exactly one unit writes each element: a packed element's unit XORs its change
//! into the word atomically; a 64-bit element's unit stores both its words. `f16`/`bf16` round
//! to nearest even at each step; `f64` in words takes `Min`/`Max` but not `Add`/`Mul`. Indices
//! of such a type are first resolved into `u32` coordinates by one launch
//! ([`scatter_nd_resolve_indices()`]).

mod columns;
mod exact;
mod exact_add;
mod indices;
mod kernel;
mod latest;
mod launch;
mod listed_sum;
mod ordered;
mod packed;
mod product;
mod product_node;
mod split;

pub use columns::GROUP_COLUMNS;
pub use exact::SumFormat;
pub use exact_add::{
    JUMP_FAN, scatter_nd_exact_finish, scatter_nd_exact_jump, scatter_nd_exact_segments,
};
pub use indices::{IndexRead, scatter_nd_resolve_indices};
pub use kernel::{
    ReduceOp, RowLink, scatter_nd_assign, scatter_nd_atomic, scatter_nd_clear,
    scatter_nd_combine_buckets, scatter_nd_gather, scatter_nd_link_rows, scatter_nd_reduce_lists,
    scatter_nd_row_targets, scatter_nd_segment_lists,
};
pub use latest::scatter_nd_assign_latest;
pub use launch::{
    LISTED_GRID, OutOfRange, ScatterNdData, ScatterNdIndices, ScatterNdLayout, ScatterReduction,
    ScatterStrategy, data_in_words, deterministic_strategy, launch_gather_nd, launch_scatter_nd,
    list_buckets, scatter_strategy,
};
pub use listed_sum::{
    WALK_CUBE, scatter_nd_listed_dispatch, scatter_nd_listed_sum, scatter_nd_listed_sum_heads,
};
pub use ordered::{scatter_nd_ordered_f64, scatter_nd_ordered_product};
pub use packed::{
    WordKind, scatter_nd_gather_packed, scatter_nd_reduce_lists_packed,
    scatter_nd_segment_lists_packed,
};
pub use product::{
    PRODUCT_CHUNK, PRODUCT_FAN, scatter_nd_product_chunks, scatter_nd_product_leaves,
    scatter_nd_product_level, scatter_nd_segment_starts,
};
pub use split::{scatter_nd_reduce_lists_split, scatter_nd_segment_lists_split};
