//! TopK and the stable sort: the spec's example, rows on each side of the one-cube limit (2,048
//! and 1,024 elements) and far past it, top-k at vocabulary sizes, and the errors.

use burn::tensor::DType;
use burn_dml_ops::prelude::*;

use super::{Devices, check, holds, is_error, same};
use crate::inputs::{Rng, edgy_floats, float_tensor, int_tensor, random_i32};
use crate::report::Report;

pub async fn run(devices: &Devices, report: &mut Report) {
    let (gpu, cpu) = (&devices.gpu, &devices.cpu);
    check!(
        report,
        "top_k: the spec's example (axis 3, k 2, descending)".into(),
        async {
            let values = [0.0, 1.0, 10.0, 11.0, 3.0, 2.0, 9.0, 8.0, 4.0, 5.0, 6.0, 7.0];
            let x = float_tensor(&values, [1, 1, 3, 4], DType::F32, gpu);
            let top = x.top_k(2, 3, Order::Descending);
            holds("values", top.values.int(), &[11, 10, 9, 8, 7, 6]).await?;
            holds("indices", top.indices, &[3, 2, 2, 3, 3, 2]).await
        }
    );
    check!(
        report,
        "sort_stable: ties, signed zeros and NaN keep the spec's order".into(),
        async {
            let x = float_tensor(&[2.0, 1.0, 2.0, f32::NAN, -0.0, 0.0], [6], DType::F32, gpu);
            let sorted = x.sort_stable(0, Order::Ascending);
            holds("indices", sorted.indices, &[4, 5, 1, 0, 2, 3]).await
        }
    );
    let mut rng = Rng::new(5);
    // (sequences, length): around 1,024 and 2,048 (one cube), then the radix passes.
    let shapes = [
        (64, 1000),
        (8, 1025),
        (8, 2049),
        (4, 5000),
        (2, 65_536),
        (1, 1 << 20),
    ];
    for (rows, len) in shapes {
        let values = edgy_floats(&mut rng, rows * len);
        for dtype in devices.float_dtypes() {
            for order in [Order::Ascending, Order::Descending] {
                check!(
                    report,
                    format!("sort_stable: {dtype:?} [{rows}, {len}] {order:?}"),
                    async {
                        let on = |device| {
                            float_tensor(&values, [rows, len], dtype, device).sort_stable(-1, order)
                        };
                        compare(on(gpu), on(cpu)).await
                    }
                );
            }
        }
        let ints = random_i32(&mut rng, rows * len);
        check!(
            report,
            format!("sort_stable: I32 [{rows}, {len}] Descending"),
            async {
                let on = |device| {
                    int_tensor(&ints, [rows, len], DType::I32, device)
                        .sort_stable(-1, Order::Descending)
                };
                compare(on(gpu), on(cpu)).await
            }
        );
    }
    check!(
        report,
        "sort_stable: F32 [300, 7, 5] along axis 0".into(),
        async {
            let values = edgy_floats(&mut Rng::new(6), 300 * 35);
            let on = |device| {
                float_tensor(&values, [300, 7, 5], DType::F32, device)
                    .sort_stable(0, Order::Ascending)
            };
            compare(on(gpu), on(cpu)).await
        }
    );
    for (rows, len, k) in [(32, 32_000, 10), (1, 128_256, 50), (4, 300_000, 100)] {
        let values = edgy_floats(&mut rng, rows * len);
        check!(
            report,
            format!("top_k: F32 [{rows}, {len}], k {k}, Descending"),
            async {
                let on = |device| {
                    float_tensor(&values, [rows, len], DType::F32, device).top_k(
                        k,
                        -1,
                        Order::Descending,
                    )
                };
                compare(on(gpu), on(cpu)).await
            }
        );
    }
    check!(
        report,
        "top_k: k above the axis' length is an error".into(),
        async {
            let x = float_tensor(&[1.0, 2.0], [2], DType::F32, gpu);
            is_error("k 3 of 2", x.try_top_k(3, 0, SortOptions::default()))
        }
    );
}

/// Compares the values (bit for bit) and indices of two sorts.
async fn compare<const D: usize, K>(
    actual: Sorted<D, K>,
    expected: Sorted<D, K>,
) -> Result<(), String>
where
    K: burn::tensor::kind::Basic,
{
    same("values", actual.values, expected.values).await?;
    same("indices", actual.indices, expected.indices).await
}
