//! `BitCountExt`: DirectML's `ELEMENT_WISE_BIT_COUNT` on Int and Float tensors.

use burn::backend::Dispatch;
use burn::tensor::{Float, Int, IntDType, Tensor};

use super::support::check_encoding;
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
/// assert_eq!(x.clone().bit_count().to_data().try_to_vec::<i32>().unwrap(), vec![0, 1, 32, 8]);
///
/// // A narrow output saves bandwidth.
/// let narrow = x.bit_count_as(IntDType::U8).unwrap();
/// assert_eq!(narrow.to_data().try_to_vec::<u8>().unwrap(), vec![0, 1, 32, 8]);
/// ```
pub trait BitCountExt<const D: usize> {
    /// Bit counts in the device's default Int dtype, same shape as `self`.
    ///
    /// Every Int and Float dtype a device holds is counted, on every runtime: where a runtime
    /// cannot bind 8- or 16-bit elements (WGSL) or 64-bit ones (OpenGL), the kernel reads and
    /// writes 32-bit words (two f16 or four u8 per word).
    ///
    /// # Panics
    ///
    /// For a quantized tensor; the message is the [`DmlOpsError`] that
    /// [`bit_count_as`](Self::bit_count_as) would return.
    fn bit_count(self) -> Tensor<D, Int>;

    /// Bit counts in `out_dtype` (for example `IntDType::U8` to save bandwidth), same shape as
    /// `self`. Any Int dtype works as the output on every device; an output of a dtype that a
    /// runtime cannot compute with (U8 on WGSL) can be read back or cast, as any such tensor.
    ///
    /// # Errors
    ///
    /// [`DmlOpsError::UnsupportedDType`] for a quantized tensor, whose elements share a scale and
    /// have no encoding of their own to count.
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
                check_encoding(OPERATOR, &self.device(), self.dtype())?;
                let output = <Dispatch as DmlOps>::$method(self.into_dispatch(), out_dtype);
                Ok(Tensor::from_dispatch(output))
            }
        }
    };
}

impl_bit_count!(Int, int_bit_count);
impl_bit_count!(Float, float_bit_count);
