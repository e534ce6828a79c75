//! ScatterND on host data.

use burn::tensor::{DType, TensorData};
use half::{bf16, f16};

use super::exact_product;
use super::exact_sum::{self, Format, Sum};
use crate::host::reserve;
use crate::scatter_nd_rules::{OutOfBounds, Reduction, index_values, indexed_dims, target_slices};

const OPERATOR: &str = "ScatterND";

/// An element type the reductions can combine: integers wrap, floats round in their own type.
trait Combine: Copy + burn::tensor::Element {
    fn combine(self, value: Self, reduction: Reduction) -> Self;
}

macro_rules! combine_int {
    ($($ty:ty),*) => {$(
        impl Combine for $ty {
            fn combine(self, value: Self, reduction: Reduction) -> Self {
                match reduction {
                    Reduction::Assign => value,
                    Reduction::Add => self.wrapping_add(value),
                    Reduction::Mul => self.wrapping_mul(value),
                    Reduction::Min => self.min(value),
                    Reduction::Max => self.max(value),
                }
            }
        }
    )*};
}

macro_rules! combine_float {
    ($($ty:ty),*) => {$(
        impl Combine for $ty {
            fn combine(self, value: Self, reduction: Reduction) -> Self {
                // The update wins only when it ranks strictly below (above) the value, with
                // `-0.0` below `+0.0`; a NaN ranks nowhere, so it never replaces a value.
                let ranks_below = |a: Self, b: Self| {
                    a < b || (a == b && a.is_sign_negative() && !b.is_sign_negative())
                };
                match reduction {
                    Reduction::Assign => value,
                    Reduction::Add => self + value,
                    Reduction::Mul => self * value,
                    Reduction::Min => if ranks_below(value, self) { value } else { self },
                    Reduction::Max => if ranks_below(self, value) { value } else { self },
                }
            }
        }
    )*};
}

combine_int!(i8, i16, i32, i64, u8, u16, u32, u64);
combine_float!(f16, bf16, f32, f64);

/// A copy of `input` with the rows of `updates` applied in row order by `reduction`.
fn apply<T: Combine>(
    input: &TensorData,
    updates: &TensorData,
    targets: &[Option<usize>],
    slice: usize,
    reduction: Reduction,
) -> TensorData {
    apply_with(input, updates, targets, slice, |element: T, update| {
        element.combine(update, reduction)
    })
}

/// A copy of `input` with the rows of `updates` applied in row order: each element targeted
/// becomes `step(element, update)`.
fn apply_with<T: burn::tensor::Element>(
    input: &TensorData,
    updates: &TensorData,
    targets: &[Option<usize>],
    slice: usize,
    step: impl Fn(T, T) -> T,
) -> TensorData {
    let input_values = input.as_slice::<T>().expect("input dtype");
    let mut out = reserve(OPERATOR, "the output", input_values.len());
    out.extend_from_slice(input_values);
    let updates = updates
        .as_slice::<T>()
        .expect("updates have the input's dtype");
    for (row, target) in targets.iter().enumerate() {
        let Some(target) = target else { continue };
        let rows = out[target * slice..(target + 1) * slice].iter_mut();
        for (element, &update) in rows.zip(&updates[row * slice..(row + 1) * slice]) {
            *element = step(*element, update);
        }
    }
    TensorData::new(out, input.shape().clone())
}

/// A float type whose deterministic sums are exact ([`exact_sum`]): its values as `f32` bits
/// (exact) and back from the bits of its own format.
trait ExactTerm: Copy + burn::tensor::Element {
    const FORMAT: Format;
    fn term(self) -> u32;
    fn from_format_bits(bits: u32) -> Self;
}

impl ExactTerm for f32 {
    const FORMAT: Format = exact_sum::F32;
    fn term(self) -> u32 {
        self.to_bits()
    }
    fn from_format_bits(bits: u32) -> Self {
        f32::from_bits(bits)
    }
}

impl ExactTerm for f16 {
    const FORMAT: Format = exact_sum::F16;
    fn term(self) -> u32 {
        self.to_f32().to_bits()
    }
    fn from_format_bits(bits: u32) -> Self {
        f16::from_bits(bits as u16)
    }
}

impl ExactTerm for bf16 {
    const FORMAT: Format = exact_sum::BF16;
    fn term(self) -> u32 {
        self.to_f32().to_bits()
    }
    fn from_format_bits(bits: u32) -> Self {
        bf16::from_bits(bits as u16)
    }
}

/// Deterministic float `Mul` on 16- and 32-bit floats: each targeted element's value and
/// updates (in row order) multiply in a tree fixed by where the updates lie among the rows
/// sorted by target, rounded once
/// ([`exact_product::tree_product`]), or in row order, each step rounded once
/// ([`exact_sum::round_product`]), where the tree's rounding is uncertain.
fn apply_product<T: ExactTerm>(
    input: &TensorData,
    updates: &TensorData,
    targets: &[Option<usize>],
    slice: usize,
) -> TensorData {
    let input_values = input.as_slice::<T>().expect("input dtype");
    let updates = updates
        .as_slice::<T>()
        .expect("updates have the input's dtype");
    let mut out = reserve(OPERATOR, "the output", input_values.len());
    out.extend_from_slice(input_values);
    // Each target's rows, in row order.
    let mut rows: Vec<(usize, usize)> = targets
        .iter()
        .enumerate()
        .filter_map(|(row, target)| target.map(|target| (target, row)))
        .collect();
    rows.sort_by_key(|&(target, _)| target);
    let mut terms = Vec::new();
    // Each group's first sorted position among every target's rows.
    let mut start = 0;
    for group in rows.chunk_by(|a, b| a.0 == b.0) {
        let target = group[0].0;
        for column in 0..slice {
            let element = target * slice + column;
            terms.clear();
            terms.push(input_values[element].term());
            terms.extend(
                group
                    .iter()
                    .map(|&(_, row)| updates[row * slice + column].term()),
            );
            out[element] = match exact_product::tree_product(&terms, start, T::FORMAT) {
                Some(bits) => T::from_format_bits(bits),
                None => terms[1..]
                    .iter()
                    .fold(input_values[element], |acc: T, &term| {
                        T::from_format_bits(exact_sum::round_product(acc.term(), term, T::FORMAT))
                    }),
            };
        }
        start += group.len();
    }
    TensorData::new(out, input.shape().clone())
}

/// Deterministic float `Add`: each element becomes the exact sum of its value and its updates,
/// rounded once (see [`exact_sum`]); elements no update targets keep their bits.
fn apply_exact_sum<T: ExactTerm>(
    input: &TensorData,
    updates: &TensorData,
    targets: &[Option<usize>],
    slice: usize,
) -> TensorData {
    let input_values = input.as_slice::<T>().expect("input dtype");
    let updates = updates
        .as_slice::<T>()
        .expect("updates have the input's dtype");
    let mut sums = reserve(OPERATOR, "the sums", input_values.len());
    sums.resize(input_values.len(), None::<Sum>);
    for (row, target) in targets.iter().enumerate() {
        let Some(target) = target else { continue };
        let elements = target * slice..(target + 1) * slice;
        for (element, &update) in elements.zip(&updates[row * slice..(row + 1) * slice]) {
            sums[element]
                .get_or_insert_with(|| {
                    let mut sum = Sum::default();
                    sum.add(input_values[element].term(), T::FORMAT);
                    sum
                })
                .add(update.term(), T::FORMAT);
        }
    }
    let mut out = reserve(OPERATOR, "the output", input_values.len());
    out.extend(
        input_values
            .iter()
            .zip(&sums)
            .map(|(&value, sum)| match sum {
                Some(sum) => T::from_format_bits(sum.round(T::FORMAT)),
                None => value,
            }),
    );
    TensorData::new(out, input.shape().clone())
}

/// `input` with `updates` scattered at `indices` (`[..., k]`): the rows of `updates` (its
/// elements in groups of the slice's size) go to the slices the index tuples address in the
/// first `k` of the last `input_dims` dimensions of `input` (the leading others have size 1).
/// Rows apply in row order (so the latest duplicate wins an `Assign`); with `deterministic`,
/// a float `Add` on 16- and 32-bit floats is [`apply_exact_sum`]'s, a float `Mul` on them
/// [`apply_product`]'s, and `f64` results make every NaN the canonical one.
pub(crate) fn scatter_nd(
    input: &TensorData,
    indices: &TensorData,
    updates: &TensorData,
    reduction: Reduction,
    out_of_bounds: OutOfBounds,
    input_dims: usize,
    deterministic: bool,
) -> TensorData {
    let k = *indices.shape().last().expect("indices have a rank");
    let shape = input.shape();
    let (dims, slice) = indexed_dims(shape, input_dims, k);
    let targets = target_slices(
        &index_values(indices),
        dims,
        out_of_bounds == OutOfBounds::Clamp,
    );
    if reduction == Reduction::Assign {
        // Only bits move: works for every dtype, bool included.
        let bytes = input.dtype().size() * slice;
        let mut raw = reserve(OPERATOR, "the output", input.as_bytes().len());
        raw.extend_from_slice(input.as_bytes());
        let updates = updates.as_bytes();
        for (row, target) in targets.iter().enumerate() {
            if let Some(target) = target {
                raw[target * bytes..(target + 1) * bytes]
                    .copy_from_slice(&updates[row * bytes..(row + 1) * bytes]);
            }
        }
        return TensorData::from_bytes_vec(raw, shape.clone(), input.dtype());
    }
    if deterministic {
        let (input, updates, targets) = (input, updates, targets.as_slice());
        match (reduction, input.dtype()) {
            (Reduction::Add, DType::F16) => {
                return apply_exact_sum::<f16>(input, updates, targets, slice);
            }
            (Reduction::Add, DType::BF16) => {
                return apply_exact_sum::<bf16>(input, updates, targets, slice);
            }
            (Reduction::Add, DType::F32) => {
                return apply_exact_sum::<f32>(input, updates, targets, slice);
            }
            (Reduction::Mul, DType::F16) => {
                return apply_product::<f16>(input, updates, targets, slice);
            }
            (Reduction::Mul, DType::BF16) => {
                return apply_product::<bf16>(input, updates, targets, slice);
            }
            (Reduction::Mul, DType::F32) => {
                return apply_product::<f32>(input, updates, targets, slice);
            }
            (Reduction::Add | Reduction::Mul, DType::F64) => {
                // In row order, as the kernels' walk; any NaN result is the canonical one.
                return apply_with(input, updates, targets, slice, |element: f64, update| {
                    let value = element.combine(update, reduction);
                    if value.is_nan() { f64::NAN } else { value }
                });
            }
            _ => {}
        }
    }
    let run = match input.dtype() {
        DType::I8 => apply::<i8>,
        DType::I16 => apply::<i16>,
        DType::I32 => apply::<i32>,
        DType::I64 => apply::<i64>,
        DType::U8 => apply::<u8>,
        DType::U16 => apply::<u16>,
        DType::U32 => apply::<u32>,
        DType::U64 => apply::<u64>,
        DType::F16 => apply::<f16>,
        DType::BF16 => apply::<bf16>,
        DType::F32 => apply::<f32>,
        DType::F64 => apply::<f64>,
        dtype => panic!(
            "ScatterND: {reduction:?} on {dtype:?} data; the tensor extension traits refuse it"
        ),
    };
    run(input, updates, &targets, slice, reduction)
}

/// ScatterND's adjoint for the updates: the slices of `input` that the index tuples of
/// `indices` (`[..., k]`) address, resolved as [`scatter_nd`] resolves them (in the last
/// `input_dims` dimensions), row after row in an output of `shape`; a skipped tuple's row is
/// zeros.
pub(crate) fn gather_nd(
    input: &TensorData,
    indices: &TensorData,
    out_of_bounds: OutOfBounds,
    shape: &[usize],
    input_dims: usize,
) -> TensorData {
    let k = *indices.shape().last().expect("indices have a rank");
    let (dims, slice) = indexed_dims(input.shape(), input_dims, k);
    let bytes = input.dtype().size() * slice;
    let targets = target_slices(
        &index_values(indices),
        dims,
        out_of_bounds == OutOfBounds::Clamp,
    );
    let source = input.as_bytes();
    let len = targets.len().saturating_mul(bytes);
    let mut raw = reserve("ScatterND gradient", "the gathered slices", len);
    raw.resize(len, 0u8);
    // An empty slice (`bytes == 0`) leaves `raw` empty; `max(1)` only keeps the chunk size legal.
    for (row, target) in raw.chunks_exact_mut(bytes.max(1)).zip(&targets) {
        if let Some(target) = target {
            row.copy_from_slice(&source[target * bytes..(target + 1) * bytes]);
        }
    }
    TensorData::from_bytes_vec(raw, shape.to_vec(), input.dtype())
}
