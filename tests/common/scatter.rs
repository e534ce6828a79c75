//! ScatterND's test oracle, shared by the ScatterND test files: it works on f64 values and
//! row-major strides, and resolves each index with explicit range tests (a different route from
//! the crate's wrap-then-check), returning per element the exact result of a reduction or the
//! set of candidates of an `Assign`.

use burn::tensor::{Bool, DType, Device, Tensor, TensorData};
use burn_dml_ops::prelude::*;

use super::*;

/// What the oracle expects of one output element.
#[derive(Clone, Debug)]
pub enum Expected {
    /// A reduction (or an element no update touches): exactly this value.
    Exact(f64),
    /// `Assign` with updates: any of these values.
    OneOf(Vec<f64>),
}

/// `v` as `dtype` holds it: integers wrap to their width (two's complement), floats round to
/// nearest. Every step of a reduction lands on a value of the dtype, and wrapping commutes with
/// integer sums and products, so fitting each step gives the exact wrapped result.
pub fn fit(dtype: DType, v: f64) -> f64 {
    match dtype {
        DType::U8 => v as i64 as u8 as f64,
        DType::I8 => v as i64 as i8 as f64,
        DType::U16 => v as i64 as u16 as f64,
        DType::I16 => v as i64 as i16 as f64,
        DType::U32 => v as i64 as u32 as f64,
        DType::I32 => v as i64 as i32 as f64,
        DType::F16 => half::f16::from_f32(odd_f32(v)).to_f64(),
        DType::BF16 => half::bf16::from_f32(odd_f32(v)).to_f64(),
        DType::F32 => v as f32 as f64,
        _ => v,
    }
}

/// `v` rounded to odd at `f32`'s precision: its truncation toward zero, with the last bit set
/// where that dropped anything. From there rounding to nearest in f16 or bf16 (13 and 16 bits
/// fewer) is the single rounding of `v`; `half`'s `from_f64` rounds through `f32` to nearest
/// or drops the low 32 bits first, so it misses a tie by less than those bits.
fn odd_f32(v: f64) -> f32 {
    let nearest = v as f32;
    if v.is_nan() || f64::from(nearest) == v {
        return nearest;
    }
    let bits = nearest.to_bits();
    let toward_zero = if f64::from(nearest).abs() > v.abs() {
        bits - 1
    } else {
        bits
    };
    f32::from_bits(toward_zero | 1)
}

/// The expected output of ScatterND on `input` (shape `shape`), index tuples `indices`
/// (`k` each) and `updates` (one row of `prod(shape[k..])` per tuple), for data of `dtype`.
#[allow(clippy::too_many_arguments)]
pub fn oracle(
    shape: &[usize],
    input: &[f64],
    indices: &[i64],
    k: usize,
    updates: &[f64],
    reduction: Reduction,
    clamp: bool,
    dtype: DType,
) -> Vec<Expected> {
    let strides: Vec<usize> = (0..shape.len())
        .map(|i| shape[i + 1..].iter().product())
        .collect();
    let slice: usize = shape[k..].iter().product();
    let mut out: Vec<Expected> = input.iter().map(|&v| Expected::Exact(v)).collect();
    for (row, tuple) in indices.chunks(k).enumerate() {
        let coords: Option<Vec<usize>> = tuple
            .iter()
            .zip(shape)
            .map(|(&v, &d)| oracle_index(v, d, clamp))
            .collect();
        let Some(coords) = coords else { continue };
        let base: usize = coords.iter().zip(&strides).map(|(c, s)| c * s).sum();
        for j in 0..slice {
            let update = updates[row * slice + j];
            let element = &mut out[base + j];
            *element = match (reduction, element.clone()) {
                (Reduction::Assign, Expected::OneOf(mut values)) => {
                    values.push(update);
                    Expected::OneOf(values)
                }
                (Reduction::Assign, Expected::Exact(_)) => Expected::OneOf(vec![update]),
                (Reduction::Add, Expected::Exact(v)) => Expected::Exact(fit(dtype, v + update)),
                (Reduction::Mul, Expected::Exact(v)) => Expected::Exact(fit(dtype, v * update)),
                (Reduction::Min, Expected::Exact(v)) => Expected::Exact(v.min(update)),
                (Reduction::Max, Expected::Exact(v)) => Expected::Exact(v.max(update)),
                (_, Expected::OneOf(_)) => unreachable!("only Assign collects candidates"),
            };
        }
    }
    out
}

/// Data of `dtype` (Bool: non-zero is true) from f64 values.
pub fn data(values: &[f64], shape: &[usize], dtype: DType) -> TensorData {
    match dtype {
        DType::Bool(_) => TensorData::new(
            values.iter().map(|&v| v != 0.0).collect::<Vec<_>>(),
            shape.to_vec(),
        ),
        _ => TensorData::new(values.to_vec(), shape.to_vec()).convert_dtype(dtype),
    }
}

/// Index data of `dtype`.
pub fn index_data(values: &[i64], shape: &[usize], dtype: DType) -> TensorData {
    TensorData::new(values.to_vec(), shape.to_vec()).convert_dtype(dtype)
}

/// The values of `data` as f64 (Bool: 1.0 for true).
pub fn values(data: &TensorData) -> Vec<f64> {
    match data.dtype() {
        DType::Bool(_) => data.iter::<bool>().map(|b| f64::from(b as u8)).collect(),
        _ => data.iter::<f64>().collect(),
    }
}

/// Runs `try_scatter_nd` with the ranks `D` (input), `DI` (indices), `DU` (updates).
pub fn scatter<const D: usize, const DI: usize, const DU: usize>(
    device: &Device,
    input: TensorData,
    indices: TensorData,
    updates: TensorData,
    options: ScatterNdOptions,
) -> Result<TensorData, DmlOpsError> {
    let indices = int_tensor::<DI>(indices, device);
    let output = match input.dtype() {
        DType::Bool(_) => Tensor::<D, Bool>::from_data(input, device)
            .try_scatter_nd(
                indices,
                Tensor::<DU, Bool>::from_data(updates, device),
                options,
            )
            .map(|t| t.into_data()),
        dtype if dtype.is_float() => float_tensor::<D>(input, device)
            .try_scatter_nd(indices, float_tensor::<DU>(updates, device), options)
            .map(|t| t.into_data()),
        _ => int_tensor::<D>(input, device)
            .try_scatter_nd(indices, int_tensor::<DU>(updates, device), options)
            .map(|t| t.into_data()),
    }?;
    Ok(output)
}

/// Asserts that `actual` meets `expected` element by element.
pub fn assert_meets(actual: &[f64], expected: &[Expected], context: &str) {
    assert_eq!(actual.len(), expected.len(), "{context}: output size");
    for (i, (a, e)) in actual.iter().zip(expected).enumerate() {
        let ok = match e {
            Expected::Exact(v) => a == v || (a.is_nan() && v.is_nan()),
            Expected::OneOf(vs) => vs.contains(a),
        };
        assert!(ok, "{context}: element {i} is {a}, expected {e:?}");
    }
}

/// One case on every device: input `[shape]`, indices `[rows, k]`, updates `[rows] ++
/// shape[k..]`, checked against the oracle.
#[allow(clippy::too_many_arguments)]
pub fn check_case<const D: usize>(
    shape: &[usize],
    input: &[f64],
    indices: &[i64],
    k: usize,
    updates: &[f64],
    dtype: DType,
    index_dtype: DType,
    options: ScatterNdOptions,
) {
    check_case_on::<D>(
        &devices(),
        (shape, input),
        (indices, k),
        updates,
        (dtype, index_dtype),
        options,
    );
}

/// [`check_case`] on `devices` only.
pub fn check_case_on<const D: usize>(
    devices: &[Device],
    (shape, input): (&[usize], &[f64]),
    (indices, k): (&[i64], usize),
    updates: &[f64],
    (dtype, index_dtype): (DType, DType),
    options: ScatterNdOptions,
) {
    let rows = indices.len() / k;
    let expected = oracle(
        shape,
        input,
        indices,
        k,
        updates,
        options.reduction,
        options.out_of_bounds == OutOfBounds::Clamp,
        dtype,
    );
    // Updates padded with leading 1s to the input's rank: the shape rule ignores them.
    let mut update_shape = vec![rows];
    update_shape.extend_from_slice(&shape[k..]);
    while update_shape.len() < D {
        update_shape.insert(0, 1);
    }
    assert_eq!(
        update_shape.len(),
        D,
        "updates have rank at most the input's"
    );
    for device in devices {
        let result = scatter::<D, 2, D>(
            device,
            data(input, shape, dtype),
            index_data(indices, &[rows, k], index_dtype),
            data(updates, &update_shape, dtype),
            options.clone(),
        );
        if refuses(device, dtype, options.reduction) {
            assert!(
                matches!(result, Err(DmlOpsError::UnsupportedDType { .. })),
                "{device:?}: a reduction on {dtype:?}, which the device cannot compute with"
            );
            continue;
        }
        let output =
            result.unwrap_or_else(|err| panic!("{device:?} {dtype:?}/{index_dtype:?}: {err}"));
        assert_eq!(
            output.dtype().is_bool(),
            dtype.is_bool(),
            "{device:?}: output kind"
        );
        if !dtype.is_bool() {
            assert_eq!(output.dtype(), dtype, "{device:?}: output dtype");
        }
        assert_eq!(output.shape().as_slice(), shape, "{device:?}: output shape");
        assert_meets(
            &values(&output),
            &expected,
            &format!("{device:?} {dtype:?} indices {index_dtype:?} {options:?}"),
        );
    }
}

/// Whether the crate refuses `reduction` on data of `dtype` on `device` (the spec's dtype rule as
/// the README states it): 8- and 16-bit data always runs (computed in 32 bits where the device
/// has no arithmetic for it); a 32- or 64-bit dtype the device stores needs its arithmetic for
/// a reduction; 64-bit data the device does not store (OpenGL) is held as word pairs, which
/// serve every reduction but float `Add` and `Mul`.
pub fn refuses(device: &Device, dtype: DType, reduction: Reduction) -> bool {
    if reduction == Reduction::Assign || dtype.size() <= 2 {
        false
    } else if can_store(device, dtype) {
        !can_compute(device, dtype)
    } else {
        dtype.is_float() && matches!(reduction, Reduction::Add | Reduction::Mul)
    }
}

/// Whether Burn says `device` can compute with `dtype`.
pub fn can_compute(device: &Device, dtype: DType) -> bool {
    use burn::backend::{Backend, DTypeUsage, Dispatch};
    <Dispatch as Backend>::dtype_usage(device.as_dispatch(), dtype).contains(DTypeUsage::Arithmetic)
}

pub fn reduce(reduction: Reduction) -> ScatterNdOptions {
    ScatterNdOptions {
        reduction,
        ..Default::default()
    }
}

pub fn policy(out_of_bounds: OutOfBounds) -> ScatterNdOptions {
    ScatterNdOptions {
        out_of_bounds,
        ..Default::default()
    }
}

/// 8- and 16-bit data dtypes: packed into 32-bit words where the runtime cannot bind them (all
/// of them on OpenGL; all but F16 on WGSL), typed elsewhere.
pub const NARROW_DTYPES: [DType; 6] = [
    DType::U8,
    DType::I8,
    DType::U16,
    DType::I16,
    DType::F16,
    DType::BF16,
];
