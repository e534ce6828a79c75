//! `BitCountExt`: DirectML's `ELEMENT_WISE_BIT_COUNT` on Int and Float tensors.

use burn::backend::Dispatch;
use burn::tensor::{Float, Int, IntDType, Tensor};

use super::support::check_raw_bits_io;
use crate::{DmlOps, DmlOpsError};

const OPERATOR: &str = "BitCount";

/// Population count: the number of bits set to 1 in each element's stored encoding.
///
/// Int tensors are counted on the two's-complement bits of their stored width (`i8 -1 -> 8`,
/// `i32 -1 -> 32`, `u16 0xFFFF -> 16`); Float tensors on their raw IEEE bits (`f32 1.0 -> 7`,
/// `f32 -0.0 -> 1`, `f16 1.0 -> 4`). This is DirectML's, TensorFlow's and JAX-lax's rule, not
/// NumPy's `bitwise_count`, which counts the absolute value.
///
/// ```
/// use burn::tensor::{Device, Int, IntDType, Tensor};
/// use burn_dml_ops::prelude::*;
///
/// let device = Device::flex();
/// let x = Tensor::<1, Int>::from_data([0, 1, -1, 255], &device);
/// assert_eq!(x.clone().bit_count().to_data().to_vec::<i32>().unwrap(), vec![0, 1, 32, 8]);
///
/// // A narrow output saves bandwidth.
/// let narrow = x.bit_count_as(IntDType::U8).unwrap();
/// assert_eq!(narrow.to_data().to_vec::<u8>().unwrap(), vec![0, 1, 32, 8]);
/// ```
pub trait BitCountExt<const D: usize> {
    /// Bit counts in the device's default Int dtype, same shape as `self`.
    ///
    /// # Panics
    ///
    /// When the device cannot hold the input's dtype or its default Int dtype; the message is
    /// the [`DmlOpsError`] that [`bit_count_as`](Self::bit_count_as) would return.
    fn bit_count(self) -> Tensor<D, Int>;

    /// Bit counts in `out_dtype` (for example `IntDType::U8` to save bandwidth), same shape as
    /// `self`.
    ///
    /// # Errors
    ///
    /// [`DmlOpsError::UnsupportedDType`] when the device cannot hold the input's dtype, the
    /// unsigned integer type of the same width (which the kernel reads it as), or `out_dtype`;
    /// and for quantized tensors, which have no per-element encoding to count.
    fn bit_count_as(self, out_dtype: IntDType) -> Result<Tensor<D, Int>, DmlOpsError>;
}

macro_rules! impl_bit_count {
    ($kind:ty, $method:ident) => {
        impl<const D: usize> BitCountExt<D> for Tensor<D, $kind> {
            fn bit_count(self) -> Tensor<D, Int> {
                let out_dtype = self.device().settings().int_dtype;
                self.bit_count_as(out_dtype)
                    .unwrap_or_else(|err| panic!("{err}"))
            }

            fn bit_count_as(self, out_dtype: IntDType) -> Result<Tensor<D, Int>, DmlOpsError> {
                check_raw_bits_io(OPERATOR, &self.device(), self.dtype(), out_dtype)?;
                let output = <Dispatch as DmlOps>::$method(self.into_dispatch(), out_dtype);
                Ok(Tensor::from_dispatch(output))
            }
        }
    };
}

impl_bit_count!(Int, int_bit_count);
impl_bit_count!(Float, float_bit_count);
