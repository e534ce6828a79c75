//! Host-side launch of the sampler over raw CubeCL handles.

use cubecl::prelude::*;
use cubecl::server::Handle;

use super::kernel::{SAMPLE_UNITS, sample_rows};
use crate::KernelError;
use crate::capture::launch_unchecked;
use crate::launch::require_len;

/// The largest vocabulary: the ties' index search reads 24 bits.
pub const MAX_VOCAB: usize = 1 << 24;

/// The inputs, all contiguous 32-bit buffers: `logits` `[rows, vocab]` `f32`; per row a
/// `temperature`, `top_k` (as `u32`: 0 and values from `vocab` up are off, so a negative `i32`
/// is off too), `top_p` and `min_p`; `seeds` `[rows, 2]`, the low then the high word of each
/// row's 64-bit seed.
#[derive(Clone, Debug)]
pub struct SampleInput {
    /// The logits.
    pub logits: Handle,
    /// Per row: the temperature (NaN, negative, zero or subnormal: greedy).
    pub temperature: Handle,
    /// Per row: top-k.
    pub top_k: Handle,
    /// Per row: top-p (NaN or at least 1: off; at most 0: the most likely token).
    pub top_p: Handle,
    /// Per row: min-p (NaN or at most 0: off; above 1: 1).
    pub min_p: Handle,
    /// Per row: the seed's two words.
    pub seeds: Handle,
}

/// Where [`launch_sample`] writes, as 32-bit words of one buffer: `[rows]` `i32` tokens (-1:
/// nothing drawable) from word 0, and `[rows]` `f32` log-probabilities from word
/// `logprobs_at` (at least `rows`). One buffer keeps the kernel within WebGPU's 8 storage
/// buffers; a caller that places the log-probabilities at an aligned offset can view each part
/// as a tensor of its own.
#[derive(Clone, Debug)]
pub struct SampleOutput {
    /// The tokens, then the log-probabilities.
    pub results: Handle,
    /// The word where the log-probabilities start.
    pub logprobs_at: usize,
}

/// One token per row of `logits`, by the rules of the [module](super), in one launch of one
/// cube per row. `step` with each row's seed is the draw's only randomness. Nothing is read
/// back.
///
/// # Errors
///
/// [`KernelError`] for a vocabulary of more than [`MAX_VOCAB`] tokens, more logits than
/// 32-bit offsets count, or a handle that is too small. Nothing is launched then.
pub fn launch_sample(
    client: &Client,
    input: &SampleInput,
    output: &SampleOutput,
    rows: usize,
    vocab: usize,
    step: u64,
) -> Result<(), KernelError> {
    if vocab > MAX_VOCAB {
        return Err(KernelError::TooLarge {
            detail: format!("a vocabulary of {vocab} tokens; at most {MAX_VOCAB} are sampled"),
        });
    }
    let len = rows
        .checked_mul(vocab)
        .filter(|&len| len <= u32::MAX as usize)
        .ok_or_else(|| KernelError::TooLarge {
            detail: format!("{rows} rows of {vocab} logits are more than 32-bit offsets count"),
        })?;
    if rows == 0 {
        return Ok(());
    }
    require_len(&input.logits, len, 4, "logits")?;
    require_len(&input.temperature, rows, 4, "temperature")?;
    require_len(&input.top_k, rows, 4, "top_k")?;
    require_len(&input.top_p, rows, 4, "top_p")?;
    require_len(&input.min_p, rows, 4, "min_p")?;
    require_len(&input.seeds, 2 * rows, 4, "seeds")?;
    if output.logprobs_at < rows {
        return Err(KernelError::ShapeMismatch {
            detail: format!(
                "the log-probabilities start at word {} of the results, inside the {rows} tokens",
                output.logprobs_at
            ),
        });
    }
    let results = output.logprobs_at + rows;
    require_len(&output.results, results, 4, "results")?;
    // SAFETY: cube `r < rows` reads row `r` of the logits (`vocab` elements from `r * vocab`)
    // and entry `r` of each option (two of the seeds), and writes entry `r` of both outputs;
    // every length was checked above. Cubes past `rows` return at once.
    unsafe {
        launch_unchecked!(sample_rows(
            client,
            crate::launch::cube_count(client, rows),
            CubeDim::new_1d(SAMPLE_UNITS as u32),
            AddressType::from_len(len.max(results)),
            BufferArg::from_raw_parts(input.logits.clone(), len),
            BufferArg::from_raw_parts(input.temperature.clone(), rows),
            BufferArg::from_raw_parts(input.top_k.clone(), rows),
            BufferArg::from_raw_parts(input.top_p.clone(), rows),
            BufferArg::from_raw_parts(input.min_p.clone(), rows),
            BufferArg::from_raw_parts(input.seeds.clone(), 2 * rows),
            BufferArg::from_raw_parts(output.results.clone(), results),
            rows,
            output.logprobs_at,
            vocab,
            step as u32,
            (step >> 32) as u32,
            0u32,
        ));
    }
    Ok(())
}
