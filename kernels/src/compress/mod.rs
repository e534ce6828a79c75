//! Compress: the slices of a tensor along one axis whose condition is true, in ascending order,
//! then zero padding; ONNX `Compress`, and with a flattened mask `x[mask]`.
//!
//! The condition goes through the NonZeroCoordinates compaction (its count, scan and write, see
//! [`crate::nonzero`]). Selecting elements, its write stores the selected values themselves
//! instead of their coordinates; selecting slices, it lists them, and one more launch moves
//! each output slice from where the list says, with zeros past the count. Nothing
//! reads back to the host, so the output's shape is the input's with the axis cut to the
//! condition's length, known before anything runs.

mod gather;
mod launch;

pub use gather::{SliceWalk, compress_gather_packed, compress_gather_slices};
pub use launch::{CompressInput, CompressOutput, CompressShape, launch_compress};
