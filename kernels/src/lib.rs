//! CubeCL kernels behind [`burn-dml-ops`](https://crates.io/crates/burn-dml-ops).
//!
//! This crate depends on CubeCL only: the `#[cube]` kernels and the host-side functions that
//! launch them over raw CubeCL buffer handles. CubeCL users who do not use Burn can call the
//! launchers directly; the Burn integration lives in the `burn-dml-ops` crate.
//!
//! | module | operator |
//! |---|---|
//! | [`compress`] | ONNX `Compress` and `x[mask]`: the selected slices or elements, then zeros, on the device |
//! | [`copy`] | plain copies of bits: a buffer's (ScatterND's out-of-place path, the benchmarks' floor), a strided view's into a contiguous buffer through 32-bit words |
//! | [`bit_count`] | DirectML `ELEMENT_WISE_BIT_COUNT`: population count of each element's raw bits |
//! | [`nms`] | ONNX `NonMaxSuppression`: batched over batches and classes, a fixed-size result and a device count |
//! | [`nonzero`] | DirectML `NONZERO_COORDINATES`: coordinates of the non-zero elements, on the device |
//! | [`sample`] | token sampling: temperature, top-k, top-p and min-p per row, the same token on every runtime |
//! | [`scatter_nd`] | DirectML `SCATTER_ND` plus ONNX reductions: safe indices, no lost updates |
//! | [`sort`] | DirectML `TOP_K1` and a stable sort: a batched radix sort on the device |
//! | [`tuples`] | index tuples from an index tensor and positions: ONNX's ScatterElements and batched GatherND |
//!
//! # Types the runtime cannot bind
//!
//! WGSL declares no 8- or 16-bit integers (and f16 only where the adapter has it), and wgpu's
//! OpenGL backend no 64-bit types either. Kernels that meet such a type read and write it as
//! 32-bit words: two 16-bit or four 8-bit elements to a word, lowest bits first, and a 64-bit
//! element as two words, low word first. Each launcher says which of its buffers this applies to
//! and then needs them to start on a 4-byte boundary.
//!
//! # Float rules decided on integer bits
//!
//! Metal compiles with fast math by default (the compiler may assume no NaN or infinity and
//! reassociate), and WGSL, Vulkan and DX12 allow a division 2.5 ulp off. So every rule that
//! depends on a NaN, a signed zero, an infinity or a threshold is decided on the element's bits
//! or by exact integer arithmetic:
//!
//! - NonZeroCoordinates' "non-zero": any bit set (for floats any but the sign bit); Compress's
//!   condition: any bit set; BitCount counts bits.
//! - ScatterND's float `Min`/`Max`: the order and the NaN test read from the bits, the choice
//!   applied as bits (typed and packed kernels alike). Deterministic `Add` of 16- and 32-bit
//!   floats sums exactly in integers and rounds once; deterministic `Mul` of them multiplies in
//!   a fixed order (a tree, or each target's rows in index order where the tree cannot round)
//!   in integer arithmetic, rounding each step once to nearest even.
//! - The sort's keys: an order-preserving unsigned key made from each element's bits.
//! - NMS: the score threshold compares keys; IoU's `fl(i / u) > t` is decided in integers
//!   ([`nms::quotient_exceeds`](fn@nms::quotient_exceeds)); positivity of areas and overlaps
//!   is read from the bits.
//!
//! What still computes in the runtime's float arithmetic, and what that leaves to the runtime:
//!
//! - ScatterND's non-deterministic float `Add`/`Mul` (their order is unspecified anyway), the
//!   packed `f16`/`bf16` ones included (each step in `f32`, rounded to 16 bits on integers).
//! - Deterministic `f64` `Add`/`Mul`: each target's rows in index order, each step one IEEE
//!   `f64` operation (`scatter_nd_ordered_f64`); only a device that flushes `f64`
//!   subnormals would give other bits.
//! - NMS's box geometry: each edge, extent and product and the union's sum pass through an
//!   integer XOR with a zero launch argument, so no compiler fuses, folds or reassociates them:
//!   each is one correctly rounded IEEE operation, as ONNX Runtime computes it. A device that
//!   flushes `f32` subnormals to zero (DX12, some Vulkan and Metal drivers) turns a subnormal
//!   extent, overlap or area into zero, which then suppresses nothing.

pub mod bit_count;
#[doc(hidden)]
pub mod capture;
pub mod compress;
pub mod copy;
mod fence;
mod launch;
pub mod nms;
pub mod nonzero;
pub mod sample;
pub mod scatter_nd;
pub mod sort;
mod strided;
pub mod tuples;

pub use launch::{InputView, KernelError, StorageWidth};
