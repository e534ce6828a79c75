//! BitCount: the number of bits set to 1 in each element's stored encoding.
//!
//! The kernels read the input buffer as unsigned integers, so a float tensor is counted on its raw
//! IEEE bits and a signed one on its two's-complement bits, exactly as DirectML's
//! `DML_ELEMENT_WISE_BIT_COUNT_OPERATOR_DESC` specifies. Two layouts ([`BitCountPath`]):
//! [`bit_count_kernel()`] binds the elements' own widths and reads a contiguous input with vectors;
//! [`bit_count_words_kernel()`] reads and writes 32-bit words, which every runtime binds, so types
//! a runtime [cannot bind](crate#types-the-runtime-cannot-bind) are counted too, and reads any
//! strided view where it lies. Each runs in one launch, tail included.

mod kernel;
mod launch;

pub use kernel::{WordsLayout, bit_count_kernel, bit_count_words_kernel};
pub use launch::{BitCountPath, launch_bit_count};
