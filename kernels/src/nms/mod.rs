//! ONNX NonMaxSuppression, batched over batches and classes, on the device, with a fixed-size
//! result and a device count like NonZeroCoordinates.
//!
//! 1. The crate's stable sort ([`sort`](crate::sort)) orders each (batch, class)'s scores,
//!    largest first, ties by lower box index, one sequence per pair; the sweep reads the sorted
//!    positions and nothing else of the sort's output.
//! 2. [`nms_sweep`](fn@nms_sweep): one cube per (batch, class) walks its sorted boxes in blocks of
//!    up to 256 candidates (fewer where the device's units per cube or shared memory are
//!    fewer). Each candidate is tested against the boxes kept so far, then against the block's
//!    earlier candidates through a bitmask of 32-box words that one unit resolves in order, as
//!    torchvision's `gather_keep_from_mask` resolves its mask. A segment stops at
//!    `max_per_class`, at the first score below the threshold, or at the end. The host splits
//!    the blocks into launches of bounded work (a launch's tests against kept boxes grow with
//!    the blocks before it), carrying each segment's kept count and stop in device memory, so
//!    no launch runs long whatever `N`; every barrier is in uniform control flow, as WGSL's
//!    uniformity analysis requires.
//! 3. The compaction's one-cube scan turns the kept counts into each pair's first row, and
//!    [`nms_write_rows`](fn@nms_write_rows) writes the `(batch, class, box)` rows in the output's
//!    type, then rows of -1.
//!
//! **Memory.** No `N x N` mask exists: a block's mask lives in shared memory (256 x 8 words),
//! and the only scratch in device memory grows linearly with `B * C * N` (the sort's keys and
//! positions, and a kept list of at most `min(N, max_per_class)` boxes of 5 floats per pair).
//! Work is `O(N * kept)` IoU tests per pair, at most the `N^2 / 2` of a full mask.
//!
//! **Arithmetic.** The geometry is computed as ONNX Runtime computes it, in `f32`, and the
//! products and the union's sum pass through an integer XOR with a zero launch argument first,
//! so no compiler fuses them into a multiply-add (which rounds once where ONNX Runtime rounds
//! twice) or reassociates them. No decision is left to a float comparison that a fast-math
//! compiler (Metal's default) may rewrite: positivity is read from the bits, and
//! `fl(intersection / union) > threshold` is decided in exact integer arithmetic
//! ([`quotient_exceeds`](fn@quotient_exceeds)), so the result does not depend on a runtime's
//! division, which WGSL, Vulkan and DX12 allow to be 2.5 ulp off.

mod boxes;
mod launch;
mod plan;
mod quotient;
mod rows;
mod sweep;

pub use launch::{
    NmsBoxFormat, NmsInput, NmsLimits, NmsOutput, NmsShape, launch_non_max_suppression,
};
pub use quotient::{QuotientThreshold, quotient_exceeds};
pub use rows::nms_write_rows;
pub use sweep::nms_sweep;
