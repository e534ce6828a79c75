//! Prints which input and output dtypes BitCount accepts on a device, which input dtypes
//! NonZeroCoordinates accepts (contiguous and as a transposed view), which data dtypes ScatterND
//! accepts with each reduction, and which dtypes Compress selects (elements and rows), as
//! Markdown tables, by running each and comparing with the expected results (for ScatterND and
//! Compress, Flex's).
//!
//! `cargo run --example dtype_support` (the default device: wgpu with WGSL), or with
//! `--features vulkan -- vulkan` for the SPIR-V path.

use burn::tensor::kind::Basic;
use burn::tensor::{Bool, DType, Device, DeviceKind, Float, Int, IntDType, Tensor, TensorData};
use burn_dml_ops::prelude::*;

const INTS: [DType; 8] = [
    DType::U8,
    DType::U16,
    DType::U32,
    DType::U64,
    DType::I8,
    DType::I16,
    DType::I32,
    DType::I64,
];
const FLOATS: [DType; 4] = [DType::F16, DType::BF16, DType::F32, DType::F64];

/// `[0, 1, all ones]` of `dtype`'s width, with the expected counts.
fn sample(dtype: DType) -> (TensorData, Vec<i64>) {
    let bits = dtype.size() as i64 * 8;
    let mut bytes = vec![0u8; dtype.size()];
    // 1 (or the float whose encoding is 1: the smallest subnormal), then all ones.
    bytes.extend((0..dtype.size()).map(|i| u8::from(i == 0)));
    bytes.extend(std::iter::repeat_n(0xFF, dtype.size()));
    (
        TensorData::from_bytes_vec(bytes, [3], dtype),
        vec![0, 1, bits],
    )
}

/// `data`, of any integer dtype, as i64 values.
fn as_i64(data: TensorData) -> Vec<i64> {
    data.convert_dtype(DType::I64)
        .try_to_vec::<i64>()
        .expect("an Int tensor")
}

/// A table cell: "yes" when `actual` is `expected`, the values when they differ, "error" when the
/// call was refused.
fn verdict(actual: Result<Vec<i64>, DmlOpsError>, expected: &[i64]) -> String {
    match actual {
        Ok(actual) if actual == expected => "yes".into(),
        Ok(actual) => format!("WRONG {actual:?}"),
        Err(_) => "error".into(),
    }
}

fn run(device: &Device, input: DType, out: IntDType) -> Result<Vec<i64>, DmlOpsError> {
    let (data, _) = sample(input);
    let result = if input.is_float() {
        Tensor::<1, Float>::from_data(data, (device, input)).bit_count_as(out)
    } else {
        Tensor::<1, Int>::from_data(data, (device, input)).bit_count_as(out)
    }?;
    Ok(as_i64(result.into_data()))
}

fn cell(device: &Device, input: DType, out: IntDType) -> String {
    let (_, expected) = sample(input);
    verdict(run(device, input, out), &expected)
}

/// The exact coordinates of the non-zero elements of `[0, 1, all ones]` twice, shaped `[2, 3]`,
/// or of its transpose.
fn nonzero(device: &Device, input: DType, transposed: bool) -> Result<Vec<i64>, DmlOpsError> {
    let (data, _) = sample(input);
    let mut bytes = data.as_bytes().to_vec();
    bytes.extend_from_slice(data.as_bytes());
    let data = TensorData::from_bytes_vec(bytes, [2, 3], input);
    let result = if input.is_float() {
        let x = Tensor::<2, Float>::from_data(data, (device, input));
        let x = if transposed { x.transpose() } else { x };
        x.nonzero_coordinates_with(NonZeroOptions::default())
    } else {
        let x = Tensor::<2, Int>::from_data(data, (device, input));
        let x = if transposed { x.transpose() } else { x };
        x.nonzero_coordinates_with(NonZeroOptions::default())
    }?;
    Ok(as_i64(result.into_exact().into_data()))
}

fn nonzero_cell(device: &Device, input: DType, transposed: bool) -> String {
    // Elements 1 and 2 of each row are non-zero (1, or the smallest subnormal; all ones, or NaN).
    let expected: Vec<i64> = if transposed {
        vec![1, 0, 1, 1, 2, 0, 2, 1]
    } else {
        vec![0, 1, 0, 2, 1, 1, 1, 2]
    };
    verdict(nonzero(device, input, transposed), &expected)
}

/// NonZeroCoordinates of `[0, 3, 0, 5, 7]` into `out` with a fill, compared with the exact rows.
fn nonzero_output_cell(device: &Device, out: IntDType) -> String {
    let unsigned = matches!(
        out,
        IntDType::U8 | IntDType::U16 | IntDType::U32 | IntDType::U64
    );
    let fill = if unsigned { 200 } else { -1 };
    let result = Tensor::<1, Int>::from_data([0, 3, 0, 5, 7], device).nonzero_coordinates_with(
        NonZeroOptions {
            fill: Some(fill),
            out_dtype: Some(out),
            ..Default::default()
        },
    );
    match result {
        Ok(result) => {
            let rows = as_i64(result.coordinates.into_data());
            let count = as_i64(result.count.into_data());
            if rows == [1, 3, 4, fill, fill] && count == [3] {
                "yes".into()
            } else {
                format!("WRONG {count:?} {rows:?}")
            }
        }
        Err(_) => "error".into(),
    }
}

/// ScatterND of `reduction` onto `[0, 1, .., 6]` of `dtype` with index tuples that hit
/// neighbouring elements (and, for a reduction, one element three times), as i64.
fn scatter(device: &Device, dtype: DType, reduction: Reduction) -> Result<Vec<i64>, DmlOpsError> {
    let (indices, updates): (&[i64], &[i64]) = if reduction == Reduction::Assign {
        (&[1, 2, 6, -3], &[3, 5, 7, 2])
    } else {
        (&[1, 2, 2, 6, -5, 3], &[3, 5, 2, 7, 2, 1])
    };
    let input = TensorData::new((0..7i64).collect(), [7]).convert_dtype(dtype);
    let updates = TensorData::new(updates.to_vec(), [updates.len()]).convert_dtype(dtype);
    let indices = Tensor::<2, Int>::from_data(
        TensorData::new(indices.to_vec(), [indices.len(), 1]),
        device,
    );
    let options = ScatterNdOptions {
        reduction,
        ..Default::default()
    };
    let output = if dtype.is_float() {
        Tensor::<1, Float>::from_data(input, (device, dtype))
            .try_scatter_nd(
                indices,
                Tensor::<1, Float>::from_data(updates, (device, dtype)),
                options,
            )?
            .into_data()
    } else {
        Tensor::<1, Int>::from_data(input, (device, dtype))
            .try_scatter_nd(
                indices,
                Tensor::<1, Int>::from_data(updates, (device, dtype)),
                options,
            )?
            .into_data()
    };
    Ok(as_i64(output))
}

fn scatter_cell(device: &Device, dtype: DType, reduction: Reduction) -> String {
    let expected = scatter(&Device::flex(), dtype, reduction).expect("Flex holds every dtype");
    verdict(scatter(device, dtype, reduction), &expected)
}

/// What the Compress table runs on `[0, 1, .., 5]`.
#[derive(Clone, Copy)]
enum CompressCase {
    /// The elements a mask selects, padded.
    Mask,
    /// The rows of its `[3, 2]` form that a condition selects, padded.
    Rows,
    /// The columns of its `[3, 2]` form that a condition selects, exact (`into_exact`).
    ExactColumns,
}

/// Compress of `[0, 1, .., 5]` of `dtype` as `case` says; the values as i64.
fn compress(device: &Device, dtype: DType, case: CompressCase) -> Result<Vec<i64>, DmlOpsError> {
    let data = TensorData::new((0..6i64).collect(), [6]).convert_dtype(dtype);
    let output = if dtype.is_float() {
        compress_kind(Tensor::<1, Float>::from_data(data, (device, dtype)), case)?
    } else {
        compress_kind(Tensor::<1, Int>::from_data(data, (device, dtype)), case)?
    };
    Ok(as_i64(output))
}

/// [`compress`] on a tensor of either kind.
fn compress_kind<K: Basic>(x: Tensor<1, K>, case: CompressCase) -> Result<TensorData, DmlOpsError>
where
    Tensor<1, K>: CompressExt<1, K>,
    Tensor<2, K>: CompressExt<2, K>,
{
    let device = x.device();
    let flags = |values: &[bool]| {
        Tensor::<1, Bool>::from_data(TensorData::new(values.to_vec(), [values.len()]), &device)
    };
    Ok(match case {
        CompressCase::Mask => {
            let mask = flags(&[false, true, true, false, true, true]);
            x.try_compress(mask)?.values.into_data()
        }
        CompressCase::Rows => {
            let keep = flags(&[true, false, true]);
            x.reshape([3, 2])
                .try_compress_axis(0, keep)?
                .values
                .into_data()
        }
        CompressCase::ExactColumns => {
            let keep = flags(&[false, true]);
            x.reshape([3, 2])
                .try_compress_axis(1, keep)?
                .into_exact()
                .into_data()
        }
    })
}

fn compress_cell(device: &Device, dtype: DType, case: CompressCase) -> String {
    let expected = compress(&Device::flex(), dtype, case).expect("Flex holds every dtype");
    verdict(compress(device, dtype, case), &expected)
}

fn main() {
    let device = match std::env::args().nth(1).as_deref() {
        #[cfg(feature = "vulkan")]
        Some("vulkan") => Device::vulkan(DeviceKind::default()),
        Some("flex") => Device::flex(),
        _ => Device::wgpu(DeviceKind::default()),
    };
    println!("BitCount dtype support on {device:?}\n");
    println!("| input dtype | output I32 | output U8 | output U32 | output I64 |");
    println!("|---|---|---|---|---|");
    for input in INTS.iter().chain(&FLOATS) {
        let cells: Vec<String> = [IntDType::I32, IntDType::U8, IntDType::U32, IntDType::I64]
            .into_iter()
            .map(|out| cell(&device, *input, out))
            .collect();
        println!("| {input:?} | {} |", cells.join(" | "));
    }
    println!("\nNonZeroCoordinates dtype support on {device:?} (default Int output)\n");
    println!("| input dtype | contiguous | transposed |");
    println!("|---|---|---|");
    for input in INTS.iter().chain(&FLOATS) {
        println!(
            "| {input:?} | {} | {} |",
            nonzero_cell(&device, *input, false),
            nonzero_cell(&device, *input, true)
        );
    }
    println!("\nNonZeroCoordinates output dtypes on {device:?} (I32 input, fill -1 or 200)\n");
    println!("| output dtype | result |");
    println!("|---|---|");
    for out in [
        IntDType::U8,
        IntDType::U16,
        IntDType::U32,
        IntDType::U64,
        IntDType::I8,
        IntDType::I16,
        IntDType::I32,
        IntDType::I64,
    ] {
        println!("| {out:?} | {} |", nonzero_output_cell(&device, out));
    }
    println!("\nScatterND dtype support on {device:?} (data dtype; I32 indices)\n");
    println!("| data dtype | Assign | Add | Mul | Min | Max |");
    println!("|---|---|---|---|---|---|");
    for dtype in INTS.iter().chain(&FLOATS) {
        let cells: Vec<String> = [
            Reduction::Assign,
            Reduction::Add,
            Reduction::Mul,
            Reduction::Min,
            Reduction::Max,
        ]
        .into_iter()
        .map(|reduction| scatter_cell(&device, *dtype, reduction))
        .collect();
        println!("| {dtype:?} | {} |", cells.join(" | "));
    }
    println!("\nCompress dtype support on {device:?}\n");
    println!("| dtype | elements (mask) | rows (axis 0) | exact columns (axis 1) |");
    println!("|---|---|---|---|");
    for dtype in INTS.iter().chain(&FLOATS) {
        println!(
            "| {dtype:?} | {} | {} | {} |",
            compress_cell(&device, *dtype, CompressCase::Mask),
            compress_cell(&device, *dtype, CompressCase::Rows),
            compress_cell(&device, *dtype, CompressCase::ExactColumns)
        );
    }
}
