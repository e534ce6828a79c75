//! The sort tests' oracle and inputs: each sequence's positions sorted by an unstable sort on
//! (value, position), with NaN ranked above everything and `-0.0 == +0.0`: a different route
//! from the kernels' radix passes and the reference's stable comparison sort.

use burn::tensor::{DType, TensorData};

/// What the oracle sorts an element by.
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd)]
enum Key {
    Float(f64),
    Int(i128),
}

/// Each element of `data` as a key: floats through an exact conversion to f64 with `-0.0` as
/// `+0.0` (NaNs are ranked apart, by [`nan_flags`]); integers decoded from their bytes.
fn keys(data: &TensorData) -> Vec<Key> {
    let dtype = data.dtype();
    if dtype.is_float() {
        let values = data
            .clone()
            .convert_dtype(DType::F64)
            .try_to_vec::<f64>()
            .unwrap();
        return values
            .into_iter()
            .map(|v| Key::Float(if v.is_nan() { 0.0 } else { v + 0.0 }))
            .collect();
    }
    let width = dtype.size();
    let signed = matches!(dtype, DType::I8 | DType::I16 | DType::I32 | DType::I64);
    data.as_bytes()
        .chunks_exact(width)
        .map(|bytes| {
            let mut buf = [0u8; 16];
            buf[..width].copy_from_slice(bytes);
            if signed && bytes[width - 1] & 0x80 != 0 {
                buf[width..].fill(0xFF);
            }
            Key::Int(i128::from_le_bytes(buf))
        })
        .collect()
}

/// The expected `(value bytes, indices)` of a top-`k` of `data` along `axis`.
pub fn expected_top_k(
    data: &TensorData,
    axis: usize,
    k: usize,
    descending: bool,
) -> (Vec<u8>, Vec<i64>) {
    let dims = data.shape().to_vec();
    let width = data.dtype().size();
    let bytes = data.as_bytes();
    let is_nan = nan_flags(data);
    let keys = keys(data);
    let (outer, len) = (dims[..axis].iter().product::<usize>(), dims[axis]);
    let inner: usize = dims[axis + 1..].iter().product();
    let mut values = vec![0u8; outer * k * inner * width];
    let mut indices = vec![0i64; outer * k * inner];
    for o in 0..outer {
        for i in 0..inner {
            let at = |p: usize| (o * len + p) * inner + i;
            let mut order: Vec<usize> = (0..len).collect();
            order.sort_unstable_by(|&a, &b| {
                let (ka, kb) = (at(a), at(b));
                let by_value = match (is_nan[ka], is_nan[kb]) {
                    (true, true) => std::cmp::Ordering::Equal,
                    (true, false) => std::cmp::Ordering::Greater,
                    (false, true) => std::cmp::Ordering::Less,
                    _ => keys[ka].partial_cmp(&keys[kb]).unwrap(),
                };
                let by_value = if descending {
                    by_value.reverse()
                } else {
                    by_value
                };
                by_value.then(a.cmp(&b))
            });
            for (r, &p) in order[..k].iter().enumerate() {
                let target = (o * k + r) * inner + i;
                values[target * width..(target + 1) * width]
                    .copy_from_slice(&bytes[at(p) * width..(at(p) + 1) * width]);
                indices[target] = p as i64;
            }
        }
    }
    (values, indices)
}

/// Whether each element of `data` is a float NaN.
fn nan_flags(data: &TensorData) -> Vec<bool> {
    if !data.dtype().is_float() {
        return vec![false; data.num_elements()];
    }
    data.clone()
        .convert_dtype(DType::F64)
        .try_to_vec::<f64>()
        .unwrap()
        .into_iter()
        .map(f64::is_nan)
        .collect()
}

/// A palette of values of `dtype` that exercises the order: for floats infinities, signed zeros,
/// NaNs of both signs and ordinary values; for integers both ends of the range and the middle.
pub fn palette(dtype: DType) -> Vec<u64> {
    let width = dtype.size() * 8;
    let mask = if width == 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    };
    let bits_of = |v: f64| -> u64 {
        let data = TensorData::new(vec![v], [1]).convert_dtype(dtype);
        let mut buf = [0u8; 8];
        buf[..dtype.size()].copy_from_slice(data.as_bytes());
        u64::from_le_bytes(buf)
    };
    if dtype.is_float() {
        let sign = 1u64 << (width - 1);
        let nan = bits_of(f64::NAN);
        vec![
            bits_of(f64::NEG_INFINITY),
            bits_of(-1.5),
            bits_of(-0.0),
            bits_of(0.0),
            bits_of(1.5),
            bits_of(2.0),
            bits_of(f64::INFINITY),
            nan,
            nan | sign,
            nan | 1,
        ]
    } else if matches!(dtype, DType::I8 | DType::I16 | DType::I32 | DType::I64) {
        let min = 1u64 << (width - 1);
        vec![min, min + 1, mask, 0, 1, 2, min - 2, min - 1]
    } else {
        vec![0, 1, 2, 3, mask - 1, mask, mask >> 1, (mask >> 1) + 1]
    }
}

/// `TensorData` of `dtype` and `shape` whose elements are the raw `bits` (low bytes first).
pub fn from_bits(bits: &[u64], shape: &[usize], dtype: DType) -> TensorData {
    let width = dtype.size();
    let bytes: Vec<u8> = bits
        .iter()
        .flat_map(|b| b.to_le_bytes()[..width].to_vec())
        .collect();
    TensorData::from_bytes_vec(bytes, shape.to_vec(), dtype)
}
