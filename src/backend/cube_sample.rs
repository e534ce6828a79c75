//! Token sampling on `CubeBackend`, through the kernel crate's launcher.

use burn::backend::TensorMetadata;
use burn::tensor::DType;
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::tensor::CubeTensor;
use burn_dml_ops_kernels::sample::{SampleInput, SampleOutput, launch_sample};

use super::cube_common::{empty_output, launch_failed};

/// The per-row options of [`sample`], contiguous: `f32` temperature, top-p and min-p, `i32`
/// top-k and seeds.
pub(super) struct RowOptions {
    pub temperature: CubeTensor,
    pub top_k: CubeTensor,
    pub top_p: CubeTensor,
    pub min_p: CubeTensor,
    pub seeds: CubeTensor,
}

/// One token per row of contiguous-able `f32` logits `[batch, vocab]`: `(tokens, logprobs)`,
/// `i32` and `f32`, in one launch and with nothing read back.
pub(super) fn sample(
    logits: CubeTensor,
    options: RowOptions,
    step: u64,
) -> (CubeTensor, CubeTensor) {
    let logits = into_contiguous(logits);
    let [rows, vocab] = [logits.shape()[0], logits.shape()[1]];
    // One buffer, the log-probabilities from an aligned offset: each part is a tensor's view.
    let alignment = logits.client.properties().memory.alignment as usize;
    let part = (rows * 4).next_multiple_of(alignment).max(alignment);
    let results = empty_output(&logits, [2 * part / 4].into(), DType::I32);
    let handle = |tensor: CubeTensor| into_contiguous(tensor).handle.clone();
    launch_sample(
        &logits.client,
        &SampleInput {
            logits: logits.handle.clone(),
            temperature: handle(options.temperature),
            top_k: handle(options.top_k),
            top_p: handle(options.top_p),
            min_p: handle(options.min_p),
            seeds: handle(options.seeds),
        },
        &SampleOutput {
            results: results.handle.clone(),
            logprobs_at: part / 4,
        },
        rows,
        vocab,
        step,
    )
    .unwrap_or_else(|err| launch_failed("Sample", &logits.device, err));
    let view = |handle, dtype| {
        CubeTensor::new_contiguous(
            results.client.clone(),
            results.device.clone(),
            [rows].into(),
            handle,
            dtype,
        )
    };
    let whole = results.handle.clone();
    let tokens = view(whole.clone().offset_end(part as u64), DType::I32);
    let logprobs = view(whole.offset_start(part as u64), DType::F32);
    (tokens, logprobs)
}
