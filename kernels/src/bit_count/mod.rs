//! BitCount: the number of bits set to 1 in each element's stored encoding.
//!
//! The kernel reads the input buffer as unsigned integers of the element's width, so a float
//! tensor is counted on its raw IEEE bits and a signed one on its two's-complement bits, exactly
//! as DirectML's `DML_ELEMENT_WISE_BIT_COUNT_OPERATOR_DESC` specifies.

mod kernel;
mod launch;

pub use kernel::bit_count_kernel;
pub use launch::launch_bit_count;
