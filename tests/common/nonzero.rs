//! NonZeroCoordinates' test oracle and runners, shared by the NonZero test files.

use burn::tensor::{Bool, DType, Device, Tensor, TensorData};
use burn_dml_ops::prelude::*;

use super::*;

/// Which elements are non-zero, by value.
pub fn flags(data: &TensorData) -> Vec<bool> {
    match data.dtype() {
        DType::Bool(_) => data.iter::<bool>().collect(),
        _ => data.iter::<f64>().map(|v| v != 0.0).collect(),
    }
}

/// The expected rows: coordinates of the last `width` dims of each non-zero element, in order.
pub fn oracle(data: &TensorData, width: usize) -> Vec<Vec<i64>> {
    let shape = data.shape();
    let dims = &shape[shape.num_dims() - width..];
    flags(data)
        .into_iter()
        .enumerate()
        .filter(|(_, nz)| *nz)
        .map(|(flat, _)| {
            let mut rest = flat;
            let mut row = vec![0i64; width];
            for (c, &d) in row.iter_mut().zip(dims).rev() {
                *c = (rest % d) as i64;
                rest /= d;
            }
            row
        })
        .collect()
}

pub fn run_ranked<const D: usize>(
    data: TensorData,
    device: &Device,
    options: NonZeroOptions,
) -> Result<NonZeroCoordinates, DmlOpsError> {
    let dtype = data.dtype();
    match dtype {
        DType::Bool(_) => {
            Tensor::<D, Bool>::from_data(data, device).nonzero_coordinates_with(options)
        }
        d if d.is_float() => float_tensor::<D>(data, device).nonzero_coordinates_with(options),
        _ => int_tensor::<D>(data, device).nonzero_coordinates_with(options),
    }
}

pub fn run(
    data: &TensorData,
    device: &Device,
    options: NonZeroOptions,
) -> Result<NonZeroCoordinates, DmlOpsError> {
    with_rank!(
        data.shape().num_dims(),
        run_ranked(data.clone(), device, options)
    )
}

/// `(count, valid rows, padding rows)` of a result, read back.
pub fn read(result: NonZeroCoordinates) -> (usize, Vec<Vec<i64>>, Vec<Vec<i64>>) {
    let [rows, width] = result.coordinates.dims();
    assert_eq!(result.count.dims(), [1]);
    let count = result.count_sync();
    assert!(count <= rows, "count {count} exceeds the {rows} rows");
    let values = to_i64(&result.coordinates.into_data());
    let rows: Vec<Vec<i64>> = if width == 0 {
        vec![vec![]; rows]
    } else {
        values.chunks(width).map(<[i64]>::to_vec).collect()
    };
    let padding = rows[count..].to_vec();
    (count, rows[..count].to_vec(), padding)
}

/// Checks shapes, dtypes, count and rows against the oracle; returns the padding rows.
pub fn assert_matches_oracle(
    data: &TensorData,
    device: &Device,
    options: NonZeroOptions,
) -> Vec<Vec<i64>> {
    let width = options.width.unwrap_or(data.shape().num_dims());
    let out = options.out_dtype.unwrap_or(device.settings().int_dtype);
    let result = run(data, device, options)
        .unwrap_or_else(|err| panic!("{:?} on {device:?}: {err}", data.dtype()));
    assert_eq!(result.count.dtype(), DType::from(out));
    assert_eq!(result.coordinates.dtype(), DType::from(out));
    assert_eq!(result.coordinates.dims(), [data.num_elements(), width]);
    let expected = oracle(data, width);
    let (count, rows, padding) = read(result);
    assert_eq!(
        count,
        expected.len(),
        "count of {:?} {:?} on {device:?}",
        data.dtype(),
        data.shape()
    );
    assert_eq!(
        rows,
        expected,
        "rows of {:?} {:?} on {device:?}",
        data.dtype(),
        data.shape()
    );
    padding
}
