//! Compress on host data.

use burn::tensor::{DType, IntDType, TensorData};

use crate::host::reserve;

/// `(count, values)` of a compress of `data` along `axis` by `condition` (a bool or integer
/// vector no longer than the axis): `values` has `data`'s shape with `axis` cut to the
/// condition's length, holding the slices whose condition element is true in ascending order,
/// then zero bytes (zeros, and false for bools); `count` (shape `[1]`) is their number. With
/// `axis` `None`, `condition` is a mask of `data`'s shape, both read flat: `values` is
/// `[numel]`.
pub(crate) fn compress(
    data: &TensorData,
    axis: Option<usize>,
    condition: &TensorData,
    count_dtype: IntDType,
) -> (TensorData, TensorData) {
    let bytes = data.dtype().size();
    let (dims, axis) = match axis {
        Some(axis) => (data.shape().to_vec(), axis),
        None => (vec![data.num_elements()], 0),
    };
    let axis_len = dims[axis];
    let inner: usize = dims[axis + 1..].iter().product();
    let outer: usize = dims[..axis].iter().product();
    let condition_bytes = condition.dtype().size();
    let selected: Vec<usize> = condition
        .as_bytes()
        .chunks_exact(condition_bytes)
        .enumerate()
        .filter(|(_, element)| element.iter().any(|&byte| byte != 0))
        .map(|(index, _)| index)
        .collect();
    let slices = condition.num_elements();
    let slice_bytes = inner * bytes;
    let len = outer * slices * slice_bytes;
    let mut values: Vec<u8> = reserve("Compress", &format!("the output of {len} bytes"), len);
    let input = data.as_bytes();
    for o in 0..outer {
        for &s in &selected {
            let start = (o * axis_len + s) * slice_bytes;
            values.extend_from_slice(&input[start..start + slice_bytes]);
        }
        values.resize((o + 1) * slices * slice_bytes, 0);
    }
    let mut shape = dims;
    shape[axis] = slices;
    (
        TensorData::new(vec![selected.len() as i64], [1]).convert_dtype(DType::from(count_dtype)),
        TensorData::from_bytes_vec(values, shape, data.dtype()),
    )
}
