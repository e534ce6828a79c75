//! CubeCL kernels behind [`burn-dml-ops`](https://crates.io/crates/burn-dml-ops).
//!
//! This crate depends on CubeCL only: the `#[cube]` kernels and the host-side functions that
//! launch them over raw CubeCL buffer handles. CubeCL users who do not use Burn can call the
//! launchers directly; the Burn integration lives in the `burn-dml-ops` crate.
//!
//! | module | operator |
//! |---|---|
//! | [`bit_count`] | DirectML `ELEMENT_WISE_BIT_COUNT`: population count of each element's raw bits |
//! | [`nonzero`] | DirectML `NONZERO_COORDINATES`: coordinates of the non-zero elements, on the device |

pub mod bit_count;
mod launch;
pub mod nonzero;

pub use launch::{KernelError, StorageWidth};
