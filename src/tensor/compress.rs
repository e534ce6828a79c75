//! `CompressExt`: boolean masking (`x[mask]`) and ONNX `Compress` along an axis, on the device
//! with output shapes known before anything runs.

use burn::backend::Dispatch;
use burn::tensor::kind::{Basic, Kind};
use burn::tensor::{Bool, DType, Device, Float, Int, Tensor};

use super::nonzero::max_value;
use super::support::{check_raw_bits_input, read_count, read_count_async};
use crate::{DmlOps, DmlOpsError};

const OPERATOR: &str = "Compress";

/// Selected values, padded to a shape known without running anything.
///
/// Both tensors stay on the device and nothing has been read back. Padding is zero (false for
/// Bool), so a sum or a max of non-negative values over `values` equals one over the selection;
/// [`into_exact`](Self::into_exact) cuts the padding off.
#[derive(Clone, Debug)]
pub struct Compressed<const D: usize, K: Basic = Float> {
    /// Shape `[1]`: how many elements ([`compress`](CompressExt::compress)) or slices
    /// ([`compress_axis`](CompressExt::compress_axis)) were selected, in the device's default
    /// Int dtype.
    pub count: Tensor<1, Int>,
    /// The selection first, in ascending order, then zero padding (false for Bool).
    pub values: Tensor<D, K>,
    /// The compressed axis of `values`.
    axis: usize,
}

impl<const D: usize, K: Basic> Compressed<D, K> {
    /// Exactly `count` along the compressed axis: reads `count` back once (one synchronisation).
    /// The slices kept are copied as raw bits, so every dtype works on every runtime.
    pub fn into_exact(self) -> Tensor<D, K> {
        let count = read_count(self.count.clone());
        self.leading(count)
    }

    /// The number selected. Reads `count` back to the host: one synchronisation.
    pub fn count_sync(&self) -> usize {
        read_count(self.count.clone())
    }

    /// [`count_sync`](Self::count_sync) without blocking, for browsers (where a blocking read
    /// cannot run): the same value once the device has run.
    pub async fn count_async(&self) -> usize {
        read_count_async(self.count.clone()).await
    }

    /// [`into_exact`](Self::into_exact) without blocking, for browsers: the same tensor.
    pub async fn into_exact_async(self) -> Tensor<D, K> {
        let count = self.count_async().await;
        self.leading(count)
    }

    /// The first `count` slices along the compressed axis, copied as raw bits.
    fn leading(self, count: usize) -> Tensor<D, K> {
        if count == 0 {
            let mut dims = self.values.dims();
            dims[self.axis] = 0;
            let device = self.values.device();
            return Tensor::empty(dims, (&device, self.values.dtype()));
        }
        let values = self.values.into_dispatch();
        let kept = match K::KIND {
            Kind::Float => <Dispatch as DmlOps>::float_leading_slices(values, self.axis, count),
            Kind::Int => <Dispatch as DmlOps>::int_leading_slices(values, self.axis, count),
            Kind::Bool => <Dispatch as DmlOps>::bool_leading_slices(values, self.axis, count),
        };
        Tensor::from_dispatch(kept)
    }
}

/// Boolean masking on the device: torch's `x[mask]` ([`compress`](Self::compress)) and ONNX
/// `Compress` with an axis ([`compress_axis`](Self::compress_axis)), on Float, Int and Bool
/// tensors.
///
/// The outputs have fixed shapes (the selection, then zero padding, and a count), so nothing
/// waits for the device and the call composes with lazy Fusion graphs. On Autodiff devices a
/// Float compress records its backward pass: each selected element's gradient goes back to its
/// position, every other position gets zero. ONNX's flattened form (no axis) is
/// `x.reshape([numel]).compress_axis(0, condition)`.
///
/// ```
/// use burn::tensor::{Device, Tensor};
/// use burn_dml_ops::prelude::*;
///
/// let device = Device::flex();
/// let scores = Tensor::<2>::from_data([[0.9, 0.1], [0.4, 0.7]], &device);
/// let kept = scores.clone().compress(scores.clone().greater_elem(0.5));
/// assert_eq!(kept.values.dims(), [4]); // numel, padded with zeros
/// assert_eq!(kept.into_exact().to_data().try_to_vec::<f32>().unwrap(), vec![0.9, 0.7]);
///
/// let boxes = Tensor::<2>::from_data([[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]], &device);
/// let keep = Tensor::<1, burn::tensor::Bool>::from_data([true, false, true], &device);
/// let rows = boxes.compress_axis(0, keep).into_exact();
/// assert_eq!(rows.to_data().try_to_vec::<f32>().unwrap(), vec![0.0, 1.0, 4.0, 5.0]);
/// ```
pub trait CompressExt<const D: usize, K: Basic> {
    /// torch's `x[mask]` / `masked_select`: the elements where `mask` (the input's shape) is
    /// true, in row-major order; `values` has shape `[numel]`.
    ///
    /// # Panics
    ///
    /// Where [`try_compress`](Self::try_compress) returns an error, with its message.
    fn compress(self, mask: Tensor<D, Bool>) -> Compressed<1, K>;

    /// [`compress`](Self::compress), with invalid arguments as an error.
    ///
    /// # Errors
    ///
    /// [`DmlOpsError::InvalidArgument`] for a mask whose shape differs from the input's,
    /// tensors on different devices, or more elements than the count's dtype (the device's
    /// default Int dtype) or the compaction's 32-bit offsets count;
    /// [`DmlOpsError::UnsupportedDType`] for a quantized input.
    fn try_compress(self, mask: Tensor<D, Bool>) -> Result<Compressed<1, K>, DmlOpsError>;

    /// ONNX `Compress` with an axis (negative counts from the end): the slices along `axis`
    /// whose condition is true. `values` keeps the input's shape except that `axis` has the
    /// condition's length; a condition shorter than the axis discards the slices past its end.
    ///
    /// # Panics
    ///
    /// Where [`try_compress_axis`](Self::try_compress_axis) returns an error, with its message.
    fn compress_axis(self, axis: isize, condition: Tensor<1, Bool>) -> Compressed<D, K>;

    /// [`compress_axis`](Self::compress_axis), with invalid arguments as an error.
    ///
    /// # Errors
    ///
    /// [`DmlOpsError::InvalidArgument`] for an axis out of range, a condition longer than the
    /// axis, tensors on different devices, or a condition longer than the count's dtype or the
    /// compaction's 32-bit offsets count; [`DmlOpsError::UnsupportedDType`] for a quantized
    /// input.
    fn try_compress_axis(
        self,
        axis: isize,
        condition: Tensor<1, Bool>,
    ) -> Result<Compressed<D, K>, DmlOpsError>;
}

fn invalid(detail: String) -> DmlOpsError {
    DmlOpsError::InvalidArgument {
        operator: OPERATOR,
        detail,
    }
}

/// Checks a mask against its input (shape and device); the rest is [`check_axis`]'s.
fn check_mask(
    shape: &[usize],
    device: &Device,
    mask_shape: &[usize],
    mask_device: &Device,
) -> Result<(), DmlOpsError> {
    if mask_shape != shape {
        return Err(invalid(format!(
            "the mask has shape {mask_shape:?} but the input {shape:?}; they must be equal \
             (broadcast the mask first, e.g. with `expand`)"
        )));
    }
    if mask_device != device {
        return Err(invalid(format!(
            "the tensors are on different devices: input on {device:?}, mask on \
             {mask_device:?}; move them to one device first (`Tensor::to_device`)"
        )));
    }
    Ok(())
}

/// Checks a compress along `axis` of an input of `shape` and `dtype` on `device` by a condition
/// of `slices` elements on `condition_device`; returns the axis counted from the front.
fn check_axis(
    (shape, dtype, device): (&[usize], DType, &Device),
    axis: isize,
    slices: usize,
    condition_device: &Device,
) -> Result<usize, DmlOpsError> {
    let rank = shape.len();
    let resolved = if axis < 0 {
        rank.checked_sub(axis.unsigned_abs())
    } else {
        Some(axis as usize).filter(|&a| a < rank)
    };
    let Some(resolved) = resolved else {
        return Err(invalid(format!(
            "axis {axis} is out of range for an input of shape {shape:?} (rank {rank}: allowed \
             -{rank}..={})",
            rank - 1
        )));
    };
    if slices > shape[resolved] {
        return Err(invalid(format!(
            "the condition has {slices} elements but axis {axis} of the input (shape \
             {shape:?}) has {}: a condition may be shorter than the axis, never longer",
            shape[resolved]
        )));
    }
    if condition_device != device {
        return Err(invalid(format!(
            "the tensors are on different devices: input on {device:?}, condition on \
             {condition_device:?}; move them to one device first (`Tensor::to_device`)"
        )));
    }
    let count_dtype = device.settings().int_dtype;
    if slices as i128 > max_value(count_dtype) || u32::try_from(slices).is_err() {
        return Err(invalid(format!(
            "the condition has {slices} elements, more than the count's dtype \
             ({count_dtype:?}, the device's default Int dtype) or the compaction's 32-bit \
             offsets count; split the input"
        )));
    }
    check_raw_bits_input(OPERATOR, device, dtype)?;
    Ok(resolved)
}

/// The backend's compress of `input` (of its own kind) by `condition`, along `axis` or by a mask
/// of the input's shape (`None`; the backends read both flat, so no view is reshaped here: Burn
/// copies a view to reshape it, with a kernel of the element's type, which not every runtime
/// has). Checked by the caller.
fn run_compress<const D: usize, const DC: usize, const DO: usize, K: Basic>(
    input: Tensor<D, K>,
    condition: Tensor<DC, Bool>,
    axis: Option<usize>,
) -> Compressed<DO, K> {
    let count_dtype = input.device().settings().int_dtype;
    let (input, condition) = (input.into_dispatch(), condition.into_dispatch());
    let (count, values) = match K::KIND {
        Kind::Float => <Dispatch as DmlOps>::float_compress(input, condition, axis, count_dtype),
        Kind::Int => <Dispatch as DmlOps>::int_compress(input, condition, axis, count_dtype),
        Kind::Bool => <Dispatch as DmlOps>::bool_compress(input, condition, axis, count_dtype),
    };
    Compressed {
        count: Tensor::from_dispatch(count),
        values: Tensor::from_dispatch(values),
        axis: axis.unwrap_or(0),
    }
}

impl<const D: usize, K: Basic> CompressExt<D, K> for Tensor<D, K> {
    fn compress(self, mask: Tensor<D, Bool>) -> Compressed<1, K> {
        self.try_compress(mask)
            .unwrap_or_else(|err| panic!("{err}"))
    }

    fn try_compress(self, mask: Tensor<D, Bool>) -> Result<Compressed<1, K>, DmlOpsError> {
        let shape = self.dims();
        let device = self.device();
        check_mask(&shape, &device, &mask.dims(), &mask.device())?;
        // The checks of the flattened input and mask.
        let numel = shape.iter().product::<usize>();
        check_axis((&[numel], self.dtype(), &device), 0, numel, &device)?;
        Ok(run_compress(self, mask, None))
    }

    fn compress_axis(self, axis: isize, condition: Tensor<1, Bool>) -> Compressed<D, K> {
        self.try_compress_axis(axis, condition)
            .unwrap_or_else(|err| panic!("{err}"))
    }

    fn try_compress_axis(
        self,
        axis: isize,
        condition: Tensor<1, Bool>,
    ) -> Result<Compressed<D, K>, DmlOpsError> {
        let [slices] = condition.dims();
        let axis = check_axis(
            (&self.dims(), self.dtype(), &self.device()),
            axis,
            slices,
            &condition.device(),
        )?;
        Ok(run_compress(self, condition, Some(axis)))
    }
}
