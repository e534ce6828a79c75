//! ScatterND: the spec's examples, every reduction (float `Add`/`Mul` deterministic, which the
//! reference matches bit for bit), the out-of-range policies, the async `Error` check and the
//! validation errors.

use burn::tensor::{DType, Float, Int, Tensor};
use burn_dml_ops::prelude::*;

use super::{Devices, check, holds, is_error, same};
use crate::inputs::{Rng, float_tensor, int_tensor, plain_floats, random_i32};
use crate::report::Report;

pub async fn run(devices: &Devices, report: &mut Report) {
    examples(devices, report).await;
    random(devices, report).await;
    errors(devices, report).await;
}

async fn examples(devices: &Devices, report: &mut Report) {
    let gpu = &devices.gpu;
    let input = || int_tensor(&[1, 2, 3, 4, 5, 6, 7, 8], [8], DType::I32, gpu);
    let updates = || int_tensor(&[9, 10, 11, 12], [4], DType::I32, gpu);
    let expected = [1, 11, 3, 10, 9, 6, 7, 12];
    for (sign, tuples) in [("positive", [4, 3, 1, 7]), ("negative", [-4, -5, -7, -1])] {
        check!(
            report,
            format!("scatter_nd: the spec's example, {sign} indices"),
            async {
                let indices = int_tensor(&tuples, [4, 1], DType::I32, gpu);
                holds(
                    "output",
                    input().scatter_nd_update(indices, updates()),
                    &expected,
                )
                .await
            }
        );
    }
    check!(
        report,
        "scatter_nd: the spec's example, Add of duplicates".into(),
        async {
            let zeros = Tensor::<2, Int>::zeros([2, 3], gpu);
            let indices = int_tensor(&[0, 1, 0, 1], [2, 2], DType::I32, gpu);
            let updates = int_tensor(&[5, 3], [2], DType::I32, gpu);
            let options = ScatterNdOptions {
                reduction: Reduction::Add,
                ..Default::default()
            };
            let output = zeros
                .try_scatter_nd(indices, updates, options)
                .map_err(|err| err.to_string())?;
            holds("output", output, &[0, 8, 0, 0, 0, 0]).await
        }
    );
}

/// The index patterns of the random cases: every target once, a few hot targets, and tuples
/// partly out of range (negative ones wrapping).
#[derive(Clone, Copy, Debug)]
enum Pattern {
    Unique,
    Hot,
    OutOfRange,
}

/// `rows` index tuples of one coordinate into `targets` slices, by `pattern`.
fn indices(rng: &mut Rng, rows: usize, targets: usize, pattern: Pattern) -> Vec<i64> {
    match pattern {
        Pattern::Unique => {
            // A seeded shuffle of the targets, cut to `rows`.
            let mut all: Vec<i64> = (0..targets as i64).collect();
            for i in (1..all.len()).rev() {
                all.swap(i, rng.below(i as u64 + 1) as usize);
            }
            all.truncate(rows);
            all
        }
        Pattern::Hot => (0..rows).map(|_| rng.below(7) as i64).collect(),
        Pattern::OutOfRange => (0..rows)
            .map(|_| rng.below(4 * targets as u64) as i64 - 2 * targets as i64)
            .collect(),
    }
}

async fn random(devices: &Devices, report: &mut Report) {
    let (gpu, cpu) = (&devices.gpu, &devices.cpu);
    let mut rng = Rng::new(4);
    // (targets, columns, rows): up to 2^22 elements of input.
    let sizes = [(1000, 1, 3000), (4096, 64, 4096), (65_536, 64, 20_000)];
    let reductions = [
        Reduction::Assign,
        Reduction::Add,
        Reduction::Mul,
        Reduction::Min,
        Reduction::Max,
    ];
    for (targets, columns, rows) in sizes {
        let input = plain_floats(&mut rng, targets * columns);
        for pattern in [Pattern::Unique, Pattern::Hot, Pattern::OutOfRange] {
            let rows = match pattern {
                Pattern::Unique => rows.min(targets),
                _ => rows,
            };
            let tuples = indices(&mut rng, rows, targets, pattern);
            let updates = plain_floats(&mut rng, rows * columns);
            for reduction in reductions {
                // Assign of duplicates picks any candidate unless deterministic.
                let deterministic = !matches!(pattern, Pattern::Unique);
                let options = ScatterNdOptions {
                    reduction,
                    deterministic,
                    ..Default::default()
                };
                check!(
                    report,
                    format!(
                        "scatter_nd: F32 [{targets}, {columns}], {rows} rows {pattern:?}, \
                         {reduction:?}, deterministic {deterministic}"
                    ),
                    async {
                        let on = |device| -> Result<Tensor<2, Float>, String> {
                            float_tensor(&input, [targets, columns], DType::F32, device)
                                .try_scatter_nd(
                                    int_tensor(&tuples, [rows, 1], DType::I32, device),
                                    float_tensor(&updates, [rows, columns], DType::F32, device),
                                    options.clone(),
                                )
                                .map_err(|err| err.to_string())
                        };
                        same("output", on(gpu)?, on(cpu)?).await
                    }
                );
            }
        }
    }
    // Integer reductions are exact in any order: the racy kernels must match too.
    let (targets, columns, rows) = (4096, 16, 50_000);
    let input = random_i32(&mut rng, targets * columns);
    let tuples = indices(&mut rng, rows, targets, Pattern::Hot);
    let updates: Vec<i64> = (0..rows * columns)
        .map(|_| rng.below(2001) as i64 - 1000)
        .collect();
    for reduction in [Reduction::Add, Reduction::Min, Reduction::Max] {
        check!(
            report,
            format!("scatter_nd: I32 [{targets}, {columns}], {rows} rows Hot, {reduction:?}"),
            async {
                let options = ScatterNdOptions {
                    reduction,
                    ..Default::default()
                };
                let on = |device| -> Result<Tensor<2, Int>, String> {
                    int_tensor(&input, [targets, columns], DType::I32, device)
                        .try_scatter_nd(
                            int_tensor(&tuples, [rows, 1], DType::I32, device),
                            int_tensor(&updates, [rows, columns], DType::I32, device),
                            options.clone(),
                        )
                        .map_err(|err| err.to_string())
                };
                same("output", on(gpu)?, on(cpu)?).await
            }
        );
    }
    if gpu.supports_dtype(DType::F16) {
        let input = plain_floats(&mut rng, 1000 * 8);
        let tuples = indices(&mut rng, 5000, 1000, Pattern::Hot);
        let updates = plain_floats(&mut rng, 5000 * 8);
        for reduction in [Reduction::Add, Reduction::Mul, Reduction::Max] {
            check!(
                report,
                format!("scatter_nd: F16 [1000, 8], 5000 rows Hot, {reduction:?}, deterministic"),
                async {
                    let options = ScatterNdOptions {
                        reduction,
                        deterministic: true,
                        ..Default::default()
                    };
                    let on = |device| -> Result<Tensor<2, Float>, String> {
                        float_tensor(&input, [1000, 8], DType::F16, device)
                            .try_scatter_nd(
                                int_tensor(&tuples, [5000, 1], DType::I32, device),
                                float_tensor(&updates, [5000, 8], DType::F16, device),
                                options.clone(),
                            )
                            .map_err(|err| err.to_string())
                    };
                    same("output", on(gpu)?, on(cpu)?).await
                }
            );
        }
    }
}

async fn errors(devices: &Devices, report: &mut Report) {
    let gpu = &devices.gpu;
    let input = || float_tensor(&[0.0; 6], [2, 3], DType::F32, gpu);
    check!(
        report,
        "scatter_nd: OutOfBounds::Error through the async check, in range and out of it".into(),
        async {
            let options = ScatterNdOptions {
                out_of_bounds: OutOfBounds::Error,
                ..Default::default()
            };
            let updates = || float_tensor(&[1.0, 2.0, 3.0], [1, 3], DType::F32, gpu);
            let inside = int_tensor(&[-1], [1, 1], DType::I32, gpu);
            let output = input()
                .try_scatter_nd_async(inside, updates(), options.clone())
                .await
                .map_err(|err| format!("in range: {err}"))?;
            holds("in range", output.int(), &[0, 0, 0, 1, 2, 3]).await?;
            let outside = int_tensor(&[2], [1, 1], DType::I32, gpu);
            is_error(
                "index 2 of 2 rows",
                input()
                    .try_scatter_nd_async(outside, updates(), options)
                    .await,
            )
        }
    );
    check!(
        report,
        "scatter_nd: updates of the wrong shape are an error".into(),
        async {
            let indices = int_tensor(&[0], [1, 1], DType::I32, gpu);
            let updates = float_tensor(&[1.0, 2.0], [1, 2], DType::F32, gpu);
            is_error(
                "updates [1, 2] for rows of 3",
                input().try_scatter_nd(indices, updates, ScatterNdOptions::default()),
            )
        }
    );
    check!(
        report,
        "scatter_nd: OutOfBounds::Clamp clamps".into(),
        async {
            let options = ScatterNdOptions {
                out_of_bounds: OutOfBounds::Clamp,
                ..Default::default()
            };
            let indices = int_tensor(&[5], [1, 1], DType::I32, gpu);
            let updates = float_tensor(&[1.0, 2.0, 3.0], [1, 3], DType::F32, gpu);
            let output = input()
                .try_scatter_nd(indices, updates, options)
                .map_err(|err| err.to_string())?;
            holds("output", output.int(), &[0, 0, 0, 1, 2, 3]).await
        }
    );
}
