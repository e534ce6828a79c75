//! Top-p (nucleus) sampling of one token from an LLM's logits over a 128,256-entry vocabulary,
//! on the device: a stable descending sort of the logits, their softmax and running sum, the
//! smallest prefix whose mass reaches `p`, and the token where a uniform draw falls in it. Only
//! the chosen token's id is read back. The example repeats every step on the host in f64 and
//! checks that both pick the same token.
//!
//! `cargo run --release --example top_p_sampling`

mod common;

use burn::tensor::activation::softmax;
use burn::tensor::{Int, Tensor, TensorData};
use burn_dml_ops::prelude::*;

const VOCABULARY: usize = 128_256;
const TOP_P: f64 = 0.9;
/// The uniform draw in `0..1`, scaled to the kept mass: fixed, so the host can check it.
const DRAW: f64 = 0.637;

/// Logits shaped like a language model's: a few likely tokens, a long tail.
fn logits() -> Vec<f32> {
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    (0..VOCABULARY)
        .map(|i| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let noise = (state >> 40) as f32 / (1u64 << 24) as f32;
            let head = if i % 9_973 == 17 { 9.0 } else { 0.0 };
            head + 4.0 * noise
        })
        .collect()
}

/// The same sampling on the host, in f64: the token the draw picks.
fn sample_on_host(logits: &[f32]) -> usize {
    let mut order: Vec<usize> = (0..logits.len()).collect();
    order.sort_by(|&a, &b| logits[b].total_cmp(&logits[a])); // stable: ties by lower index
    let max = f64::from(logits[order[0]]);
    let weights: Vec<f64> = order
        .iter()
        .map(|&i| (f64::from(logits[i]) - max).exp())
        .collect();
    let total: f64 = weights.iter().sum();
    let mut kept = 0.0;
    let mut kept_len = 0;
    for w in &weights {
        kept += w / total;
        kept_len += 1;
        if kept >= TOP_P {
            break;
        }
    }
    let target = DRAW * kept;
    let mut running = 0.0;
    for (r, w) in weights[..kept_len].iter().enumerate() {
        running += w / total;
        if running > target {
            return order[r];
        }
    }
    order[kept_len - 1]
}

fn main() {
    let device = common::device();
    let host = logits();
    let logits = Tensor::<1>::from_data(TensorData::new(host.clone(), [VOCABULARY]), &device);

    // Everything below stays on the device until the token's id is read.
    let sorted = logits.sort_stable(0, Order::Descending);
    let probs = softmax(sorted.values, 0);
    let cumulative = probs.clone().cumsum(0);
    // A token is kept while the mass before it is below p: the smallest prefix reaching p.
    let before = cumulative.clone() - probs;
    let kept = before.lower_elem(TOP_P as f32);
    let kept_mass = cumulative
        .clone()
        .mask_fill(kept.clone().bool_not(), 0.0)
        .max();
    // The draw lands in the first kept token whose running sum passes it.
    let target = kept_mass.mul_scalar(DRAW as f32);
    let passed = cumulative
        .lower_equal(target.expand([VOCABULARY]))
        .int()
        .sum();
    let last_kept = kept.int().sum().sub_scalar(1);
    let rank = passed.clone().min_pair(last_kept);
    let token: Tensor<1, Int> = sorted.indices.select(0, rank);

    let token = token
        .into_data()
        .convert::<i64>()
        .try_to_vec::<i64>()
        .unwrap()[0] as usize;
    let expected = sample_on_host(&host);
    println!(
        "top-p {TOP_P} sampling over {VOCABULARY} logits on {device:?}: token {token} (logit {})",
        host[token]
    );
    assert_eq!(
        token, expected,
        "the device and the host pick the same token"
    );
    println!("the host's f64 sampling picks the same token");
}
