//! BitCount, NonZeroCoordinates and Compress.

use burn::tensor::{Bool, DType, Tensor};
use burn_dml_ops::prelude::*;

use super::{Devices, check, holds, is_error, same};
use crate::inputs::{Rng, edgy_floats, float_tensor, int_tensor, random_i32, sparse_floats};
use crate::report::Report;

/// Sizes of the random inputs: a few elements, a thousand, a million and 2^22.
const SIZES: [usize; 4] = [7, 1000, 1 << 20, 1 << 22];

pub async fn run(devices: &Devices, report: &mut Report) {
    bit_count(devices, report).await;
    nonzero(devices, report).await;
    compress(devices, report).await;
}

async fn bit_count(devices: &Devices, report: &mut Report) {
    let gpu = &devices.gpu;
    check!(
        report,
        "bit_count: the spec's examples (f32 1.0, -0.0; i32 -1; u32 123, 456, 789)".into(),
        async {
            let floats = float_tensor(&[1.0, -0.0], [2], DType::F32, gpu);
            holds("f32", floats.bit_count(), &[7, 1]).await?;
            let ints = int_tensor(&[-1, 0, 5], [3], DType::I32, gpu);
            holds("i32", ints.bit_count(), &[32, 0, 2]).await?;
            let unsigned = int_tensor(&[0, 123, 456, 789], [2, 2], DType::U32, gpu);
            holds("u32", unsigned.bit_count(), &[0, 6, 4, 5]).await
        }
    );
    if gpu.supports_dtype(DType::F16) {
        check!(report, "bit_count: f16 1.0 -> 4".into(), async {
            holds(
                "f16",
                float_tensor(&[1.0], [1], DType::F16, gpu).bit_count(),
                &[4],
            )
            .await
        });
    }
    let mut rng = Rng::new(1);
    for len in SIZES {
        let bits: Vec<f32> = (0..len)
            .map(|_| f32::from_bits(rng.next() as u32))
            .collect();
        for dtype in devices.float_dtypes() {
            check!(
                report,
                format!("bit_count: {dtype:?} [{len}] of random bits"),
                async {
                    let on = |device| float_tensor(&bits, [len], dtype, device).bit_count();
                    same("counts", on(gpu), on(&devices.cpu)).await
                }
            );
        }
        let ints = random_i32(&mut rng, len);
        check!(
            report,
            format!("bit_count: I32 [{len}] of random bits"),
            async {
                let on = |device| int_tensor(&ints, [len], DType::I32, device).bit_count();
                same("counts", on(gpu), on(&devices.cpu)).await
            }
        );
    }
    check!(
        report,
        "bit_count: an unsupported output dtype is an error".into(),
        async {
            let ints = int_tensor(&[1, 2], [2], DType::I32, gpu);
            match ints.bit_count_as(burn::tensor::IntDType::U8) {
                Ok(counts) => holds("u8 counts", counts, &[1, 1]).await,
                Err(_) => Ok(()),
            }
        }
    );
}

async fn nonzero(devices: &Devices, report: &mut Report) {
    let (gpu, cpu) = (&devices.gpu, &devices.cpu);
    check!(
        report,
        "nonzero_coordinates: the spec's example ([1, 1, 2, 4] f32, width 3)".into(),
        async {
            let values = [1.0, 0.0, 0.0, 2.0, -0.0, 3.5, 0.0, -5.2];
            let x = float_tensor(&values, [1, 1, 2, 4], DType::F32, gpu);
            let options = NonZeroOptions {
                width: Some(3),
                ..Default::default()
            };
            let found = x
                .nonzero_coordinates_with(options)
                .map_err(|err| err.to_string())?;
            if found.count_async().await != 4 {
                return Err(format!("count {}", found.count_async().await));
            }
            let exact = found.into_exact_async().await;
            holds("coordinates", exact, &[0, 0, 0, 0, 0, 3, 0, 1, 1, 0, 1, 3]).await
        }
    );
    check!(
        report,
        "nonzero_coordinates: a width below the effective rank is an error".into(),
        async {
            let x = float_tensor(&[1.0; 4], [2, 2], DType::F32, gpu);
            let options = NonZeroOptions {
                width: Some(1),
                ..Default::default()
            };
            is_error("width 1 of [2, 2]", x.nonzero_coordinates_with(options))
        }
    );
    let mut rng = Rng::new(2);
    for (rows, columns, density) in [(1, 1000, 0.5), (64, 1000, 0.1), (4096, 1024, 0.01)] {
        let values = sparse_floats(&mut rng, rows * columns, density);
        for dtype in devices.float_dtypes() {
            check!(
                report,
                format!("nonzero_coordinates: {dtype:?} [{rows}, {columns}] at density {density}"),
                async {
                    let on = |device| float_tensor(&values, [rows, columns], dtype, device);
                    compare_nonzero(on(gpu).nonzero_coordinates(), on(cpu).nonzero_coordinates())
                        .await
                }
            );
        }
    }
    let values = edgy_floats(&mut rng, 1 << 16);
    check!(
        report,
        "nonzero_coordinates: Bool [16, 16, 16, 16] made on the device by a comparison".into(),
        async {
            let on = |device| -> Tensor<4, Bool> {
                float_tensor(&values, [16, 16, 16, 16], DType::F32, device).greater_elem(0.5)
            };
            compare_nonzero(on(gpu).nonzero_coordinates(), on(cpu).nonzero_coordinates()).await
        }
    );
    let ints: Vec<i64> = (0..60_000).map(|_| rng.below(3) as i64 - 1).collect();
    check!(
        report,
        "nonzero_coordinates: I32 [10, 20, 300] of -1, 0 and 1".into(),
        async {
            let on = |device| int_tensor(&ints, [10, 20, 300], DType::I32, device);
            compare_nonzero(on(gpu).nonzero_coordinates(), on(cpu).nonzero_coordinates()).await
        }
    );
}

/// Compares two NonZeroCoordinates results through their async exact forms.
async fn compare_nonzero(
    actual: NonZeroCoordinates,
    expected: NonZeroCoordinates,
) -> Result<(), String> {
    let (count, reference) = (actual.count_async().await, expected.count_async().await);
    if count != reference {
        return Err(format!("count {count}, the reference's {reference}"));
    }
    same(
        "coordinates",
        actual.into_exact_async().await,
        expected.into_exact_async().await,
    )
    .await
}

async fn compress(devices: &Devices, report: &mut Report) {
    let (gpu, cpu) = (&devices.gpu, &devices.cpu);
    let mut rng = Rng::new(3);
    for len in [1000, 1 << 20, 1 << 22] {
        let values = edgy_floats(&mut rng, len);
        let mask: Vec<i64> = (0..len).map(|_| i64::from(rng.chance(0.3))).collect();
        for dtype in devices.float_dtypes() {
            check!(
                report,
                format!("compress: {dtype:?} [{len}] by a random mask"),
                async {
                    let on = |device| {
                        let mask = int_tensor(&mask, [len], DType::I32, device).bool();
                        float_tensor(&values, [len], dtype, device).compress(mask)
                    };
                    compare_compressed(on(gpu), on(cpu)).await
                }
            );
        }
    }
    let values = edgy_floats(&mut rng, 1 << 18);
    check!(
        report,
        "compress: F32 [512, 512] by a mask made on the device (x < 0)".into(),
        async {
            let on = |device| {
                let x = float_tensor(&values, [512, 512], DType::F32, device);
                x.clone().compress(x.lower_elem(0.0))
            };
            compare_compressed(on(gpu), on(cpu)).await
        }
    );
    let ints = random_i32(&mut rng, 64 * 1000 * 4);
    let condition: Vec<i64> = (0..900).map(|_| i64::from(rng.chance(0.5))).collect();
    check!(
        report,
        "compress_axis: I32 [64, 1000, 4] along axis 1 by a condition of 900".into(),
        async {
            let on = |device| {
                let condition = int_tensor(&condition, [900], DType::I32, device).bool();
                int_tensor(&ints, [64, 1000, 4], DType::I32, device).compress_axis(1, condition)
            };
            compare_compressed(on(gpu), on(cpu)).await
        }
    );
    check!(
        report,
        "compress_axis: a condition longer than the axis is an error".into(),
        async {
            let condition = int_tensor(&[1, 0, 1], [3], DType::I32, gpu).bool();
            let x = float_tensor(&[1.0, 2.0], [2], DType::F32, gpu);
            is_error("3 of 2", x.try_compress_axis(0, condition))
        }
    );
}

/// Compares two Compress results through their async exact forms.
async fn compare_compressed<const D: usize, K>(
    actual: Compressed<D, K>,
    expected: Compressed<D, K>,
) -> Result<(), String>
where
    K: burn::tensor::kind::Basic,
{
    let (count, reference) = (actual.count_async().await, expected.count_async().await);
    if count != reference {
        return Err(format!("count {count}, the reference's {reference}"));
    }
    same(
        "values",
        actual.into_exact_async().await,
        expected.into_exact_async().await,
    )
    .await
}
