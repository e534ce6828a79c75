//! ScatterND: `output = input; output[indices[...]] = updates[...]`, with DirectML/ONNX
//! semantics: negative indices count from the end, out-of-range index tuples never touch memory
//! outside the buffers (skipped or clamped), and reductions apply every duplicate update.
//!
//! [`launch_gather_nd`] is the adjoint that ScatterND's backward pass needs: the slices that
//! the index tuples address, resolved exactly as the scatter resolves them (zeros for skipped
//! tuples).
//!
//! Three strategies ([`ScatterStrategy`]), chosen by [`scatter_strategy`] from the reduction,
//! the dtype and what the runtime offers, and passed to [`launch_scatter_nd`]:
//!
//! - **Store** (for `Assign`): one unit per update element stores it. Duplicate tuples race,
//!   and each element ends up equal to one of its candidates, as DirectML specifies.
//! - **Atomic**: one unit per update element applies it with a native atomic: `Add` on
//!   integers (computed in the unsigned type of their width, so it wraps), integer `Min`/`Max`,
//!   and float `Add` where the runtime reports them. Never float `Min`/`Max`, whose native
//!   atomics follow the hardware's NaN and signed-zero rules.
//! - **Lists**: any reduction on any dtype with nothing but a 32-bit atomic exchange. Each update
//!   row pushes itself onto a linked list per target slice; then the unit of each list's head
//!   walks the list and writes the reduced value once. No update is lost and nothing spins.
//!   `Min`/`Max` choose on raw bits, so a compiler cannot substitute a `min` instruction. Where
//!   the rows average 16 or more per target, each target gets about the square root of that
//!   many lists ([`list_buckets`], row `r` on list `r % buckets`), each reduced by its own unit,
//!   and one more launch ([`scatter_nd_combine_buckets`](fn@scatter_nd_combine_buckets)) folds
//!   the partial results into the output: a walk is a chain of dependent loads, which a GPU
//!   runs at memory latency, so no chain should be much longer than the number of chains.
//!   The average cannot see a few hot targets in a large tensor, so on GPUs (runtimes with
//!   plane operations) [`scatter_strategy`] picks **segmented lists** instead, one list per
//!   target cut into segments: about one row in
//!   `sqrt(rows)` (chosen by a hash of the row) starts a segment, one launch
//!   ([`scatter_nd_segment_lists`](fn@scatter_nd_segment_lists)) reduces each segment up to the
//!   next start, and the walk takes a segment in one step, so no chain is much longer than
//!   `2 * sqrt(rows)` links whatever the duplication. CPU drivers walk long lists from their
//!   caches faster than they run the extra launch, and keep the plain lists.
//!
//! **Data in words.** Data that the runtime cannot bind, or for a reduction compute with, is
//! held in 32-bit words ([`data_in_words`]): 8- and 16-bit elements packed two or four to a
//! word (8- and 16-bit integers and `bf16` on WGSL; those and `f16` on OpenGL), 64-bit ones as
//! word pairs (OpenGL). It always takes the lists, `Assign` included, so that exactly one unit
//! writes each target element: a packed element's unit XORs the change of its own field into
//! the word atomically, leaving the other fields as their own units set them; a 64-bit
//! element's unit stores both its words, so duplicates never tear it. Integers wrap to their
//! width; `f16`/`bf16` round to nearest even at each step (`bf16` without `f32` subnormals,
//! which GPUs flush); `f64` takes
//! `Min`/`Max` (on raw bits) but not `Add`/`Mul`, which need the runtime's f64 arithmetic.
//!
//! **Indices in words.** Indices of a type the runtime cannot bind (8- and 16-bit ones on WGSL
//! and OpenGL, 64-bit ones on OpenGL) are first resolved by one launch into `u32` coordinates
//! ([`scatter_nd_resolve_indices()`]), which the kernels then read as unsigned indices.
//!
//! A skipped row is marked `u32::MAX`, which no target can equal: the launcher refuses outputs
//! of `u32::MAX` or more target slices. A list head is read without atomics in the reduce
//! kernel because the link kernel that wrote it has finished: kernels on one stream run in
//! order.

mod indices;
mod kernel;
mod launch;
mod packed;
mod split;

pub use indices::scatter_nd_resolve_indices;
pub use kernel::{
    ReduceOp, scatter_nd_assign, scatter_nd_atomic, scatter_nd_clear, scatter_nd_combine_buckets,
    scatter_nd_gather, scatter_nd_link_rows, scatter_nd_reduce_lists, scatter_nd_segment_lists,
};
pub use launch::{
    OutOfRange, ScatterNdData, ScatterNdIndices, ScatterNdLayout, ScatterReduction,
    ScatterStrategy, data_in_words, launch_gather_nd, launch_scatter_nd, list_buckets,
    scatter_strategy,
};
pub use packed::{
    WordKind, scatter_nd_gather_packed, scatter_nd_reduce_lists_packed,
    scatter_nd_segment_lists_packed,
};
pub use split::scatter_nd_reduce_lists_split;
