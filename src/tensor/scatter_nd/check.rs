//! Every ScatterND rule, checked on shapes, dtypes and devices before anything is launched.

use burn::tensor::{DType, Device, TensorData};

use super::{Reduction, ScatterNdOptions};
use crate::DmlOpsError;
use crate::scatter_nd_rules::{index_values, resolve_index};
use crate::tensor::support::{check_index_dtype, check_scatter_data_dtype};

pub(super) const OPERATOR: &str = "ScatterND";

/// What one tensor of the call looks like.
pub(super) struct Operand<'a> {
    pub(super) shape: &'a [usize],
    pub(super) dtype: DType,
    pub(super) device: &'a Device,
}

/// The checked call: the input's real shape (after `input_dims`) and the index tuple size.
pub(super) struct Plan {
    /// The input's shape without the leading dimensions that `input_dims` ignores.
    pub(super) real_input: Vec<usize>,
    /// Index tuple size `k`.
    pub(super) k: usize,
}

impl Plan {
    /// The dimensions that the index tuples address.
    pub(super) fn indexed_dims(&self) -> &[usize] {
        &self.real_input[..self.k]
    }
}

fn invalid(detail: String) -> DmlOpsError {
    DmlOpsError::InvalidArgument {
        operator: OPERATOR,
        detail,
    }
}

/// `shape` without its leading dimensions of size 1.
fn drop_leading_ones(shape: &[usize]) -> &[usize] {
    let ones = shape.iter().take_while(|&&d| d == 1).count();
    &shape[ones..]
}

/// The trailing `count` dimensions of `shape` (DirectML's dimension counts), checking that the
/// ignored leading ones have size 1.
fn real_dims<'a>(
    shape: &'a [usize],
    count: Option<usize>,
    tensor: &str,
    option: &str,
) -> Result<&'a [usize], DmlOpsError> {
    let rank = shape.len();
    let count = count.unwrap_or(rank);
    if count == 0 || count > rank {
        return Err(invalid(format!(
            "{option} = {count} is outside 1..={rank} for {tensor} of shape {shape:?}"
        )));
    }
    let (ignored, real) = shape.split_at(rank - count);
    if ignored.iter().any(|&d| d != 1) {
        return Err(invalid(format!(
            "{option} = {count} ignores the leading dimensions {ignored:?} of {tensor} of shape \
             {shape:?}, but ignored dimensions must have size 1"
        )));
    }
    Ok(real)
}

/// Checks every rule of the spec; returns the plan to run.
pub(super) fn check(
    input: &Operand<'_>,
    indices: &Operand<'_>,
    updates: &Operand<'_>,
    options: &ScatterNdOptions,
) -> Result<Plan, DmlOpsError> {
    if indices.device != input.device || updates.device != input.device {
        return Err(invalid(format!(
            "the tensors are on different devices: input on {:?}, indices on {:?}, updates on \
             {:?}; move them to one device first (`Tensor::to_device`)",
            input.device, indices.device, updates.device
        )));
    }
    if updates.dtype != input.dtype {
        return Err(invalid(format!(
            "updates have dtype {:?} but the input has dtype {:?}; they must match (cast the \
             updates with `.cast(..)`)",
            updates.dtype, input.dtype
        )));
    }
    if !(indices.dtype.is_int() || indices.dtype.is_uint()) {
        return Err(invalid(format!(
            "indices have dtype {:?}; they must be integers",
            indices.dtype
        )));
    }
    if input.dtype.is_bool() && options.reduction != Reduction::Assign {
        return Err(invalid(format!(
            "reduction {:?} on a Bool tensor; Bool tensors take Reduction::Assign only",
            options.reduction
        )));
    }

    let real_input = real_dims(input.shape, options.input_dims, "the input", "input_dims")?;
    let real_indices = real_dims(
        indices.shape,
        options.indices_dims,
        "the indices",
        "indices_dims",
    )?;
    let (&k, batch) = real_indices
        .split_last()
        .expect("real_dims returns at least one dimension");
    if k == 0 || k > real_input.len() {
        return Err(invalid(format!(
            "indices of shape {:?} hold index tuples of size k = {k} (their last dimension), \
             but k must be in 1..={} for an input of shape {real_input:?}",
            indices.shape,
            real_input.len()
        )));
    }
    let expected: Vec<usize> = batch.iter().chain(&real_input[k..]).copied().collect();
    if drop_leading_ones(updates.shape) != drop_leading_ones(&expected) {
        return Err(invalid(format!(
            "updates have shape {:?} but must have shape {expected:?}: the indices' batch \
             dimensions {batch:?} followed by the input's dimensions after the first k = {k}, \
             {:?} (input {real_input:?}, indices {real_indices:?}; leading 1s are ignored on \
             both sides)",
            updates.shape,
            &real_input[k..]
        )));
    }
    // Checked: a zero-element input may still have dimensions whose product overflows.
    let product = |dims: &[usize]| dims.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d));
    let (Some(targets), Some(rows), Some(_slice)) = (
        product(&real_input[..k]),
        product(batch),
        product(&real_input[k..]),
    ) else {
        return Err(invalid(format!(
            "input {real_input:?} with indices {real_indices:?}: the number of target slices, \
             index tuples or slice elements overflows usize, so the kernels cannot address \
             them; every such count must stay below {}",
            u32::MAX
        )));
    };
    if targets >= u32::MAX as usize || rows >= u32::MAX as usize {
        return Err(invalid(format!(
            "{rows} index tuples into {targets} target slices (input {real_input:?}, indices \
             {real_indices:?}): the kernels number both in 32 bits, so each must stay below {}",
            u32::MAX
        )));
    }

    check_scatter_data_dtype(OPERATOR, input.device, input.dtype, options.reduction)?;
    check_index_dtype(OPERATOR, input.device, indices.dtype)?;
    Ok(Plan {
        real_input: real_input.to_vec(),
        k,
    })
}

/// The `OutOfBounds::Error` check on the indices' host data: the first index tuple that is out
/// of range after negative indices are wrapped is an error that names it.
pub(super) fn check_in_range(
    indices: &TensorData,
    plan: &Plan,
    input_shape: &[usize],
) -> Result<(), DmlOpsError> {
    let dims = plan.indexed_dims();
    let values = index_values(indices);
    for (row, tuple) in values.chunks_exact(plan.k).enumerate() {
        let bad = tuple
            .iter()
            .zip(dims)
            .position(|(&v, &d)| resolve_index(v, d, false).is_none());
        if let Some(axis) = bad {
            return Err(invalid(format!(
                "index tuple {tuple:?} (tuple {row} of the indices) is out of range: coordinate \
                 {axis} is {} but indexed dimension {axis} of the input (shape {input_shape:?}, indexed \
                 dimensions {dims:?}) allows {}..{}; use OutOfBounds::Skip or Clamp to let \
                 the kernel drop or clamp such tuples",
                tuple[axis],
                -(dims[axis] as i128),
                dims[axis]
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A zero-element input whose indexed dimensions multiply past usize (DirectML's example of
    /// a shape the kernels cannot number) is an error from the checks, not a panic in a debug
    /// build or a wrapped product that passes in a release one. Burn cannot allocate such a
    /// tensor (it multiplies shapes unchecked too), so the checks are called on shapes alone.
    #[test]
    fn overflowing_shapes_are_errors() {
        let device = Device::flex();
        let operand = |shape| Operand {
            shape,
            dtype: DType::F32,
            device: &device,
        };
        let huge = 1usize << 32;
        // (input, indices, updates): indexed dimensions, then slice dimensions, that overflow.
        let cases: [(&[usize], &[usize], &[usize]); 2] = [
            (&[huge, huge, 0], &[1, 2], &[1, 0]),
            (&[0, huge, huge], &[1, 1], &[1, huge, huge]),
        ];
        for (input, indices, updates) in cases {
            let indices = Operand {
                dtype: DType::I64,
                ..operand(indices)
            };
            let options = ScatterNdOptions::default();
            let err = check(&operand(input), &indices, &operand(updates), &options)
                .map(|_| ())
                .unwrap_err();
            assert!(
                err.to_string().contains("overflows usize"),
                "{input:?}: {err}"
            );
        }
    }
}
