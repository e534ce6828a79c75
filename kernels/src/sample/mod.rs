//! Token sampling: one token per row of a language model's logits, with Hugging Face
//! `generate`'s temperature, top-k, top-p and min-p, and the same token on every runtime.
//!
//! One launch, one cube of [`SAMPLE_UNITS`] units per row, nothing
//! sorted. Each step reads the row again (from cache on a GPU where the row fits) and keeps
//! its findings in shared memory:
//!
//! 1. The largest logit and its lowest index (NaN never counts): a greedy row's token.
//! 2. Top-k: the k-th largest scaled logit, found by an 8-bit radix select over an
//!    order-preserving key of `y = z / T` (four reads). Ties with it are kept.
//! 3. Top-p: each kept token's mass `q = floor(e^(y - y_max) * 2^31)`, added in 64-bit
//!    integers (so in any order). A radix descent over the same keys, with a mass per bin
//!    (four reads), finds the cut: the lowest key whose mass above is still below
//!    `P = S * floor(p * 2^24) / 2^24`. Of the cut key's ties, the first `c` by index are kept,
//!    `c` counting the ties `t` with `above + t * q < P`; where that is fewer than all of them,
//!    a radix select over their indices (three reads) finds the last.
//! 4. The draw (one read): min-p keeps `e^(y - y_max) >= min_p`, and the token is the kept
//!    one with the largest `y - y_max + g`, `g` Gumbel noise from a hash of (seed, step,
//!    token): Gumbel-max draws from the softmax of the kept tokens without normalising, and
//!    each token's noise depends on nothing else. The kept tokens' masses give the
//!    log-probability.
//!
//! Every decision rests on integer keys and masses, and on floats made with IEEE `+` and `*`
//! only, each product fenced against fused multiply-adds and subnormals flushed on the bits
//! ([`math`]): the runtime's `exp`, `log` and division are never used, so every runtime and the
//! host reference return the same bits.
//!
//! Cost: a greedy row reads its logits once; a filtered row reads them up to 13 times, in one
//! launch, where a sort-based sampler sorts the vocabulary (tens of launches) and reads it back.
//! Rows share no work, so a batch fills the device one cube per row; a single row uses one cube.

mod kernel;
mod launch;
pub mod math;

pub use kernel::{SAMPLE_UNITS, sample_rows};
pub use launch::{MAX_VOCAB, SampleInput, SampleOutput, launch_sample};
