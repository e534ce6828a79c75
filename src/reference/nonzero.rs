//! NonZeroCoordinates on host data.

use burn::tensor::{DType, IntDType, TensorData};

use crate::host::reserve;

/// `(count, coordinates)` of the non-zero elements of `data`: `count` has shape `[1]`,
/// `coordinates` shape `[numel, width]` with the coordinates of the last `width` dimensions in
/// ascending element order, and padding rows set to `fill` (zero when `None`).
///
/// An element is non-zero when any bit of its stored encoding is set, the sign bit of a float
/// excepted: so `-0.0` is zero, NaN and infinities are not, and a bool is non-zero when true.
pub(crate) fn nonzero_coordinates(
    data: &TensorData,
    width: usize,
    fill: Option<i64>,
    out_dtype: IntDType,
) -> (TensorData, TensorData) {
    let dtype = data.dtype();
    let bytes = dtype.size();
    let is_float = dtype.is_float();
    let shape = data.shape();
    let dims = &shape[shape.num_dims() - width..];
    let numel = data.num_elements();

    // The fixed output shape is `numel` rows however few are non-zero: reserve it first, so
    // that a host without the memory gets a panic that says so, not an abort.
    let len = numel.saturating_mul(width);
    let mut coordinates: Vec<i64> = reserve(
        "NonZeroCoordinates",
        &format!("the output of {numel} rows of {width} coordinates"),
        len,
    );
    coordinates.resize(len, fill.unwrap_or(0));
    let mut count = 0usize;
    for (flat, element) in data.as_bytes().chunks_exact(bytes).enumerate() {
        let sign_byte = bytes - 1; // little-endian: the sign bit is the top bit of the last byte
        let non_zero = element.iter().enumerate().any(|(i, &byte)| {
            let byte = if is_float && i == sign_byte {
                byte & 0x7F
            } else {
                byte
            };
            byte != 0
        });
        if !non_zero {
            continue;
        }
        let row = &mut coordinates[count * width..(count + 1) * width];
        let mut rest = flat;
        for (coordinate, &dim) in row.iter_mut().zip(dims).rev() {
            *coordinate = (rest % dim) as i64;
            rest /= dim;
        }
        count += 1;
    }
    let out = DType::from(out_dtype);
    (
        TensorData::new(vec![count as i64], [1]).convert_dtype(out),
        TensorData::new(coordinates, [numel, width]).convert_dtype(out),
    )
}
