//! `NonZeroExt`: DirectML's `NONZERO_COORDINATES` on Float, Int and Bool tensors.

use burn::backend::Dispatch;
use burn::tensor::{Bool, DType, Device, Float, Int, IntDType, Tensor};

use super::support::{check_raw_bits_input, leading_rows, read_count, read_count_async};
use crate::{DmlOps, DmlOpsError};

const OPERATOR: &str = "NonZeroCoordinates";

/// The coordinates of the non-zero elements of a tensor, in DirectML's fixed-shape layout.
///
/// Both tensors stay on the device and nothing has been read back: `count` and the first
/// `count` rows of `coordinates` are valid once the device has run the work, like any other
/// tensor. Use [`into_exact`](Self::into_exact) for a tensor with exactly `count` rows.
#[derive(Clone, Debug)]
pub struct NonZeroCoordinates {
    /// Shape `[1]`: the number of non-zero elements.
    pub count: Tensor<1, Int>,
    /// Shape `[numel, N]`: row `i < count` holds the coordinates of the `i`-th non-zero element
    /// in ascending row-major order; the other rows are padding (unspecified, or the `fill` of
    /// [`NonZeroOptions`]).
    ///
    /// Unspecified padding is any bits, so never index with the whole tensor: Burn's
    /// `gather_nd` does not check its indices, and garbage coordinates read outside the
    /// tensor (a device fault on CUDA, wrong values on wgpu). For a gather, ask for
    /// `fill: Some(0)` (the padding rows then read element 0), or use
    /// [`CompressExt::compress`](crate::CompressExt::compress), which gathers the
    /// selected elements itself.
    pub coordinates: Tensor<2, Int>,
}

impl NonZeroCoordinates {
    /// The number of non-zero elements. Reads `count` back to the host: one synchronisation.
    pub fn count_sync(&self) -> usize {
        read_count(self.count.clone())
    }

    /// The coordinates without padding: shape `[count, N]`. Reads `count` back to the host: one
    /// synchronisation.
    pub fn into_exact(self) -> Tensor<2, Int> {
        let rows = self.count_sync();
        leading_rows(self.coordinates, rows)
    }

    /// [`count_sync`](Self::count_sync) without blocking, for browsers (where a blocking read
    /// cannot run): the same value once the device has run.
    pub async fn count_async(&self) -> usize {
        read_count_async(self.count.clone()).await
    }

    /// [`into_exact`](Self::into_exact) without blocking, for browsers: the same tensor.
    pub async fn into_exact_async(self) -> Tensor<2, Int> {
        let rows = self.count_async().await;
        leading_rows(self.coordinates, rows)
    }
}

/// Options of [`NonZeroExt::nonzero_coordinates_with`]. The default is DirectML's behaviour:
/// `N = rank`, padding unspecified, the device's default Int dtype.
#[derive(Clone, Debug, Default)]
pub struct NonZeroOptions {
    /// Coordinate width `N`; `None` means the rank. Allowed: `effective_rank <= N <= rank`,
    /// where the effective rank is the rank after dropping leading dimensions of size 1. With
    /// `N < rank` each row holds the coordinates of the last `N` dimensions.
    pub width: Option<usize>,
    /// Value written into every padding row; `None` leaves them unspecified (fastest).
    pub fill: Option<i64>,
    /// Dtype of `count` and `coordinates`; `None` means the device's default Int dtype. Inputs
    /// with more elements than this dtype can count need `IntDType::I64`.
    pub out_dtype: Option<IntDType>,
}

/// NonZeroCoordinates: the coordinates of every non-zero element, computed on the device with
/// fixed output shapes, so it runs without host synchronisation and composes with lazy Fusion
/// graphs.
///
/// Float elements are non-zero when `v != 0.0` (`-0.0` is zero; NaN and infinities are not),
/// Int elements when `v != 0`, Bool elements when true.
///
/// ```
/// use burn::tensor::{Device, Tensor};
/// use burn_dml_ops::prelude::*;
///
/// let device = Device::flex();
/// let x = Tensor::<2>::from_data([[0.0, 0.0, 0.0, 0.0, 0.0, 1.0], [2.0, 0.0, 3.0, 0.0, 0.0, 0.0]], &device);
/// let nz = x.nonzero_coordinates();
/// assert_eq!(nz.coordinates.dims(), [12, 2]); // [numel, rank], padded
/// let exact = nz.into_exact(); // reads the count back once
/// assert_eq!(exact.to_data().convert::<i64>().try_to_vec::<i64>().unwrap(), vec![0, 5, 1, 0, 1, 2]);
/// ```
pub trait NonZeroExt {
    /// Coordinates with `N = rank`, unspecified padding, the device's default Int dtype.
    ///
    /// # Panics
    ///
    /// When [`nonzero_coordinates_with`](Self::nonzero_coordinates_with) with the default options
    /// would return an error (a quantized input, an input too large for the default Int dtype);
    /// the message is that error's.
    fn nonzero_coordinates(self) -> NonZeroCoordinates;

    /// Coordinates with every option.
    ///
    /// # Errors
    ///
    /// [`DmlOpsError::InvalidArgument`] for a width outside `effective_rank..=rank`, a `fill`
    /// the output dtype cannot hold, an input with more elements than the output dtype can
    /// count, or one of more than `u32::MAX` elements (not supported yet);
    /// [`DmlOpsError::UnsupportedDType`] for a quantized input (dequantize it first). Every other
    /// input dtype runs, into every Int output dtype, on every runtime.
    ///
    /// # Panics
    ///
    /// When the memory for the output cannot be allocated, as Burn's own operations do: no
    /// check can know beforehand what the host or device will grant. On Flex the output is
    /// reserved first, so the panic names its size instead of aborting the process.
    fn nonzero_coordinates_with(
        self,
        options: NonZeroOptions,
    ) -> Result<NonZeroCoordinates, DmlOpsError>;
}

macro_rules! impl_nonzero {
    ($kind:ty, $method:ident) => {
        impl<const D: usize> NonZeroExt for Tensor<D, $kind> {
            fn nonzero_coordinates(self) -> NonZeroCoordinates {
                self.nonzero_coordinates_with(NonZeroOptions::default())
                    .unwrap_or_else(|err| panic!("{err}"))
            }

            fn nonzero_coordinates_with(
                self,
                options: NonZeroOptions,
            ) -> Result<NonZeroCoordinates, DmlOpsError> {
                let (width, out_dtype) =
                    check(&self.device(), self.dtype(), &self.dims(), &options)?;
                let (count, coordinates) = <Dispatch as DmlOps>::$method(
                    self.into_dispatch(),
                    width,
                    options.fill,
                    out_dtype,
                );
                Ok(NonZeroCoordinates {
                    count: Tensor::from_dispatch(count),
                    coordinates: Tensor::from_dispatch(coordinates),
                })
            }
        }
    };
}

impl_nonzero!(Float, float_nonzero_coordinates);
impl_nonzero!(Int, int_nonzero_coordinates);
impl_nonzero!(Bool, bool_nonzero_coordinates);

/// The largest value `dtype` holds, as i128 so every Int dtype fits.
pub(super) fn max_value(dtype: IntDType) -> i128 {
    match dtype {
        IntDType::I8 => i8::MAX.into(),
        IntDType::I16 => i16::MAX.into(),
        IntDType::I32 => i32::MAX.into(),
        IntDType::I64 => i64::MAX.into(),
        IntDType::U8 => u8::MAX.into(),
        IntDType::U16 => u16::MAX.into(),
        IntDType::U32 => u32::MAX.into(),
        IntDType::U64 => u64::MAX.into(),
    }
}

/// The smallest value `dtype` holds.
fn min_value(dtype: IntDType) -> i128 {
    match dtype {
        IntDType::I8 => i8::MIN.into(),
        IntDType::I16 => i16::MIN.into(),
        IntDType::I32 => i32::MIN.into(),
        IntDType::I64 => i64::MIN.into(),
        _ => 0,
    }
}

/// Checks the options against the input; returns the width and output dtype to use.
fn check(
    device: &Device,
    dtype: DType,
    shape: &[usize],
    options: &NonZeroOptions,
) -> Result<(usize, IntDType), DmlOpsError> {
    let invalid = |detail: String| DmlOpsError::InvalidArgument {
        operator: OPERATOR,
        detail,
    };
    let rank = shape.len();
    let effective_rank = rank - shape.iter().take_while(|&&d| d == 1).count();
    let width = options.width.unwrap_or(rank);
    if width < effective_rank || width > rank {
        return Err(invalid(format!(
            "width {width} is outside the allowed range {effective_rank}..={rank} for an input \
             of shape {shape:?} (at least its effective rank, the rank after dropping leading \
             1s, and at most its rank)"
        )));
    }
    let out_dtype = options
        .out_dtype
        .unwrap_or_else(|| device.settings().int_dtype);
    // Checked: dimensions whose product overflows are an error, not a wrapped count (a
    // dimension of size 0 makes any shape empty).
    let numel = if shape.contains(&0) {
        0
    } else {
        shape
            .iter()
            .try_fold(1usize, |acc, &d| acc.checked_mul(d))
            .ok_or_else(|| {
                invalid(format!(
                    "an input of shape {shape:?} has more elements than usize counts"
                ))
            })?
    };
    if numel as i128 > max_value(out_dtype) {
        return Err(invalid(format!(
            "an input of shape {shape:?} has {numel} elements, more than the output dtype \
             {out_dtype:?} can count; pass `out_dtype: Some(IntDType::I64)` in NonZeroOptions"
        )));
    }
    if u32::try_from(numel).is_err() {
        return Err(invalid(format!(
            "an input of shape {shape:?} has {numel} elements; the compaction's tile offsets \
             are 32-bit, so inputs of more than {} elements are not supported yet: split the \
             input along its first dimension",
            u32::MAX
        )));
    }
    if let Some(fill) = options.fill
        && !(min_value(out_dtype)..=max_value(out_dtype)).contains(&i128::from(fill))
    {
        return Err(invalid(format!(
            "fill value {fill} does not fit the output dtype {out_dtype:?}"
        )));
    }
    check_raw_bits_input(OPERATOR, device, dtype)?;
    Ok((width, out_dtype))
}

#[cfg(all(test, feature = "flex"))]
mod tests {
    use super::*;

    /// The size checks need only a shape, so they are tested here on shapes too large to
    /// allocate.
    fn check_shape(shape: &[usize], out_dtype: IntDType) -> Result<(usize, IntDType), DmlOpsError> {
        let options = NonZeroOptions {
            out_dtype: Some(out_dtype),
            ..Default::default()
        };
        check(&Device::flex(), DType::F32, shape, &options)
    }

    #[test]
    fn overflowing_shapes_are_errors_and_empty_ones_are_not() {
        let err = check_shape(&[1 << 40, 1 << 40], IntDType::I64).unwrap_err();
        assert!(
            err.to_string().contains("more elements than usize"),
            "{err}"
        );
        assert_eq!(
            check_shape(&[1 << 40, 1 << 40, 0], IntDType::I32).unwrap(),
            (3, IntDType::I32)
        );
    }

    #[test]
    fn counts_past_the_output_dtype_ask_for_i64() {
        let err = check_shape(&[65_536, 32_768], IntDType::I32).unwrap_err();
        assert!(err.to_string().contains("IntDType::I64"), "{err}");
        assert_eq!(
            check_shape(&[65_536, 32_767], IntDType::I32).unwrap(),
            (2, IntDType::I32)
        );
    }

    #[test]
    fn inputs_past_u32_elements_are_refused_with_a_way_out() {
        let err = check_shape(&[65_536, 65_537], IntDType::I64).unwrap_err();
        let message = err.to_string();
        assert!(message.contains("4295032832 elements"), "{message}");
        assert!(message.contains("split the input"), "{message}");
        assert_eq!(
            check_shape(&[65_535, 65_537], IntDType::I64).unwrap(),
            (2, IntDType::I64)
        );
    }
}
