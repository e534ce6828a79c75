//! TopK and the stable sort on host data.

use std::cmp::Ordering;

use burn::tensor::{DType, IntDType, TensorData};
use half::{bf16, f16};

use crate::host::reserve;
use crate::sort_rules::Order;

/// An element as the sort compares it: floats by value (NaN above everything, `-0.0 == +0.0`),
/// integers exactly in their own signedness.
#[derive(Clone, Copy, Debug)]
enum Ranked {
    Float(f64),
    Int(i128),
}

impl Ranked {
    /// The total order of the contract.
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (Self::Float(a), Self::Float(b)) => match (a.is_nan(), b.is_nan()) {
                (true, true) => Ordering::Equal,
                (true, false) => Ordering::Greater,
                (false, true) => Ordering::Less,
                // `partial_cmp` already has `-0.0 == +0.0`.
                (false, false) => a.partial_cmp(b).expect("neither is NaN"),
            },
            (Self::Int(a), Self::Int(b)) => a.cmp(b),
            _ => unreachable!("one tensor holds one kind"),
        }
    }
}

/// The value of one little-endian element of `dtype`.
fn ranked(bytes: &[u8], dtype: DType) -> Ranked {
    let word = |n: usize| {
        let mut buf = [0u8; 8];
        buf[..n].copy_from_slice(&bytes[..n]);
        u64::from_le_bytes(buf)
    };
    match dtype {
        DType::F64 => Ranked::Float(f64::from_bits(word(8))),
        DType::F32 | DType::Flex32 => Ranked::Float(f32::from_bits(word(4) as u32).into()),
        DType::F16 => Ranked::Float(f16::from_bits(word(2) as u16).to_f64()),
        DType::BF16 => Ranked::Float(bf16::from_bits(word(2) as u16).to_f64()),
        DType::I64 => Ranked::Int((word(8) as i64).into()),
        DType::I32 => Ranked::Int((word(4) as u32 as i32).into()),
        DType::I16 => Ranked::Int((word(2) as u16 as i16).into()),
        DType::I8 => Ranked::Int((word(1) as u8 as i8).into()),
        DType::U64 | DType::U32 | DType::U16 | DType::U8 => Ranked::Int(word(dtype.size()).into()),
        other => panic!("TopK: {other:?} is not a Float or Int dtype"),
    }
}

/// `(values, indices)` of the first `k` elements of each sequence along `axis` of `data` in
/// `order`, ties by increasing index: both have `data`'s shape with `k` along `axis`; the values
/// are `data`'s elements bit for bit, the indices their positions along the axis in
/// `indices_dtype`.
pub(crate) fn top_k(
    data: &TensorData,
    axis: usize,
    k: usize,
    order: Order,
    indices_dtype: IntDType,
) -> (TensorData, TensorData) {
    let dtype = data.dtype();
    let width = dtype.size();
    let dims = data.shape().to_vec();
    let axis_len = dims[axis];
    let outer: usize = dims[..axis].iter().product();
    let inner: usize = dims[axis + 1..].iter().product();
    let out_len = outer * k * inner;
    let input = data.as_bytes();
    let element = |e: usize| &input[e * width..(e + 1) * width];
    let mut values: Vec<u8> = reserve("TopK", "the values", out_len * width);
    values.resize(out_len * width, 0);
    let mut indices: Vec<i64> = reserve("TopK", "the indices", out_len);
    indices.resize(out_len, 0);
    let mut sequence: Vec<(usize, Ranked)> = reserve("TopK", "one sequence", axis_len);
    for o in 0..outer {
        for i in 0..inner {
            let source = |p: usize| (o * axis_len + p) * inner + i;
            sequence.clear();
            sequence.extend((0..axis_len).map(|p| (p, ranked(element(source(p)), dtype))));
            // A stable sort: equal elements keep increasing index in both orders.
            match order {
                Order::Ascending => sequence.sort_by(|a, b| a.1.cmp(&b.1)),
                Order::Descending => sequence.sort_by(|a, b| b.1.cmp(&a.1)),
            }
            for (r, &(p, _)) in sequence[..k].iter().enumerate() {
                let target = (o * k + r) * inner + i;
                values[target * width..(target + 1) * width].copy_from_slice(element(source(p)));
                indices[target] = p as i64;
            }
        }
    }
    let mut shape = dims;
    shape[axis] = k;
    (
        TensorData::from_bytes_vec(values, shape.clone(), dtype),
        TensorData::new(indices, shape).convert_dtype(DType::from(indices_dtype)),
    )
}
