//! Index tuples on host data (see [`DmlOps::int_index_tuples`](crate::DmlOps::int_index_tuples)).

use burn::tensor::{Shape, TensorData};

use crate::host::reserve;

/// The `[rows, width]` tuples in `indices`' dtype: column `c` of row `r` is element
/// `r * copy_len + c - copy_start` of `indices` for the copied columns, else coordinate `c` of
/// position `r` in `positions`, as the little-endian bytes of that dtype.
pub(crate) fn index_tuples(
    indices: &TensorData,
    positions: &Shape,
    width: usize,
    copy_start: usize,
    copy_len: usize,
) -> TensorData {
    let dtype = indices.dtype();
    let bytes = dtype.size();
    let input = indices.as_bytes();
    let rows = positions.num_elements();
    let mut out: Vec<u8> = reserve("index tuples", "the tuples", rows * width * bytes);
    for r in 0..rows {
        for c in 0..width {
            if (copy_start..copy_start + copy_len).contains(&c) {
                let source = (r * copy_len + c - copy_start) * bytes;
                out.extend_from_slice(&input[source..source + bytes]);
            } else {
                let stride: usize = positions[c + 1..].iter().product();
                let coordinate = (r / stride % positions[c]) as u64;
                out.extend_from_slice(&coordinate.to_le_bytes()[..bytes]);
            }
        }
    }
    TensorData::from_bytes_vec(out, [rows, width], dtype)
}
