//! The check of a case whose outputs are random draws (`Multinomial`): compared with the
//! softmax of the recorded logits and with ONNX Runtime's recorded draws in distribution, by
//! chi-square tests that a wrong distribution fails.

use burn::tensor::{DType, TensorData};

use crate::{Recorded, case, devices};

/// The chi-square statistic that a right distribution exceeds with probability about 1e-6
/// (Wilson-Hilferty's approximation of the quantile), for `df` degrees of freedom.
fn critical(df: usize) -> f64 {
    let (df, z) = (df as f64, 4.753);
    let spread = 2.0 / (9.0 * df);
    df * (1.0 - spread + z * spread.sqrt()).powi(3)
}

/// Pearson's statistic of `counts` against `expected` counts, with the bins whose expected count
/// is below 5 merged (in order) into their neighbours, and its degrees of freedom.
fn goodness_of_fit(counts: &[u64], expected: &[f64]) -> (f64, usize) {
    let mut bins: Vec<(f64, f64)> = Vec::new();
    let mut pending = (0.0, 0.0);
    for (&count, &want) in counts.iter().zip(expected) {
        pending = (pending.0 + count as f64, pending.1 + want);
        if pending.1 >= 5.0 {
            bins.push(pending);
            pending = (0.0, 0.0);
        }
    }
    match bins.last_mut() {
        Some(last) => *last = (last.0 + pending.0, last.1 + pending.1),
        None => bins.push(pending),
    }
    let statistic = bins.iter().map(|(o, e)| (o - e) * (o - e) / e).sum();
    (statistic, bins.len().saturating_sub(1).max(1))
}

/// Pearson's statistic of two samples' counts over the same classes (a 2 x k table, the
/// classes neither drew left out), and its degrees of freedom.
fn homogeneity(a: &[u64], b: &[u64]) -> (f64, usize) {
    let (total_a, total_b) = (a.iter().sum::<u64>() as f64, b.iter().sum::<u64>() as f64);
    let total = total_a + total_b;
    let mut statistic = 0.0;
    let mut classes = 0usize;
    for (&x, &y) in a.iter().zip(b) {
        let column = (x + y) as f64;
        if column == 0.0 {
            continue;
        }
        classes += 1;
        for (observed, side) in [(x as f64, total_a), (y as f64, total_b)] {
            let expected = column * side / total;
            statistic += (observed - expected) * (observed - expected) / expected;
        }
    }
    (statistic, classes.saturating_sub(1).max(1))
}

fn values(data: &TensorData, dtype: DType) -> Vec<f64> {
    data.clone()
        .convert_dtype(dtype)
        .convert::<f64>()
        .try_to_vec::<f64>()
        .expect("the tensor converts to f64")
}

/// Row `row` of `draws` (`[rows, samples]`) as counts per class.
fn counts(draws: &[f64], samples: usize, row: usize, classes: usize) -> Vec<u64> {
    let mut counts = vec![0; classes];
    for &token in &draws[row * samples..(row + 1) * samples] {
        assert!(
            token >= 0.0 && (token as usize) < classes,
            "token {token} is not a class of 0..{classes}"
        );
        counts[token as usize] += 1;
    }
    counts
}

/// Runs the case `name` (one `[rows, classes]` logits input, one `[rows, samples]` output of
/// draws) twice on Flex and on wgpu, and asserts per row that no class of probability 0 is
/// drawn, that the draws fit the softmax of the logits and ONNX Runtime's recorded draws, that
/// they do not fit a uniform distribution over the drawable classes (so the test can fail), and
/// that the second run draws anew.
pub fn check_distribution(name: &str) {
    let case = case(name);
    let recorded = Recorded::load(name);
    let logits = &recorded.inputs[0];
    let [rows, classes] = logits.shape().to_vec()[..] else {
        panic!("{name}: the logits are not [rows, classes]");
    };
    let ort = &recorded.outputs[0];
    let samples = ort.shape().to_vec()[1];
    let logits = values(logits, DType::F64);
    let ort = values(ort, DType::I64);
    for device in devices() {
        let inputs = recorded
            .inputs(&device)
            .expect("float logits load everywhere");
        let first = (case.run)(&inputs).remove(0);
        let second = (case.run)(&inputs).remove(0);
        assert_eq!(
            first.shape().to_vec(),
            [rows, samples],
            "{name} on {device:?}"
        );
        let first_values = values(&first, DType::I64);
        assert_ne!(
            first_values,
            values(&second, DType::I64),
            "{name} on {device:?}: a second run drew the same tokens"
        );
        for row in 0..rows {
            let z = &logits[row * classes..(row + 1) * classes];
            let top = z.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let weights: Vec<f64> = z.iter().map(|v| (v - top).exp()).collect();
            let sum: f64 = weights.iter().sum();
            let ours = counts(&first_values, samples, row, classes);
            let theirs = counts(&ort, samples, row, classes);
            let at = format!(
                "{name} on {device:?}, row {row}: ours {ours:?}, ONNX Runtime's {theirs:?}"
            );
            for (class, (&count, &weight)) in ours.iter().zip(&weights).enumerate() {
                assert!(
                    weight > 0.0 || count == 0,
                    "{at}: class {class} is never drawable"
                );
            }
            let expected: Vec<f64> = weights.iter().map(|w| w / sum * samples as f64).collect();
            let (fit, df) = goodness_of_fit(&ours, &expected);
            assert!(
                fit < critical(df),
                "{at}: chi-square {fit} against the softmax ({df} df)"
            );
            let (alike, df) = homogeneity(&ours, &theirs);
            assert!(
                alike < critical(df),
                "{at}: chi-square {alike} against ONNX Runtime's ({df} df)"
            );
            let drawable = weights.iter().filter(|&&w| w > 0.0).count() as f64;
            let uniform: Vec<f64> = weights
                .iter()
                .map(|&w| {
                    if w > 0.0 {
                        samples as f64 / drawable
                    } else {
                        0.0
                    }
                })
                .collect();
            let (wrong, df) = goodness_of_fit(&ours, &uniform);
            assert!(
                wrong > critical(df),
                "{at}: a uniform distribution fits too ({wrong})"
            );
        }
    }
}
