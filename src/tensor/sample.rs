//! `SampleExt`: one token per row of a language model's logits on the device, with Hugging Face
//! `generate`'s temperature, top-k, top-p and min-p, seeded per row, the same token on every
//! runtime.

use burn::backend::Dispatch;
use burn::tensor::{DType, Device, FloatDType, Int, IntDType, Tensor, TensorData};

use super::support::check_encoding;
use crate::{DmlOps, DmlOpsError};

const OPERATOR: &str = "Sample";

/// The largest vocabulary sampled (the kernels' index search reads 24 bits).
const MAX_VOCAB: usize = 1 << 24;

/// How [`SampleExt::sample`] draws every row of a batch.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SamplingOptions {
    /// Divides the logits; 0 = greedy (argmax, lowest index on ties).
    pub temperature: f32,
    /// Keep the k most likely tokens (ties with the k-th kept); `None`, 0 or >= vocab = off.
    pub top_k: Option<usize>,
    /// Nucleus over the distribution left by top-k; `None` or >= 1 = off.
    pub top_p: Option<f32>,
    /// Keep tokens whose probability is >= `min_p` times the largest; `None` or 0 = off.
    pub min_p: Option<f32>,
    /// With `step`, the only source of randomness of a row.
    pub seed: u64,
}

impl Default for SamplingOptions {
    /// Temperature 1, no filter, seed 0.
    fn default() -> Self {
        Self {
            temperature: 1.0,
            top_k: None,
            top_p: None,
            min_p: None,
            seed: 0,
        }
    }
}

/// The options of [`SampleExt::sample_rows`], one per row, as device tensors of shape
/// `[batch]` (`top_k` 0 = off, `top_p` >= 1 = off, `min_p` 0 = off). `seed` is `[batch, 2]`:
/// column 0 the low 32 bits of the row's `u64` seed, column 1 the high 32 bits, each the 32-bit
/// pattern of its Int (a negative `i32` is a half >= 2^31; a wider Int's low 32 bits count), so `SamplingOptions { seed, .. }`
/// equals a row of `(seed as u32, (seed >> 32) as u32)`.
///
/// Values cannot be checked without a read, so they are clamped: a NaN or negative temperature
/// is greedy, a negative `top_k` is off, a NaN `top_p` is off and a negative one keeps one
/// token, a NaN or negative `min_p` is off and one above 1 is 1.
#[derive(Clone, Debug)]
pub struct RowSampling {
    /// Per row: divides the logits; 0 = greedy.
    pub temperature: Tensor<1>,
    /// Per row: top-k.
    pub top_k: Tensor<1, Int>,
    /// Per row: top-p.
    pub top_p: Tensor<1>,
    /// Per row: min-p.
    pub min_p: Tensor<1>,
    /// Per row: the seed's low and high 32 bits.
    pub seed: Tensor<2, Int>,
}

/// What [`SampleExt`] returns, on the device: nothing has been read back.
#[derive(Clone, Debug)]
pub struct Sampled {
    /// `[batch]`: the drawn token ids; -1 where a row has nothing drawable.
    pub tokens: Tensor<1, Int>,
    /// `[batch]`: each token's log-probability under the row's final (filtered, renormalised)
    /// distribution: 0 for a greedy row (its final distribution is the one token), NaN where
    /// the token is -1.
    pub logprobs: Tensor<1>,
}

/// Token sampling on the device, per row of `[batch, vocab]` logits, with the rules of Hugging
/// Face `generate`:
///
/// 1. **Temperature** `T`: the logits are divided by it (multiplied by the crate's reciprocal of
///    `T`). `T == 0` is greedy: the largest logit's index, lowest index on ties.
/// 2. **top-k**: keep the tokens whose value is >= the k-th largest (ties with it kept).
/// 3. **top-p**: on the softmax of what top-k kept, visit tokens by decreasing probability
///    (ties by lower index) and keep each while the mass of the tokens before it is < p; at
///    least one.
/// 4. **min-p**: keep tokens with probability >= `min_p` times the largest.
/// 5. **Draw** one kept token with probability proportional to `exp(z / T)`.
///
/// NaN logits never count and are never kept; `-inf` logits are never drawn; a row with nothing
/// left returns token -1 and log-probability NaN. `+inf` logits (or `z / T` overflowing to
/// `+inf`) share the whole mass equally.
///
/// The draw is a function of the row's logits, its options, its seed and `step` only (Gumbel-max
/// with noise hashed from them), not of its batch position, the other rows, the device or the
/// launch geometry, and every runtime returns the same token for it: the crate computes `exp`
/// and `ln` itself from IEEE `+` and `*`, and adds probabilities as 64-bit integers in units of
/// `2^-31` of the row's largest (a token below `2^-31` of it weighs nothing in top-p's mass).
/// One launch per call, nothing sorted, nothing read back.
///
/// ```
/// use burn::tensor::{Device, Tensor};
/// use burn_dml_ops::prelude::*;
///
/// let device = Device::flex();
/// let logits = Tensor::<2>::from_data([[1.0, 3.0, 2.0, 3.0], [0.5, 0.1, 0.2, 0.0]], &device);
/// let greedy = SamplingOptions { temperature: 0.0, ..Default::default() };
/// let sampled = logits.clone().sample(greedy, 0).unwrap();
/// assert_eq!(sampled.tokens.to_data().convert::<i64>().try_to_vec::<i64>().unwrap(), vec![1, 0]);
///
/// let options = SamplingOptions { top_k: Some(2), seed: 7, ..Default::default() };
/// let tokens = logits.sample(options, 0).unwrap().tokens.to_data().convert::<i64>();
/// let first = tokens.try_to_vec::<i64>().unwrap()[0];
/// assert!(first == 1 || first == 3); // the two largest of row 0 (a tie at 3.0)
/// ```
pub trait SampleExt {
    /// One token per row, every row with the same `options`; `step` (for example the position
    /// being generated) makes each call's draw new.
    ///
    /// # Errors
    ///
    /// [`DmlOpsError::InvalidArgument`] for an empty vocabulary or one of more than 2^24
    /// tokens, a negative or NaN temperature, a NaN or negative `top_p` or `min_p`, or `min_p`
    /// above 1; [`DmlOpsError::UnsupportedDType`] for quantized logits.
    fn sample(self, options: SamplingOptions, step: u64) -> Result<Sampled, DmlOpsError>;

    /// [`sample`](Self::sample) with options per row, as device tensors (see [`RowSampling`]
    /// for how their values are clamped).
    ///
    /// # Errors
    ///
    /// As [`sample`](Self::sample) for the logits, and [`DmlOpsError::InvalidArgument`] for
    /// option tensors of the wrong shape or on another device.
    fn sample_rows(self, options: &RowSampling, step: u64) -> Result<Sampled, DmlOpsError>;
}

impl SampleExt for Tensor<2> {
    fn sample(self, options: SamplingOptions, step: u64) -> Result<Sampled, DmlOpsError> {
        let invalid = |detail: String| {
            Err(DmlOpsError::InvalidArgument {
                operator: OPERATOR,
                detail,
            })
        };
        let SamplingOptions {
            temperature,
            top_k,
            top_p,
            min_p,
            seed,
        } = options;
        if temperature.is_nan() || temperature < 0.0 {
            return invalid(format!(
                "temperature {temperature} is not a number >= 0 (0 is greedy)"
            ));
        }
        if let Some(p) = top_p.filter(|p| p.is_nan() || *p < 0.0) {
            return invalid(format!("top_p {p} is not a number >= 0 (>= 1 is off)"));
        }
        if let Some(m) = min_p.filter(|m| !(0.0..=1.0).contains(m)) {
            return invalid(format!("min_p {m} is outside 0..=1 (0 is off)"));
        }
        let batch = check_logits(&self)?;
        let device = self.device();
        let rows = |value: f32| {
            Tensor::<1>::from_data(TensorData::new(vec![value; batch], [batch]), &device)
        };
        // A `k` beyond `i32` is beyond every vocabulary sampled: off, as 0 is.
        let k = top_k.filter(|&k| k <= i32::MAX as usize).unwrap_or(0) as i32;
        let words = [seed as u32 as i32, (seed >> 32) as u32 as i32];
        let seeds: Vec<i32> = (0..batch).flat_map(|_| words).collect();
        let options = RowSampling {
            temperature: rows(temperature),
            top_k: Tensor::from_data(TensorData::new(vec![k; batch], [batch]), &device),
            top_p: rows(top_p.unwrap_or(1.0)),
            min_p: rows(min_p.unwrap_or(0.0)),
            seed: Tensor::from_data(TensorData::new(seeds, [batch, 2]), &device),
        };
        dispatch(self, options, step)
    }

    fn sample_rows(self, options: &RowSampling, step: u64) -> Result<Sampled, DmlOpsError> {
        let batch = check_logits(&self)?;
        let device = self.device();
        let shapes = [
            (
                "temperature",
                options.temperature.dims().to_vec(),
                options.temperature.device(),
            ),
            (
                "top_k",
                options.top_k.dims().to_vec(),
                options.top_k.device(),
            ),
            (
                "top_p",
                options.top_p.dims().to_vec(),
                options.top_p.device(),
            ),
            (
                "min_p",
                options.min_p.dims().to_vec(),
                options.min_p.device(),
            ),
        ];
        for (name, dims, on) in shapes {
            if dims != [batch] {
                return Err(DmlOpsError::InvalidArgument {
                    operator: OPERATOR,
                    detail: format!(
                        "{name} has shape {dims:?}, but the logits have {batch} rows: it must be \
                         [{batch}]"
                    ),
                });
            }
            check_device(name, &on, &device)?;
        }
        if options.seed.dims() != [batch, 2] {
            return Err(DmlOpsError::InvalidArgument {
                operator: OPERATOR,
                detail: format!(
                    "seed has shape {:?}, but the logits have {batch} rows: it must be \
                     [{batch}, 2] (low and high 32 bits of each row's seed)",
                    options.seed.dims()
                ),
            });
        }
        check_device("seed", &options.seed.device(), &device)?;
        for (name, dtype) in [
            ("temperature", options.temperature.dtype()),
            ("top_p", options.top_p.dtype()),
            ("min_p", options.min_p.dtype()),
        ] {
            check_encoding(OPERATOR, &device, dtype).map_err(|_| DmlOpsError::InvalidArgument {
                operator: OPERATOR,
                detail: format!("{name} is quantized ({dtype:?}); give it as a plain float"),
            })?;
        }
        dispatch(self, options.clone(), step)
    }
}

/// Checks the logits; returns the batch size.
fn check_logits(logits: &Tensor<2>) -> Result<usize, DmlOpsError> {
    let [batch, vocab] = logits.dims();
    check_encoding(OPERATOR, &logits.device(), logits.dtype())?;
    let invalid = |detail: String| DmlOpsError::InvalidArgument {
        operator: OPERATOR,
        detail,
    };
    if vocab == 0 {
        return Err(invalid(format!(
            "the logits of shape {:?} have an empty vocabulary: nothing to draw from",
            logits.dims()
        )));
    }
    if vocab > MAX_VOCAB {
        return Err(invalid(format!(
            "a vocabulary of {vocab} tokens is more than the {MAX_VOCAB} sampled"
        )));
    }
    if batch.saturating_mul(vocab) > u32::MAX as usize {
        return Err(invalid(format!(
            "logits of shape {:?} are more than the {} that 32-bit offsets cover; sample fewer \
             rows at a time",
            logits.dims(),
            u32::MAX
        )));
    }
    Ok(batch)
}

fn check_device(name: &str, on: &Device, device: &Device) -> Result<(), DmlOpsError> {
    if on == device {
        return Ok(());
    }
    Err(DmlOpsError::InvalidArgument {
        operator: OPERATOR,
        detail: format!("{name} is on {on:?}, the logits on {device:?}: move it to their device"),
    })
}

/// The seed's words as `i32`, each Int's low 32 bits: a 64-bit or `u32` word of 2^31 or more
/// becomes the negative `i32` of the same bits (a plain cast refuses it on Flex).
fn seed_words(seed: Tensor<2, Int>) -> Tensor<2, Int> {
    let device = seed.device();
    let wide = match seed.dtype() {
        DType::I32 => return seed,
        DType::I64 => seed,
        DType::U64 => seed.cast(IntDType::I64),
        DType::U32 if super::support::can_compute(&device, DType::I64) => seed.cast(IntDType::I64),
        _ => return seed.cast(IntDType::I32),
    };
    let low = wide.bitwise_and_scalar(0xFFFF_FFFFi64);
    let upper = low.clone().greater_equal_elem(1i64 << 31);
    let negative = low.clone().sub_scalar(1i64 << 32);
    low.mask_where(upper, negative).cast(IntDType::I32)
}

/// Casts everything to the kernels' dtypes, samples, and gives the results the device's
/// default dtypes.
fn dispatch(logits: Tensor<2>, options: RowSampling, step: u64) -> Result<Sampled, DmlOpsError> {
    let device = logits.device();
    let float = |t: Tensor<1>| {
        if t.dtype() == DType::F32 {
            t
        } else {
            t.cast(FloatDType::F32)
        }
    };
    let logits = if logits.dtype() == DType::F32 {
        logits
    } else {
        logits.cast(FloatDType::F32)
    };
    let int = |t: Tensor<1, Int>| {
        if t.dtype() == DType::I32 {
            t
        } else {
            t.cast(IntDType::I32)
        }
    };
    let seed = seed_words(options.seed);
    let (tokens, logprobs) = <Dispatch as DmlOps>::float_sample(
        logits.into_dispatch(),
        float(options.temperature).into_dispatch(),
        int(options.top_k).into_dispatch(),
        float(options.top_p).into_dispatch(),
        float(options.min_p).into_dispatch(),
        seed.into_dispatch(),
        step,
    );
    let tokens = Tensor::<1, Int>::from_dispatch(tokens);
    let logprobs = Tensor::<1>::from_dispatch(logprobs);
    let settings = device.settings();
    let tokens = if settings.int_dtype == IntDType::I32 {
        tokens
    } else {
        tokens.cast(settings.int_dtype)
    };
    let logprobs = if settings.float_dtype == FloatDType::F32 {
        logprobs
    } else {
        logprobs.cast(settings.float_dtype)
    };
    Ok(Sampled { tokens, logprobs })
}
