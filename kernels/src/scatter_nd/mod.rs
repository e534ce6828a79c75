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
//!   `Min`/`Max` choose on raw bits, so a compiler cannot substitute a `min` instruction.
//!
//! A skipped row is marked `u32::MAX`, which no target can equal: the launcher refuses outputs
//! of `u32::MAX` or more target slices. A list head is read without atomics in the reduce
//! kernel because the link kernel that wrote it has finished: kernels on one stream run in
//! order.

mod kernel;
mod launch;

pub use kernel::{
    ReduceOp, scatter_nd_assign, scatter_nd_atomic, scatter_nd_clear, scatter_nd_gather,
    scatter_nd_link_rows, scatter_nd_reduce_lists,
};
pub use launch::{
    OutOfRange, ScatterNdData, ScatterNdIndices, ScatterNdLayout, ScatterReduction,
    ScatterStrategy, launch_gather_nd, launch_scatter_nd, scatter_strategy,
};
