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

pub mod bit_count;
#[doc(hidden)]
pub mod capture;
pub mod compress;
pub mod copy;
mod launch;
pub mod nms;
pub mod nonzero;
pub mod scatter_nd;
pub mod sort;
mod strided;
pub mod tuples;

pub use launch::{InputView, KernelError, StorageWidth};
