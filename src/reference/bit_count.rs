//! BitCount on host data.

use burn::tensor::{IntDType, TensorData};

/// The number of set bits in each element's stored bytes, as `out_dtype`.
///
/// Counting byte by byte gives the same answer for every width and endianness: a two's-complement
/// integer or an IEEE float is counted on exactly the bits it is stored as.
pub(crate) fn bit_count(data: &TensorData, out_dtype: IntDType) -> TensorData {
    let width = data.dtype().size();
    let counts: Vec<u8> = data
        .as_bytes()
        .chunks_exact(width)
        .map(|element| element.iter().map(|byte| byte.count_ones() as u8).sum())
        .collect();
    TensorData::new(counts, data.shape().clone()).convert_dtype(out_dtype.into())
}
