//! Token sampling (`SampleExt`) on Flex (the reference) and wgpu (the kernel), Fusion included:
//! the kept sets against an independent host oracle in `f64` that follows Hugging Face's order,
//! the draw's distribution by a chi-square test, the same tokens and log-probabilities bit for
//! bit on every device, batch independence, every edge case the rules name and every error.

mod common;

use burn::tensor::{Device, Distribution, Int, Tensor, TensorData};
use burn_dml_ops::prelude::*;
use common::*;

/// `len` logits, roughly normal with standard deviation `scale` (a sum of uniforms from a
/// xorshift stream seeded by `seed`).
fn normal_logits(len: usize, scale: f32, seed: u64) -> Vec<f32> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut uniform = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 40) as f32 / (1u64 << 24) as f32
    };
    (0..len)
        .map(|_| ((0..4).map(|_| uniform()).sum::<f32>() - 2.0) * scale * 1.7)
        .collect()
}

/// [`normal_logits`] (scale 3) where, in every `period` logits, one is NaN, one -inf and the
/// next `ties` doubled and rounded to integers: ties to break, and values that never win.
fn awkward_logits(len: usize, seed: u64, period: usize, ties: usize) -> Vec<f32> {
    let mut logits = normal_logits(len, 3.0, seed);
    for (i, z) in logits.iter_mut().enumerate() {
        *z = match i % period {
            0 => f32::NAN,
            1 => f32::NEG_INFINITY,
            k if k < 2 + ties => (*z * 2.0).round(),
            _ => *z,
        };
    }
    logits
}

/// Each row's tokens and log-probabilities, read back.
fn run(
    device: &Device,
    logits: &[f32],
    vocab: usize,
    options: SamplingOptions,
    step: u64,
) -> (Vec<i64>, Vec<f32>) {
    let rows = logits.len() / vocab;
    let tensor = Tensor::<2>::from_data(TensorData::new(logits.to_vec(), [rows, vocab]), device);
    read(tensor.sample(options, step).unwrap())
}

fn read(sampled: Sampled) -> (Vec<i64>, Vec<f32>) {
    let tokens = to_i64(&sampled.tokens.into_data());
    let logprobs = sampled
        .logprobs
        .into_data()
        .convert::<f32>()
        .try_to_vec::<f32>()
        .unwrap();
    (tokens, logprobs)
}

/// The kept set of one row by Hugging Face's rules in `f64`: temperature, top-k (ties kept),
/// top-p over the sorted distribution (ties by index), min-p. The probabilities of the kept
/// tokens, renormalised, by token.
fn oracle(logits: &[f32], options: &SamplingOptions) -> Vec<(usize, f64)> {
    let t = f64::from(options.temperature);
    let mut tokens: Vec<(usize, f64)> = logits
        .iter()
        .enumerate()
        .filter(|(_, z)| !z.is_nan())
        .map(|(i, &z)| (i, f64::from(z) / t))
        .collect();
    tokens.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    if let Some(k) = options
        .top_k
        .filter(|&k| k > 0 && k < logits.len() && k <= tokens.len())
    {
        let kth = tokens[k - 1].1;
        tokens.retain(|&(_, y)| y >= kth);
    }
    let max = tokens[0].1;
    let weights = |tokens: &[(usize, f64)]| -> Vec<f64> {
        tokens.iter().map(|&(_, y)| (y - max).exp()).collect()
    };
    if let Some(p) = options.top_p.filter(|&p| p < 1.0) {
        let w = weights(&tokens);
        let total: f64 = w.iter().sum();
        let mut before = 0.0;
        let kept = w
            .iter()
            .take_while(|&&w| {
                let keep = before < f64::from(p) * total;
                before += w;
                keep
            })
            .count();
        tokens.truncate(kept.max(1));
    }
    if let Some(m) = options.min_p.filter(|&m| m > 0.0) {
        tokens.retain(|&(_, y)| (y - max).exp() >= f64::from(m));
    }
    let w = weights(&tokens);
    let total: f64 = w.iter().sum();
    tokens
        .iter()
        .zip(&w)
        .map(|(&(i, _), &w)| (i, w / total))
        .collect()
}

/// The tokens drawn over `steps` steps of `rows` identical rows (seeds 0..rows), by token.
fn draws(
    device: &Device,
    logits: &[f32],
    options: SamplingOptions,
    rows: usize,
    steps: u64,
) -> Vec<usize> {
    let vocab = logits.len();
    let batch: Vec<f32> = (0..rows).flat_map(|_| logits.iter().copied()).collect();
    let seeds: Vec<i32> = (0..rows as i32)
        .flat_map(|s| [s.wrapping_mul(7919), 0])
        .collect();
    let per_row =
        |value: f32| Tensor::<1>::from_data(TensorData::new(vec![value; rows], [rows]), device);
    let row_options = RowSampling {
        temperature: per_row(options.temperature),
        top_k: Tensor::<1, Int>::from_data(
            TensorData::new(vec![options.top_k.unwrap_or(0) as i32; rows], [rows]),
            device,
        ),
        top_p: per_row(options.top_p.unwrap_or(1.0)),
        min_p: per_row(options.min_p.unwrap_or(0.0)),
        seed: Tensor::<2, Int>::from_data(TensorData::new(seeds, [rows, 2]), device),
    };
    let mut counts = vec![0usize; vocab];
    for step in 0..steps {
        let tensor = Tensor::<2>::from_data(TensorData::new(batch.clone(), [rows, vocab]), device);
        let (tokens, _) = read(tensor.sample_rows(&row_options, step).unwrap());
        for token in tokens {
            counts[usize::try_from(token).expect("a drawn token")] += 1;
        }
    }
    counts
}

/// Pearson's chi-square of `counts` against `probabilities`, bins with an expected count under
/// 5 merged; returns the statistic and its degrees of freedom. A count outside the support
/// (probability 0) makes it infinite.
fn chi_square(counts: &[usize], probabilities: &[f64]) -> (f64, usize) {
    let n: usize = counts.iter().sum();
    let mut statistic = 0.0;
    let mut bins = 0;
    let (mut merged_count, mut merged_expected) = (0.0, 0.0);
    for (&count, &p) in counts.iter().zip(probabilities) {
        let expected = p * n as f64;
        if expected == 0.0 {
            if count > 0 {
                return (f64::INFINITY, 0);
            }
            continue;
        }
        if expected < 5.0 {
            merged_count += count as f64;
            merged_expected += expected;
            continue;
        }
        statistic += (count as f64 - expected).powi(2) / expected;
        bins += 1;
    }
    if merged_expected > 0.0 {
        statistic += (merged_count - merged_expected).powi(2) / merged_expected;
        bins += 1;
    }
    (statistic, bins - 1)
}

/// The chi-square statistic's 99.9% point for `df` degrees of freedom (Wilson-Hilferty).
fn critical(df: usize) -> f64 {
    let k = df as f64;
    let z = 3.090_232;
    k * (1.0 - 2.0 / (9.0 * k) + z * (2.0 / (9.0 * k)).sqrt()).powi(3)
}

/// The probabilities of every token of `logits` under `options`, from the oracle.
fn target(logits: &[f32], options: &SamplingOptions) -> Vec<f64> {
    let mut p = vec![0.0; logits.len()];
    for (i, q) in oracle(logits, options) {
        p[i] = q;
    }
    p
}

#[test]
fn hugging_face_fixtures_keep_their_sets() {
    let ln = |p: &[f64]| p.iter().map(|&p| p.ln() as f32).collect::<Vec<_>>();
    let cases: [(Vec<f32>, SamplingOptions, Vec<usize>); 6] = [
        // HF's top-p fixture: 0.8 keeps tokens 1, 2 and 3.
        (
            ln(&[0.15, 0.3, 0.3, 0.25]),
            SamplingOptions {
                top_p: Some(0.8),
                ..Default::default()
            },
            vec![1, 2, 3],
        ),
        // The spec's tie: [0.4, 0.2, 0.2, 0.2] at 0.5 keeps tokens 0 and 1.
        (
            ln(&[0.4, 0.2, 0.2, 0.2]),
            SamplingOptions {
                top_p: Some(0.5),
                ..Default::default()
            },
            vec![0, 1],
        ),
        // Top-k keeps ties with the k-th value.
        (
            vec![1.0, 3.0, 2.0, 3.0, 2.0],
            SamplingOptions {
                top_k: Some(3),
                ..Default::default()
            },
            vec![1, 2, 3, 4],
        ),
        // Min-p: 0.45 of the largest keeps 0.4 and 0.2 (0.2 >= 0.45 * 0.4), not 0.1.
        (
            ln(&[0.4, 0.2, 0.1, 0.3]),
            SamplingOptions {
                min_p: Some(0.45),
                ..Default::default()
            },
            vec![0, 1, 3],
        ),
        // Top-p on what top-k kept: k = 2 keeps 0.4 and 0.3 (renormalised 0.57, 0.43), p = 0.5.
        (
            ln(&[0.4, 0.2, 0.1, 0.3]),
            SamplingOptions {
                top_k: Some(2),
                top_p: Some(0.5),
                ..Default::default()
            },
            vec![0],
        ),
        // Temperature sharpens before top-p: at T = 0.5, [0.5, 0.3, 0.2] is [0.66, 0.24, 0.1].
        (
            ln(&[0.5, 0.3, 0.2]),
            SamplingOptions {
                temperature: 0.5,
                top_p: Some(0.85),
                ..Default::default()
            },
            vec![0, 1],
        ),
    ];
    for device in devices() {
        for (logits, options, kept) in &cases {
            let expected: Vec<usize> = oracle(logits, options).iter().map(|&(i, _)| i).collect();
            let mut sorted = expected.clone();
            sorted.sort();
            assert_eq!(&sorted, kept, "the oracle on {logits:?} {options:?}");
            let counts = draws(&device, logits, *options, 64, 8);
            let drawn: Vec<usize> = (0..logits.len()).filter(|&i| counts[i] > 0).collect();
            assert_eq!(
                &drawn, kept,
                "{logits:?} {options:?} on {device:?}: drawn {counts:?}"
            );
        }
    }
}

#[test]
fn draws_follow_the_target_distribution() {
    let logits: Vec<f32> = (0..24)
        .map(|i| ((i * 37 % 24) as f32) * 0.21 - 2.0)
        .collect();
    let cases = [
        SamplingOptions::default(),
        SamplingOptions {
            temperature: 0.7,
            top_k: Some(12),
            top_p: Some(0.9),
            ..Default::default()
        },
        SamplingOptions {
            temperature: 1.3,
            min_p: Some(0.1),
            ..Default::default()
        },
    ];
    for device in devices() {
        for options in &cases {
            let counts = draws(&device, &logits, *options, 500, 8);
            let p = target(&logits, options);
            let (statistic, df) = chi_square(&counts, &p);
            assert!(
                statistic < critical(df),
                "{options:?} on {device:?}: chi-square {statistic} with {df} degrees of freedom"
            );
            // A distribution a little off (the temperature 10% higher) must fail the same test.
            let wrong = SamplingOptions {
                temperature: options.temperature * 1.1,
                ..*options
            };
            let (statistic, df) = chi_square(&counts, &target(&logits, &wrong));
            assert!(
                statistic > critical(df),
                "{options:?} on {device:?}: a wrong distribution passes ({statistic}, {df})"
            );
        }
    }
}

/// Random logits with ties, NaN, infinities and per-row options: every device returns Flex's
/// tokens (and its log-probabilities, see [`assert_same`]), and a row's token does not depend
/// on its position in the batch.
#[test]
fn every_device_gives_the_same_tokens() {
    let Some(gpu) = gpu() else { return };
    for (vocab, rows, steps) in [
        (7usize, 64usize, 4u64),
        (1000, 32, 3),
        (32_000, 8, 2),
        (151_936, 4, 2),
    ] {
        let logits = awkward_logits(rows * vocab, vocab as u64, 97, 3);
        let options = row_options(rows, vocab);
        for step in 0..steps {
            let mut results = Vec::new();
            for device in [flex(), gpu.clone()] {
                let tensor =
                    Tensor::<2>::from_data(TensorData::new(logits.clone(), [rows, vocab]), &device);
                results.push(read(
                    tensor.sample_rows(&options.on(&device), step).unwrap(),
                ));
            }
            assert_same(
                &results[0],
                &results[1],
                &format!("vocab {vocab}, step {step}"),
            );
            assert!(results[0].0.iter().any(|&t| t >= 0), "some rows draw");
        }
        // The batch reversed: every row keeps its token.
        let reversed: Vec<f32> = logits.chunks(vocab).rev().flatten().copied().collect();
        let options_reversed = options.reversed();
        let tensor = Tensor::<2>::from_data(TensorData::new(reversed, [rows, vocab]), &gpu);
        let (tokens_reversed, _) = read(tensor.sample_rows(&options_reversed.on(&gpu), 0).unwrap());
        let tensor = Tensor::<2>::from_data(TensorData::new(logits.clone(), [rows, vocab]), &gpu);
        let (tokens, _) = read(tensor.sample_rows(&options.on(&gpu), 0).unwrap());
        let back: Vec<i64> = tokens_reversed.into_iter().rev().collect();
        assert_eq!(
            tokens, back,
            "vocab {vocab}: a row's token moved with its position"
        );
    }
}

/// Rows and steps per vocabulary in [`ten_thousand_draws_match_the_record`]: 10,000
/// (seed, step) pairs each.
const RECORD_ROWS: usize = 100;
const RECORD_STEPS: u64 = 100;
/// The steps Flex recomputes in every run, to show the record is still its own.
const RECORD_FLEX_STEPS: [u64; 2] = [0, 57];

/// At vocabularies 32,000, 128,256 and 151,936, 100 rows of per-row options and seeds (every
/// filter and clamp, NaN, -inf and ties in the logits) over 100 steps: the device draws the
/// tokens Flex drew, all 30,000, which `tests/data/sample_tokens.bin` holds (little-endian
/// `i32`, vocabulary, then step, then row). Flex recomputes two of the steps each run; with
/// `BURN_DML_OPS_RECORD=1` it recomputes them all and writes the file.
#[test]
fn ten_thousand_draws_match_the_record() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/sample_tokens.bin");
    let recording = std::env::var_os("BURN_DML_OPS_RECORD").is_some_and(|v| v == "1");
    let vocabs = [32_000usize, 128_256, 151_936];
    let per_vocab = RECORD_ROWS * RECORD_STEPS as usize;
    let mut record = if recording {
        Vec::new()
    } else {
        let bytes = std::fs::read(path).expect("the committed record of Flex's tokens");
        assert_eq!(
            bytes.len(),
            4 * per_vocab * vocabs.len(),
            "the record's size"
        );
        bytes
            .chunks(4)
            .map(|b| i64::from(i32::from_le_bytes([b[0], b[1], b[2], b[3]])))
            .collect()
    };
    let gpu = gpu();
    for (v, &vocab) in vocabs.iter().enumerate() {
        let logits = awkward_logits(RECORD_ROWS * vocab, 11 * vocab as u64, 89, 4);
        let options = row_options(RECORD_ROWS, vocab);
        let data = TensorData::new(logits, [RECORD_ROWS, vocab]);
        let flex_steps: Vec<u64> = if recording {
            (0..RECORD_STEPS).collect()
        } else {
            RECORD_FLEX_STEPS.to_vec()
        };
        let mut runtimes = vec![(flex(), flex_steps, recording)];
        runtimes.extend(
            gpu.iter()
                .map(|gpu| (gpu.clone(), (0..RECORD_STEPS).collect(), false)),
        );
        for (device, steps, records) in runtimes {
            let logits = Tensor::<2>::from_data(data.clone(), &device);
            let options = options.on(&device);
            // Every step queued before the one read: no sync per step.
            let tokens: Vec<_> = steps
                .iter()
                .map(|&step| logits.clone().sample_rows(&options, step).unwrap().tokens)
                .collect();
            let tokens = to_i64(&Tensor::cat(tokens, 0).into_data());
            if records {
                record.extend(tokens);
                continue;
            }
            for (step, drawn) in steps.iter().zip(tokens.chunks(RECORD_ROWS)) {
                let at = (v * RECORD_STEPS as usize + *step as usize) * RECORD_ROWS;
                assert_eq!(
                    drawn,
                    &record[at..at + RECORD_ROWS],
                    "vocab {vocab}, step {step} on {device:?}: tokens against the record"
                );
            }
        }
        // The record is not constant: the seeds and steps reach the draw, and rows draw.
        let rows: Vec<Vec<i64>> = (0..RECORD_ROWS)
            .map(|r| {
                let at = v * per_vocab + r;
                (0..RECORD_STEPS as usize)
                    .map(|s| record[at + s * RECORD_ROWS])
                    .collect()
            })
            .collect();
        let varying = rows.iter().filter(|t| t.iter().any(|&x| x != t[0])).count();
        assert!(
            varying > RECORD_ROWS / 3,
            "vocab {vocab}: {varying} rows vary"
        );
        assert!(
            rows.iter().flatten().any(|&t| t >= 0),
            "vocab {vocab}: rows draw"
        );
    }
    if recording {
        let bytes: Vec<u8> = record
            .iter()
            .flat_map(|&t| i32::try_from(t).unwrap().to_le_bytes())
            .collect();
        std::fs::create_dir_all(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data")).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
}

/// The same tokens, and log-probabilities within `1e-5`: they decide nothing, and on lavapipe
/// the logarithm of the kept mass (about 22 to 34) can land one unit in its last place from
/// the host's.
fn assert_same(flex: &(Vec<i64>, Vec<f32>), other: &(Vec<i64>, Vec<f32>), case: &str) {
    assert_eq!(flex.0, other.0, "{case}: tokens");
    for (a, b) in flex.1.iter().zip(&other.1) {
        assert!(
            a.to_bits() == b.to_bits() || (a - b).abs() <= 1e-5,
            "{case}: log-probabilities {:?} and {:?}",
            flex.1,
            other.1
        );
    }
}

/// Per-row options on the host, for any device.
struct HostRows {
    temperature: Vec<f32>,
    top_k: Vec<i32>,
    top_p: Vec<f32>,
    min_p: Vec<f32>,
    seed: Vec<i32>,
}

impl HostRows {
    fn on(&self, device: &Device) -> RowSampling {
        let f =
            |v: &Vec<f32>| Tensor::<1>::from_data(TensorData::new(v.clone(), [v.len()]), device);
        let (k, seed) = (&self.top_k, &self.seed);
        RowSampling {
            temperature: f(&self.temperature),
            top_k: Tensor::<1, Int>::from_data(TensorData::new(k.clone(), [k.len()]), device),
            top_p: f(&self.top_p),
            min_p: f(&self.min_p),
            seed: Tensor::<2, Int>::from_data(
                TensorData::new(seed.clone(), [seed.len() / 2, 2]),
                device,
            ),
        }
    }

    fn reversed(&self) -> Self {
        let rev = |v: &Vec<f32>| v.iter().rev().copied().collect();
        Self {
            temperature: rev(&self.temperature),
            top_k: self.top_k.iter().rev().copied().collect(),
            top_p: rev(&self.top_p),
            min_p: rev(&self.min_p),
            seed: self.seed.chunks(2).rev().flatten().copied().collect(),
        }
    }
}

/// Options that cycle through every filter and clamp: greedy, plain, top-k, top-p, min-p and
/// all three, negative and NaN values.
fn row_options(rows: usize, vocab: usize) -> HostRows {
    let pick = |r: usize| r % 9;
    HostRows {
        temperature: (0..rows)
            .map(|r| [0.0, 1.0, 0.7, 1.3, 0.5, -1.0, f32::NAN, 2.0, 1e-3][pick(r)])
            .collect(),
        top_k: (0..rows)
            .map(|r| [0, 0, 40, 0, 0, 5, 0, -3, 1][pick(r)].min(vocab as i32 + 1))
            .collect(),
        top_p: (0..rows)
            .map(|r| [1.0, 1.0, 0.95, 0.9, 1.0, 0.5, f32::NAN, -0.5, 0.3][pick(r)])
            .collect(),
        min_p: (0..rows)
            .map(|r| [0.0, 0.0, 0.05, 0.0, 0.1, f32::NAN, 2.0, -1.0, 0.0][pick(r)])
            .collect(),
        seed: (0..rows as i32).flat_map(|r| [r * 1_000_003, -r]).collect(),
    }
}

#[test]
fn edge_cases_follow_the_rules() {
    let greedy = SamplingOptions {
        temperature: 0.0,
        ..Default::default()
    };
    let plain = SamplingOptions::default();
    let nan = f32::NAN;
    let inf = f32::INFINITY;
    for device in devices() {
        // Greedy: lowest index on ties, NaN never wins, +inf does, -0 ties +0.
        let (tokens, logprobs) = run(
            &device,
            &[1.0, 3.0, 3.0, nan, 2.0, -0.0, 0.0, 0.0],
            4,
            greedy,
            0,
        );
        assert_eq!(tokens, vec![1, 0], "{device:?}");
        assert_eq!(logprobs, vec![0.0, 0.0], "{device:?}");
        let (tokens, _) = run(&device, &[nan, inf, 1.0, inf], 4, greedy, 0);
        assert_eq!(tokens, vec![1], "{device:?}");
        // Nothing drawable: all -inf, all NaN, both; greedy or not.
        for options in [greedy, plain] {
            let (tokens, logprobs) = run(
                &device,
                &[f32::NEG_INFINITY, nan, f32::NEG_INFINITY, f32::NEG_INFINITY],
                2,
                options,
                0,
            );
            assert_eq!(tokens, vec![-1, -1], "{device:?}");
            assert!(logprobs.iter().all(|l| l.is_nan()), "{device:?}");
        }
        // +inf shares the mass: only the infinite tokens, both of them, with log(1/2).
        let counts = draws(&device, &[inf, 5.0, inf, nan], plain, 64, 4);
        assert_eq!((counts[1], counts[3]), (0, 0), "{device:?}: {counts:?}");
        assert!(counts[0] > 0 && counts[2] > 0, "{device:?}: {counts:?}");
        let (_, logprobs) = run(&device, &[inf, 5.0, inf, nan], 4, plain, 3);
        assert!(
            (logprobs[0] + std::f32::consts::LN_2).abs() < 1e-5,
            "{device:?}: {logprobs:?}"
        );
        // An empty batch: nothing to draw, empty results.
        assert_eq!(
            run(&device, &[], 4, plain, 0),
            (vec![], vec![]),
            "{device:?}"
        );
        // A vocabulary of one: always token 0, log-probability 0.
        let (tokens, logprobs) = run(&device, &[0.25, -3.0], 1, plain, 9);
        assert_eq!(tokens, vec![0, 0], "{device:?}");
        assert!(
            logprobs.iter().all(|l| l.abs() < 1e-6),
            "{device:?}: {logprobs:?}"
        );
        // k = 1 with a tie draws both tied tokens; k = 0 and k >= vocab are off.
        let logits = [2.0, 5.0, 1.0, 5.0];
        let counts = draws(
            &device,
            &logits,
            SamplingOptions {
                top_k: Some(1),
                ..plain
            },
            64,
            4,
        );
        assert_eq!((counts[0], counts[2]), (0, 0), "{device:?}: {counts:?}");
        assert!(counts[1] > 0 && counts[3] > 0, "{device:?}: {counts:?}");
        for k in [0, 4, 9] {
            let options = SamplingOptions {
                top_k: Some(k),
                temperature: 8.0,
                ..plain
            };
            let counts = draws(&device, &logits, options, 64, 4);
            assert!(
                counts.iter().all(|&c| c > 0),
                "{device:?} k {k}: {counts:?}"
            );
        }
        // p = 0 keeps the first token (lowest index of the largest), p = 1 is off.
        let counts = draws(
            &device,
            &logits,
            SamplingOptions {
                top_p: Some(0.0),
                ..plain
            },
            64,
            2,
        );
        assert_eq!(counts, vec![0, 128, 0, 0], "{device:?}");
        let options = SamplingOptions {
            top_p: Some(1.0),
            temperature: 8.0,
            ..plain
        };
        assert!(
            draws(&device, &logits, options, 64, 4)
                .iter()
                .all(|&c| c > 0),
            "{device:?}"
        );
        // min_p = 1 keeps the largest and its ties; 0 is off.
        let counts = draws(
            &device,
            &logits,
            SamplingOptions {
                min_p: Some(1.0),
                ..plain
            },
            64,
            4,
        );
        assert_eq!((counts[0], counts[2]), (0, 0), "{device:?}: {counts:?}");
        let options = SamplingOptions {
            min_p: Some(0.0),
            temperature: 8.0,
            ..plain
        };
        assert!(
            draws(&device, &logits, options, 64, 4)
                .iter()
                .all(|&c| c > 0),
            "{device:?}"
        );
        // The same seed and step, the same token; logprobs match the oracle's.
        let logits: Vec<f32> = (0..50).map(|i| (i as f32 * 0.37).sin() * 3.0).collect();
        let options = SamplingOptions {
            top_k: Some(20),
            top_p: Some(0.9),
            temperature: 0.8,
            seed: u64::MAX - 5,
            ..plain
        };
        let first = run(&device, &logits, 50, options, 1 << 40);
        assert_eq!(
            first,
            run(&device, &logits, 50, options, 1 << 40),
            "{device:?}"
        );
        let token = first.0[0] as usize;
        let expected = oracle(&logits, &options)
            .into_iter()
            .find(|&(i, _)| i == token)
            .expect("a kept token")
            .1;
        assert!(
            (f64::from(first.1[0]) - expected.ln()).abs() < 1e-4,
            "{device:?}: {} vs {}",
            first.1[0],
            expected.ln()
        );
    }
}

/// Per-row values that cannot be checked are clamped: a NaN or negative temperature is
/// greedy, a negative `top_k` is off, a NaN `top_p` is off and a negative one keeps one token,
/// a NaN or negative `min_p` is off and one above 1 is 1.
#[test]
fn per_row_values_are_clamped() {
    let logits = [2.0f32, 5.0, 1.0, 4.5];
    for device in devices() {
        let cases: [(f32, i32, f32, f32, Option<usize>); 7] = [
            (f32::NAN, 0, 1.0, 0.0, Some(1)),
            (-2.0, 0, 1.0, 0.0, Some(1)),
            (8.0, -4, 1.0, 0.0, None),
            (8.0, 0, f32::NAN, 0.0, None),
            (8.0, 0, -0.5, 0.0, Some(1)),
            (8.0, 0, 1.0, f32::NAN, None),
            (1.0, 0, 1.0, 7.0, Some(1)),
        ];
        for (t, k, p, m, only) in cases {
            let rows = 64;
            let host = HostRows {
                temperature: vec![t; rows],
                top_k: vec![k; rows],
                top_p: vec![p; rows],
                min_p: vec![m; rows],
                seed: (0..2 * rows as i32).collect(),
            };
            let batch: Vec<f32> = (0..rows).flat_map(|_| logits).collect();
            let tensor = Tensor::<2>::from_data(TensorData::new(batch, [rows, 4]), &device);
            let (tokens, _) = read(tensor.sample_rows(&host.on(&device), 0).unwrap());
            match only {
                Some(token) => assert!(
                    tokens.iter().all(|&x| x == token as i64),
                    "{t} {k} {p} {m} on {device:?}: {tokens:?}"
                ),
                None => assert!(
                    (0..4).all(|i| tokens.contains(&i)),
                    "{t} {k} {p} {m} on {device:?}: {tokens:?}"
                ),
            }
        }
    }
}

/// Logits made on the device (random, a view, 16-bit), a batch of 1,024 and a vocabulary of
/// 2^18 + 1: Flex's tokens everywhere.
#[test]
fn device_made_and_large_operands_match_flex() {
    let Some(gpu) = gpu() else { return };
    let made = Tensor::<2>::random([6, 3000], Distribution::Normal(0.0, 2.0), &flex());
    let data = made.into_data();
    let options = SamplingOptions {
        top_p: Some(0.9),
        top_k: Some(100),
        seed: 3,
        ..Default::default()
    };
    let on = |device: &Device| {
        let t = Tensor::<2>::from_data(data.clone(), device);
        // A transposed view of the transpose, and a slice: not contiguous as given.
        let view = t.transpose().transpose().slice([1..6, 0..3000]);
        read(view.sample(options, 5).unwrap())
    };
    assert_same(&on(&flex()), &on(&gpu), "a view");
    let random = Tensor::<2>::random([2, 4096], Distribution::Uniform(-3.0, 3.0), &gpu);
    let host = random.clone().into_data();
    let on_gpu = read(random.sample(options, 1).unwrap());
    let on_flex = read(
        Tensor::<2>::from_data(host, &flex())
            .sample(options, 1)
            .unwrap(),
    );
    assert_same(&on_flex, &on_gpu, "random logits made on the device");
    for (rows, vocab) in [(1024usize, 64usize), (2, (1 << 18) + 1)] {
        let logits = normal_logits(rows * vocab, 4.0, 11);
        let options = SamplingOptions {
            top_p: Some(0.95),
            temperature: 0.9,
            seed: 42,
            ..Default::default()
        };
        assert_same(
            &run(&flex(), &logits, vocab, options, 2),
            &run(&gpu, &logits, vocab, options, 2),
            &format!("{rows} x {vocab}"),
        );
    }
}

#[test]
fn runs_on_autodiff_devices() {
    for device in devices() {
        let device = device.autodiff();
        let logits = Tensor::<2>::from_data([[0.0, 1.0, 4.0]], &device).require_grad();
        let sampled = logits
            .sample(
                SamplingOptions {
                    temperature: 0.0,
                    ..Default::default()
                },
                0,
            )
            .unwrap();
        assert_eq!(to_i64(&sampled.tokens.into_data()), vec![2], "{device:?}");
    }
}

#[test]
fn bad_arguments_are_errors() {
    let device = flex();
    let logits = Tensor::<2>::from_data([[0.0, 1.0]], &device);
    let bad = [
        SamplingOptions {
            temperature: -1.0,
            ..Default::default()
        },
        SamplingOptions {
            temperature: f32::NAN,
            ..Default::default()
        },
        SamplingOptions {
            top_p: Some(f32::NAN),
            ..Default::default()
        },
        SamplingOptions {
            top_p: Some(-0.1),
            ..Default::default()
        },
        SamplingOptions {
            min_p: Some(1.5),
            ..Default::default()
        },
        SamplingOptions {
            min_p: Some(-0.5),
            ..Default::default()
        },
        SamplingOptions {
            min_p: Some(f32::NAN),
            ..Default::default()
        },
    ];
    for options in bad {
        let err = logits.clone().sample(options, 0).unwrap_err();
        assert!(
            matches!(err, DmlOpsError::InvalidArgument { .. }),
            "{options:?}: {err}"
        );
    }
    let empty = Tensor::<2>::from_data(TensorData::new(Vec::<f32>::new(), [2, 0]), &device);
    let err = empty.sample(SamplingOptions::default(), 0).unwrap_err();
    assert!(err.to_string().contains("empty vocabulary"), "{err}");
    let wrong_p = HostRows {
        top_p: vec![1.0, 1.0],
        ..row_options(1, 2)
    };
    let err = logits
        .clone()
        .sample_rows(&wrong_p.on(&device), 0)
        .unwrap_err();
    assert!(err.to_string().contains("top_p has shape [2]"), "{err}");
    let rows = RowSampling {
        seed: Tensor::<2, Int>::from_data(TensorData::new(vec![1, 2, 3], [1, 3]), &device),
        ..row_options(1, 2).on(&device)
    };
    let err = logits.sample_rows(&rows, 0).unwrap_err();
    assert!(err.to_string().contains("seed has shape [1, 3]"), "{err}");
}

/// `SamplingOptions { seed, .. }` equals a row of `(seed as u32, (seed >> 32) as u32)`, each
/// word the 32-bit pattern of its Int: as `i32` (negative for a word >= 2^31) or as `i64`.
#[test]
fn scalar_and_per_row_forms_agree() {
    let (rows, vocab) = (16usize, 300usize);
    let logits = normal_logits(rows * vocab, 2.0, 5);
    let seed = 0xFEDC_BA98_8765_4321u64;
    let options = SamplingOptions {
        temperature: 0.9,
        top_k: Some(40),
        top_p: Some(0.9),
        min_p: Some(0.02),
        seed,
    };
    let words = [seed as u32, (seed >> 32) as u32];
    for device in devices() {
        let tensor =
            || Tensor::<2>::from_data(TensorData::new(logits.clone(), [rows, vocab]), &device);
        let scalar = read(tensor().sample(options, 11).unwrap());
        let per_row = |seed: Tensor<2, Int>| {
            let f =
                |v: f32| Tensor::<1>::from_data(TensorData::new(vec![v; rows], [rows]), &device);
            let top_k = TensorData::new(vec![40i64; rows], [rows]);
            let rows_options = RowSampling {
                temperature: f(0.9),
                top_k: Tensor::<1, Int>::from_data(top_k, &device),
                top_p: f(0.9),
                min_p: f(0.02),
                seed,
            };
            read(tensor().sample_rows(&rows_options, 11).unwrap())
        };
        let as_i32: Vec<i32> = (0..rows).flat_map(|_| words.map(|w| w as i32)).collect();
        let seed_i32 = Tensor::<2, Int>::from_data(TensorData::new(as_i32, [rows, 2]), &device);
        assert_eq!(scalar, per_row(seed_i32), "i32 words on {device:?}");
        if can_store(&device, burn::tensor::DType::I64) {
            let as_i64: Vec<i64> = (0..rows).flat_map(|_| words.map(i64::from)).collect();
            let seed_i64 = int_tensor(TensorData::new(as_i64, [rows, 2]), &device);
            assert_eq!(scalar, per_row(seed_i64), "i64 words on {device:?}");
        }
    }
}
