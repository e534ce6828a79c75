//! Compress's test oracle and runners, shared by the Compress test files.

use burn::tensor::{Bool, DType, Device, Tensor, TensorData};
use burn_dml_ops::prelude::*;

use super::*;

/// The elements of `data` as f64 (bools as 0 and 1): how the oracle sees them.
pub fn as_f64(data: &TensorData) -> Vec<f64> {
    match data.dtype() {
        DType::Bool(_) => data
            .iter::<bool>()
            .map(|b| f64::from(u8::from(b)))
            .collect(),
        _ => data.iter::<f64>().collect(),
    }
}

/// The expected `(count, values)` of a compress of `data` along `axis` (counted from the front)
/// by `condition`, built by walking the output's coordinates: output slice `r` along the axis is
/// the input slice of the `r`-th true condition element, or zeros.
pub fn oracle(data: &TensorData, axis: usize, condition: &[bool]) -> (usize, Vec<f64>) {
    let values = as_f64(data);
    let shape = data.shape().to_vec();
    let selected: Vec<usize> = (0..condition.len()).filter(|&i| condition[i]).collect();
    let mut out_shape = shape.clone();
    out_shape[axis] = condition.len();
    let len: usize = out_shape.iter().product();
    let mut out = Vec::with_capacity(len);
    for flat in 0..len {
        let mut rest = flat;
        let mut coords = vec![0; shape.len()];
        for d in (0..shape.len()).rev() {
            coords[d] = rest % out_shape[d];
            rest /= out_shape[d];
        }
        let value = match selected.get(coords[axis]) {
            Some(&source) => {
                coords[axis] = source;
                let index = coords
                    .iter()
                    .zip(&shape)
                    .fold(0, |acc, (&c, &d)| acc * d + c);
                values[index]
            }
            None => 0.0,
        };
        out.push(value);
    }
    (selected.len(), out)
}

/// `(count, values)` of a compress, read back: `values` as f64, and its dims.
pub type Outcome = (usize, Vec<f64>, Vec<usize>);

fn read<const D: usize, K: burn::tensor::kind::Basic>(result: Compressed<D, K>) -> Outcome {
    assert_eq!(result.count.dims(), [1]);
    let count = to_i64(&result.count.into_data())[0] as usize;
    let dims = result.values.dims().to_vec();
    (count, as_f64(&result.values.into_data()), dims)
}

/// A tensor of `data`'s kind, rank and dtype on `device`, compressed along `axis` by
/// `condition`.
pub fn run_axis_ranked<const D: usize>(
    data: TensorData,
    axis: isize,
    condition: &[bool],
    device: &Device,
) -> Result<Outcome, DmlOpsError> {
    let condition = Tensor::<1, Bool>::from_data(
        TensorData::new(condition.to_vec(), [condition.len()]),
        device,
    );
    Ok(match data.dtype() {
        DType::Bool(_) => {
            read(Tensor::<D, Bool>::from_data(data, device).try_compress_axis(axis, condition)?)
        }
        d if d.is_float() => {
            read(float_tensor::<D>(data, device).try_compress_axis(axis, condition)?)
        }
        _ => read(int_tensor::<D>(data, device).try_compress_axis(axis, condition)?),
    })
}

/// [`run_axis_ranked`] for data of any rank from 1 to 8.
pub fn run_axis(
    data: &TensorData,
    axis: isize,
    condition: &[bool],
    device: &Device,
) -> Result<Outcome, DmlOpsError> {
    with_rank!(
        data.shape().num_dims(),
        run_axis_ranked(data.clone(), axis, condition, device)
    )
}

/// A tensor of `data`'s kind, rank and dtype on `device`, compressed by a mask of its shape.
pub fn run_mask_ranked<const D: usize>(
    data: TensorData,
    mask: &[bool],
    device: &Device,
) -> Result<Outcome, DmlOpsError> {
    let shape = data.shape().clone();
    let mask = Tensor::<D, Bool>::from_data(TensorData::new(mask.to_vec(), shape), device);
    Ok(match data.dtype() {
        DType::Bool(_) => read(Tensor::<D, Bool>::from_data(data, device).try_compress(mask)?),
        d if d.is_float() => read(float_tensor::<D>(data, device).try_compress(mask)?),
        _ => read(int_tensor::<D>(data, device).try_compress(mask)?),
    })
}

/// [`run_mask_ranked`] for data of any rank from 1 to 8.
pub fn run_mask(data: &TensorData, mask: &[bool], device: &Device) -> Result<Outcome, DmlOpsError> {
    with_rank!(
        data.shape().num_dims(),
        run_mask_ranked(data.clone(), mask, device)
    )
}

/// Checks a compress along `axis` against the oracle: count, shape and every value, padding
/// included.
pub fn assert_axis_matches(data: &TensorData, axis: isize, condition: &[bool], device: &Device) {
    let rank = data.shape().num_dims();
    let resolved = if axis < 0 {
        (rank as isize + axis) as usize
    } else {
        axis as usize
    };
    let (count, values, dims) = run_axis(data, axis, condition, device)
        .unwrap_or_else(|err| panic!("{:?} axis {axis} on {device:?}: {err}", data.dtype()));
    let (expected_count, expected) = oracle(data, resolved, condition);
    let mut expected_dims = data.shape().to_vec();
    expected_dims[resolved] = condition.len();
    let case = format!(
        "{:?} {:?} axis {axis} on {device:?}",
        data.dtype(),
        data.shape()
    );
    assert_eq!(dims, expected_dims, "{case}");
    assert_eq!(count, expected_count, "{case}");
    assert_eq!(values, expected, "{case}");
}

/// The expected `(count, values)` of a compress of `data` by `mask` (of its shape, flattened
/// with it): the elements where `mask` is true in row-major order, then zeros.
pub fn mask_oracle(data: &TensorData, mask: &[bool]) -> (usize, Vec<f64>) {
    let mut expected: Vec<f64> = as_f64(data)
        .into_iter()
        .zip(mask)
        .filter_map(|(value, &keep)| keep.then_some(value))
        .collect();
    let count = expected.len();
    expected.resize(data.num_elements(), 0.0);
    (count, expected)
}

/// Checks a compress by `mask` against the oracle (the mask flattened as a condition of the
/// flattened input).
pub fn assert_mask_matches(data: &TensorData, mask: &[bool], device: &Device) {
    let (count, values, dims) = run_mask(data, mask, device)
        .unwrap_or_else(|err| panic!("{:?} on {device:?}: {err}", data.dtype()));
    let (expected_count, expected) = mask_oracle(data, mask);
    let case = format!("{:?} {:?} on {device:?}", data.dtype(), data.shape());
    assert_eq!(dims, vec![data.num_elements()], "{case}");
    assert_eq!(count, expected_count, "{case}");
    assert_eq!(values, expected, "{case}");
}

/// Deterministic flags with about `density` of them true.
pub fn flags_with_density(len: usize, density: f64, seed: u64) -> Vec<bool> {
    with_density(len, density, seed)
        .into_iter()
        .map(|v| v != 0.0)
        .collect()
}

/// `len` distinct small values of `dtype` (no zeros, so a misplaced padding shows), as data of
/// `shape`.
pub fn values_of(dtype: DType, shape: &[usize], seed: u64) -> TensorData {
    let len: usize = shape.iter().product();
    let raw: Vec<i64> = (0..len as u64)
        .map(|i| ((i.wrapping_mul(2_654_435_761) ^ seed) % 100) as i64 + 1)
        .collect();
    match dtype {
        DType::Bool(_) => TensorData::new(raw.iter().map(|v| v % 3 != 0).collect(), shape.to_vec()),
        _ => TensorData::new(raw, shape.to_vec()).convert_dtype(dtype),
    }
}
