//! `SortExt`: DirectML's TopK and a stable sort along any axis, on the device, with a total
//! order of floats and ties by increasing index.

use burn::backend::Dispatch;
use burn::tensor::kind::{Basic, Kind};
use burn::tensor::{DType, Float, Int, IntDType, Tensor};

use super::nonzero::max_value;
use super::support::check_encoding;
use crate::sort_rules::Order;
use crate::{DmlOps, DmlOpsError};

const OPERATOR: &str = "TopK";

/// The result of [`SortExt`]: values and their positions along the axis, both of the input's
/// shape with `k` along the axis.
#[derive(Clone, Debug)]
pub struct Sorted<const D: usize, K: Basic = Float> {
    /// The selected elements in order, bit for bit as stored (a `-0.0` stays `-0.0`, a NaN
    /// keeps its payload).
    pub values: Tensor<D, K>,
    /// Each value's position along the axis, in
    /// [`SortOptions::indices_dtype`](SortOptions::indices_dtype).
    pub indices: Tensor<D, Int>,
}

/// Options of [`try_sort_stable`](SortExt::try_sort_stable) and
/// [`try_top_k`](SortExt::try_top_k).
#[derive(Clone, Debug, Default)]
pub struct SortOptions {
    /// Which end of the order comes first.
    pub order: Order,
    /// The dtype of the indices; `None` = the device's default Int dtype.
    pub indices_dtype: Option<IntDType>,
}

/// DirectML's TopK (`DML_TOP_K1_OPERATOR_DESC`, ONNX `TopK`) and a stable sort, on Float and
/// Int tensors, on the device: nothing is read back to the host and nothing compiles per `k`
/// or per length.
///
/// Floats follow a total order: `-0.0` equals `+0.0`, every NaN equals every other NaN and ranks
/// above `+inf` (so [`Order::Descending`] puts NaNs first, [`Order::Ascending`] last). Integers
/// compare numerically in their own signedness. Elements that compare equal keep increasing
/// index in both orders, so the result is fully determined. On Autodiff devices the Float
/// values are differentiable: each value's gradient goes back to the position its index names.
///
/// ```
/// use burn::tensor::{Device, Tensor};
/// use burn_dml_ops::prelude::*;
///
/// let device = Device::flex();
/// let x = Tensor::<2>::from_data([[0.0, 1.0, 10.0, 11.0], [3.0, 2.0, 9.0, 8.0]], &device);
/// let top = x.clone().top_k(2, -1, Order::Descending);
/// assert_eq!(top.values.to_data().try_to_vec::<f32>().unwrap(), vec![11.0, 10.0, 9.0, 8.0]);
/// assert_eq!(top.indices.to_data().try_to_vec::<i32>().unwrap(), vec![3, 2, 2, 3]);
///
/// let tied = Tensor::<1>::from_data([2.0, 1.0, 2.0, f32::NAN, -0.0, 0.0], &device);
/// let sorted = tied.sort_stable(0, Order::Ascending);
/// assert_eq!(sorted.indices.to_data().try_to_vec::<i32>().unwrap(), vec![4, 5, 1, 0, 2, 3]);
/// ```
pub trait SortExt<const D: usize, K: Basic> {
    /// Every element along `axis` (negative counts from the end), in `order`; ties keep
    /// increasing index in both orders. Indices in the device's default Int dtype.
    ///
    /// # Panics
    ///
    /// Where [`try_sort_stable`](Self::try_sort_stable) returns an error, with its message.
    fn sort_stable(self, axis: isize, order: Order) -> Sorted<D, K>;

    /// The `k` largest ([`Order::Descending`]) or smallest ([`Order::Ascending`]) elements
    /// along `axis`, in that order, ties by increasing index (DML_TOP_K1, ONNX TopK). Indices
    /// in the device's default Int dtype.
    ///
    /// # Panics
    ///
    /// Where [`try_top_k`](Self::try_top_k) returns an error, with its message.
    fn top_k(self, k: usize, axis: isize, order: Order) -> Sorted<D, K>;

    /// [`sort_stable`](Self::sort_stable) with every option, invalid arguments as an error.
    ///
    /// # Errors
    ///
    /// As [`try_top_k`](Self::try_top_k) with `k` the axis's length.
    fn try_sort_stable(
        self,
        axis: isize,
        options: SortOptions,
    ) -> Result<Sorted<D, K>, DmlOpsError>;

    /// [`top_k`](Self::top_k) with every option, invalid arguments as an error.
    ///
    /// # Errors
    ///
    /// [`DmlOpsError::InvalidArgument`] for an axis outside `-rank..rank`, `k` above the
    /// axis's length, an indices dtype that cannot hold every position along the axis, or more
    /// elements than the kernels' 32-bit offsets count; [`DmlOpsError::UnsupportedDType`] for a
    /// quantized input.
    fn try_top_k(
        self,
        k: usize,
        axis: isize,
        options: SortOptions,
    ) -> Result<Sorted<D, K>, DmlOpsError>;
}

fn invalid(detail: String) -> DmlOpsError {
    DmlOpsError::InvalidArgument {
        operator: OPERATOR,
        detail,
    }
}

/// The axis counted from the front, or the error for one outside `-rank..rank`.
fn resolve_axis(shape: &[usize], axis: isize) -> Result<usize, DmlOpsError> {
    let rank = shape.len();
    let resolved = if axis < 0 {
        rank.checked_sub(axis.unsigned_abs())
    } else {
        Some(axis as usize).filter(|&a| a < rank)
    };
    resolved.ok_or_else(|| {
        invalid(format!(
            "axis {axis} is out of range for an input of shape {shape:?} (rank {rank}: allowed \
             -{rank}..{rank})"
        ))
    })
}

/// Checks a TopK of `k` along `axis` of an input of `shape` and `dtype`, with indices in
/// `indices_dtype`; returns the axis counted from the front.
fn check_top_k(
    (shape, dtype): (&[usize], DType),
    device: &burn::tensor::Device,
    k: usize,
    axis: isize,
    indices_dtype: IntDType,
) -> Result<usize, DmlOpsError> {
    let resolved = resolve_axis(shape, axis)?;
    let axis_len = shape[resolved];
    if k > axis_len {
        return Err(invalid(format!(
            "k = {k} is larger than axis {axis} of the input (shape {shape:?}), which has \
             {axis_len} elements; k may be at most the axis's length"
        )));
    }
    if axis_len as i128 - 1 > max_value(indices_dtype) {
        return Err(invalid(format!(
            "the indices dtype {indices_dtype:?} cannot hold the positions along axis {axis} \
             of the input (shape {shape:?}, up to {}); choose a wider one",
            axis_len - 1
        )));
    }
    check_encoding(OPERATOR, device, dtype)?;
    let numel: usize = shape.iter().product();
    let words = if dtype.size() == 8 { 2 } else { 1 };
    if numel.saturating_mul(words) > u32::MAX as usize {
        return Err(invalid(format!(
            "the input (shape {shape:?}, {dtype:?}) has more elements than the sort's 32-bit \
             offsets count; split it along another axis"
        )));
    }
    Ok(resolved)
}

/// The checked TopK of a Float or Int tensor.
fn try_top_k<const D: usize, K: Basic>(
    input: Tensor<D, K>,
    k: usize,
    axis: isize,
    options: SortOptions,
) -> Result<Sorted<D, K>, DmlOpsError> {
    let device = input.device();
    let indices_dtype = options
        .indices_dtype
        .unwrap_or_else(|| device.settings().int_dtype);
    let axis = check_top_k(
        (&input.dims(), input.dtype()),
        &device,
        k,
        axis,
        indices_dtype,
    )?;
    let order = options.order;
    let input = input.into_dispatch();
    let (values, indices) = match K::KIND {
        Kind::Float => <Dispatch as DmlOps>::float_top_k(input, axis, k, order, indices_dtype),
        Kind::Int => <Dispatch as DmlOps>::int_top_k(input, axis, k, order, indices_dtype),
        Kind::Bool => unreachable!("SortExt is implemented for Float and Int tensors only"),
    };
    Ok(Sorted {
        values: Tensor::from_dispatch(values),
        indices: Tensor::from_dispatch(indices),
    })
}

/// The axis's length of `input`, or 0 for an axis out of range (which `try_top_k` refuses).
fn axis_len<const D: usize, K: Basic>(input: &Tensor<D, K>, axis: isize) -> usize {
    resolve_axis(&input.dims(), axis).map_or(0, |axis| input.dims()[axis])
}

macro_rules! sort_ext {
    ($kind:ty) => {
        impl<const D: usize> SortExt<D, $kind> for Tensor<D, $kind> {
            fn sort_stable(self, axis: isize, order: Order) -> Sorted<D, $kind> {
                let options = SortOptions {
                    order,
                    indices_dtype: None,
                };
                self.try_sort_stable(axis, options)
                    .unwrap_or_else(|err| panic!("{err}"))
            }

            fn top_k(self, k: usize, axis: isize, order: Order) -> Sorted<D, $kind> {
                let options = SortOptions {
                    order,
                    indices_dtype: None,
                };
                self.try_top_k(k, axis, options)
                    .unwrap_or_else(|err| panic!("{err}"))
            }

            fn try_sort_stable(
                self,
                axis: isize,
                options: SortOptions,
            ) -> Result<Sorted<D, $kind>, DmlOpsError> {
                let k = axis_len(&self, axis);
                try_top_k(self, k, axis, options)
            }

            fn try_top_k(
                self,
                k: usize,
                axis: isize,
                options: SortOptions,
            ) -> Result<Sorted<D, $kind>, DmlOpsError> {
                try_top_k(self, k, axis, options)
            }
        }
    };
}

sort_ext!(Float);
sort_ext!(Int);
