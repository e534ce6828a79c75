//! `ScatterNdExt`: DirectML's `SCATTER_ND` with ONNX's reductions on Float, Int and Bool tensors.

mod check;
mod options;

use burn::backend::Dispatch;
use burn::tensor::{Bool, Float, Int, Tensor};

pub use options::{OutOfBounds, Reduction, ScatterNdOptions};

use self::check::{Operand, Plan, check, check_in_range};
use super::support::{read_int_bits, read_int_bits_async};
use crate::{DmlOps, DmlOpsError};

/// ScatterND: `output = input; output[indices[...]] = updates[...]`, with negative indices,
/// safe out-of-range handling and reductions that lose no update.
///
/// `indices` has shape `batch ++ [k]`: each of its `batch` index tuples addresses a slice
/// `input[i0, .., ik-1, ...]` of shape `input.shape[k..]`, and `updates` has shape
/// `batch ++ input.shape[k..]` (compared after dropping leading 1s on both sides). Negative
/// indices count from the end of their dimension (`-1` is the last element). The output has the
/// input's shape and dtype, and is written in place when the input's buffer is not shared.
///
/// Burn's own [`Tensor::scatter_nd`] keeps its meaning: these methods have their own names.
///
/// ```
/// use burn::tensor::{Device, Int, Tensor};
/// use burn_dml_ops::prelude::*;
///
/// let device = Device::flex();
/// let input = Tensor::<1>::from_data([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0], &device);
/// let indices = Tensor::<2, Int>::from_data([[4], [-5], [1], [7]], &device);
/// let updates = Tensor::<1>::from_data([9.0, 10.0, 11.0, 12.0], &device);
/// let output = input.scatter_nd_update(indices, updates);
/// assert_eq!(
///     output.to_data().try_to_vec::<f32>().unwrap(),
///     vec![1.0, 11.0, 3.0, 10.0, 9.0, 6.0, 7.0, 12.0]
/// );
///
/// // Duplicates with a reduction: every update is applied.
/// let counts = Tensor::<2, Int>::zeros([2, 3], &device);
/// let indices = Tensor::<2, Int>::from_data([[0, 1], [0, 1]], &device);
/// let updates = Tensor::<1, Int>::from_data([5, 3], &device);
/// let options = ScatterNdOptions { reduction: Reduction::Add, ..Default::default() };
/// let output = counts.try_scatter_nd(indices, updates, options).unwrap();
/// assert_eq!(output.to_data().try_to_vec::<i32>().unwrap(), vec![0, 8, 0, 0, 0, 0]);
/// ```
///
/// # Gradients
///
/// On an autodiff device (the `autodiff` feature, on by default), Float ScatterND with `Assign`
/// or `Add` is differentiable in both the input and the updates. Each updates row gets the
/// output's gradient at the slice it was written to (zeros when its tuple was skipped); with
/// `Assign`, the input's gradient is zero where an update replaced an element. With duplicate
/// tuples under `Assign` every duplicate row gets that gradient, although only one of them
/// supplied the value. `Mul`, `Min` and `Max` on tracked operands are an error.
///
/// ```
/// use burn::tensor::{Device, Int, Tensor};
/// use burn_dml_ops::prelude::*;
///
/// let device = Device::flex().autodiff();
/// let rows = Tensor::<2>::ones([2, 2], &device).require_grad();
/// let buffer = Tensor::<2>::zeros([3, 2], &device).require_grad();
/// let positions = Tensor::<2, Int>::from_data([[0], [-1]], &device);
/// let output = buffer.clone().scatter_nd_update(positions, rows.clone());
/// let grads = (output * 3.0).sum().backward();
/// let grad = |t: Tensor<2>| t.grad(&grads).unwrap().to_data().try_to_vec::<f32>().unwrap();
/// assert_eq!(grad(rows), vec![3.0; 4]);
/// assert_eq!(grad(buffer), vec![0.0, 0.0, 3.0, 3.0, 0.0, 0.0]);
/// ```
pub trait ScatterNdExt<const D: usize, K: burn::tensor::kind::Basic> {
    /// `Assign`, out-of-range index tuples skipped.
    ///
    /// # Panics
    ///
    /// When [`try_scatter_nd`](Self::try_scatter_nd) with the default options would return an
    /// error (wrong updates shape, dtype mismatch, tensors on different devices, a dtype the
    /// device cannot hold); the message is that error's.
    fn scatter_nd_update<const DI: usize, const DU: usize>(
        self,
        indices: Tensor<DI, Int>,
        updates: Tensor<DU, K>,
    ) -> Tensor<D, K>;

    /// ScatterND with every option.
    ///
    /// Only [`OutOfBounds::Error`] reads anything back to the host (the indices, once).
    ///
    /// # Errors
    ///
    /// [`DmlOpsError::InvalidArgument`] when the updates' dtype differs from the input's, `k`
    /// (the indices' last dimension) is 0 or larger than the input's rank, the updates do not
    /// have the shape `batch ++ input.shape[k..]` (the message spells it out), the tensors are on
    /// different devices, a dimension count option is out of range or ignores a dimension that
    /// is not 1, a Bool tensor is given a reduction other than `Assign`, a Float operand is
    /// tracked by autodiff with a reduction that has no gradient (`Mul`, `Min`, `Max`), or (with
    /// `OutOfBounds::Error`) an index tuple is out of range; [`DmlOpsError::UnsupportedDType`]
    /// for a quantized tensor, a reduction on a 32- or 64-bit dtype the device stores but has
    /// no arithmetic for, `Add`/`Mul` on f64 where the device cannot store it (OpenGL, which
    /// holds such data as 32-bit word pairs: `Assign`, `Min` and `Max` work there). Every other
    /// Int and Float dtype runs, with indices of every Int dtype.
    ///
    /// # Panics
    ///
    /// When memory for the output or the kernel's scratch cannot be allocated, as Burn's own
    /// operations do: no check can know beforehand what the host or device will grant. On Flex
    /// every buffer is reserved first, so the panic names its size instead of aborting.
    fn try_scatter_nd<const DI: usize, const DU: usize>(
        self,
        indices: Tensor<DI, Int>,
        updates: Tensor<DU, K>,
        options: ScatterNdOptions,
    ) -> Result<Tensor<D, K>, DmlOpsError>;

    /// [`try_scatter_nd`](Self::try_scatter_nd) without blocking, for browsers, where a
    /// blocking read panics: with [`OutOfBounds::Error`] the indices are read back with an
    /// async read, which completes when the device has run. The same result and errors
    /// otherwise; nothing else reads back.
    ///
    /// # Errors
    ///
    /// As [`try_scatter_nd`](Self::try_scatter_nd).
    fn try_scatter_nd_async<const DI: usize, const DU: usize>(
        self,
        indices: Tensor<DI, Int>,
        updates: Tensor<DU, K>,
        options: ScatterNdOptions,
    ) -> impl Future<Output = Result<Tensor<D, K>, DmlOpsError>>;
}

/// The checks every ScatterND makes before anything runs, up to the range check of
/// [`OutOfBounds::Error`] (which needs the indices' values): the plan of the call.
fn checked_plan<const D: usize, const DI: usize, const DU: usize, K>(
    input: &Tensor<D, K>,
    indices: &Tensor<DI, Int>,
    updates: &Tensor<DU, K>,
    options: &ScatterNdOptions,
    tracked: bool,
) -> Result<Plan, DmlOpsError>
where
    K: burn::tensor::kind::Basic,
{
    let operand = |shape, dtype, device| Operand {
        shape,
        dtype,
        device,
    };
    let plan = check(
        &operand(&input.dims(), input.dtype(), &input.device()),
        &operand(&indices.dims(), indices.dtype(), &indices.device()),
        &operand(&updates.dims(), updates.dtype(), &updates.device()),
        options,
    )?;
    if !matches!(options.reduction, Reduction::Assign | Reduction::Add) && tracked {
        return Err(DmlOpsError::InvalidArgument {
            operator: check::OPERATOR,
            detail: crate::scatter_nd_rules::not_differentiable(options.reduction),
        });
    }
    Ok(plan)
}

/// Whether autodiff tracks a Float operand.
#[cfg(feature = "autodiff")]
fn float_tracked<const D: usize>(tensor: &Tensor<D, Float>) -> bool {
    tensor.is_tracked()
}

/// Without the `autodiff` feature nothing is tracked.
#[cfg(not(feature = "autodiff"))]
fn float_tracked<const D: usize>(_tensor: &Tensor<D, Float>) -> bool {
    false
}

/// Autodiff never tracks Int and Bool operands.
fn never_tracked<T>(_tensor: &T) -> bool {
    false
}

macro_rules! impl_scatter_nd {
    ($kind:ty, $method:ident, $tracked:ident) => {
        impl<const D: usize> ScatterNdExt<D, $kind> for Tensor<D, $kind> {
            fn scatter_nd_update<const DI: usize, const DU: usize>(
                self,
                indices: Tensor<DI, Int>,
                updates: Tensor<DU, $kind>,
            ) -> Tensor<D, $kind> {
                self.try_scatter_nd(indices, updates, ScatterNdOptions::default())
                    .unwrap_or_else(|err| panic!("{err}"))
            }

            fn try_scatter_nd<const DI: usize, const DU: usize>(
                self,
                indices: Tensor<DI, Int>,
                updates: Tensor<DU, $kind>,
                options: ScatterNdOptions,
            ) -> Result<Tensor<D, $kind>, DmlOpsError> {
                let tracked = $tracked(&self) || $tracked(&updates);
                let plan = checked_plan(&self, &indices, &updates, &options, tracked)?;
                if options.out_of_bounds == OutOfBounds::Error {
                    let data = read_int_bits(indices.clone());
                    check_in_range(&data, &plan, &self.dims())?;
                }
                Ok(launch_scatter_nd!(
                    $method, self, indices, updates, options, plan
                ))
            }

            async fn try_scatter_nd_async<const DI: usize, const DU: usize>(
                self,
                indices: Tensor<DI, Int>,
                updates: Tensor<DU, $kind>,
                options: ScatterNdOptions,
            ) -> Result<Tensor<D, $kind>, DmlOpsError> {
                let tracked = $tracked(&self) || $tracked(&updates);
                let plan = checked_plan(&self, &indices, &updates, &options, tracked)?;
                if options.out_of_bounds == OutOfBounds::Error {
                    let data = read_int_bits_async(indices.clone()).await;
                    check_in_range(&data, &plan, &self.dims())?;
                }
                Ok(launch_scatter_nd!(
                    $method, self, indices, updates, options, plan
                ))
            }
        }
    };
}

/// The backend's ScatterND of a checked call. The backends skip the leading dimensions that
/// `input_dims` ignores (all of size 1): reshaping them away here would copy a view with a
/// kernel of its type.
macro_rules! launch_scatter_nd {
    ($method:ident, $input:expr, $indices:expr, $updates:expr, $options:expr, $plan:expr) => {
        Tensor::from_dispatch(<Dispatch as DmlOps>::$method(
            $input.into_dispatch(),
            $indices.into_dispatch(),
            $updates.into_dispatch(),
            $options.reduction,
            $options.out_of_bounds,
            $plan.real_input.len(),
            $options.deterministic,
        ))
    };
}

impl_scatter_nd!(Float, float_scatter_nd, float_tracked);
impl_scatter_nd!(Int, int_scatter_nd, never_tracked);
impl_scatter_nd!(Bool, bool_scatter_nd, never_tracked);
