//! Token sampling: greedy ties, the spec's top-p tie, random batches at vocabulary sizes with
//! every filter (Flex's tokens, which the crate promises on every runtime), and an error.

use burn::tensor::{DType, Tensor};
use burn_dml_ops::prelude::*;

use super::{Devices, check, holds, is_error, same};
use crate::inputs::{Rng, float_tensor};
use crate::report::Report;

pub async fn run(devices: &Devices, report: &mut Report) {
    let (gpu, cpu) = (&devices.gpu, &devices.cpu);
    check!(
        report,
        "sample: greedy takes the lowest index of a tie; NaN never wins".into(),
        async {
            let logits = [1.0, 3.0, 3.0, 2.0, f32::NAN, 0.5, 0.5, f32::NEG_INFINITY];
            let logits = float_tensor(&logits, [2, 4], DType::F32, gpu);
            let greedy = SamplingOptions {
                temperature: 0.0,
                ..Default::default()
            };
            let sampled = logits.sample(greedy, 0).map_err(|err| err.to_string())?;
            holds("tokens", sampled.tokens, &[1, 1]).await
        }
    );
    check!(
        report,
        "sample: top-p 0.5 of [0.4, 0.2, 0.2, 0.2] keeps tokens 0 and 1".into(),
        async {
            let row = [0.4f32, 0.2, 0.2, 0.2].map(f32::ln);
            let options = SamplingOptions {
                top_p: Some(0.5),
                seed: 9,
                ..Default::default()
            };
            // One row, many steps: the same row, seed and step always draw the same token.
            let mut tokens = Vec::new();
            for step in 0..32 {
                let logits = float_tensor(&row, [1, 4], DType::F32, gpu);
                let sampled = logits
                    .sample(options, step)
                    .map_err(|err| err.to_string())?;
                let token = super::read(sampled.tokens).await?;
                let token = token
                    .convert_dtype(DType::I64)
                    .try_into_vec::<i64>()
                    .map_err(|err| format!("{err:?}"))?;
                tokens.extend(token);
            }
            let (zeros, ones) = (tokens.contains(&0), tokens.contains(&1));
            if zeros && ones && tokens.iter().all(|&t| t == 0 || t == 1) {
                Ok(())
            } else {
                Err(format!(
                    "tokens {tokens:?}: not tokens 0 and 1 only, both drawn"
                ))
            }
        }
    );
    let mut rng = Rng::new(11);
    for (rows, vocab) in [(16, 32_000), (2, 128_256)] {
        let logits: Vec<f32> = (0..rows * vocab).map(|_| rng.unit() * 12.0 - 6.0).collect();
        let cases = [
            SamplingOptions::default(),
            SamplingOptions {
                temperature: 0.7,
                top_k: Some(50),
                top_p: Some(0.95),
                seed: 3,
                ..Default::default()
            },
            SamplingOptions {
                temperature: 1.3,
                min_p: Some(0.05),
                seed: u64::MAX,
                ..Default::default()
            },
        ];
        for options in cases {
            check!(
                report,
                format!("sample: [{rows}, {vocab}] logits, {options:?}: Flex's tokens"),
                async {
                    let on = |device| -> Result<Sampled, String> {
                        float_tensor(&logits, [rows, vocab], DType::F32, device)
                            .sample(options, 5)
                            .map_err(|err| err.to_string())
                    };
                    let (actual, expected) = (on(gpu)?, on(cpu)?);
                    same("tokens", actual.tokens, expected.tokens).await
                }
            );
        }
    }
    check!(
        report,
        "sample: a negative temperature is an error".into(),
        async {
            let logits = Tensor::<2>::zeros([1, 4], gpu);
            let options = SamplingOptions {
                temperature: -1.0,
                ..Default::default()
            };
            is_error("temperature -1", logits.sample(options, 0))
        }
    );
}
