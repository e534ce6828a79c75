//! Shared by the benchmarks: timing with a device sync per call, and the ratio table printed
//! from criterion's own estimates after its report.
#![allow(dead_code)]

use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime};

use burn::backend::DispatchDevice;
use burn::backend::ops::{FloatTensorOps, IntTensorOps};
use burn::tensor::{Device, Float, Int, Tensor};
use burn_cubecl::CubeBackend;
use burn_cubecl::tensor::CubeTensor;
use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, BenchmarkId};

/// When this process configured its first benchmark group: the tables read only estimates
/// written since, so a benchmark that a filter left out shows `-`, not an earlier run's figure.
static STARTED: OnceLock<SystemTime> = OnceLock::new();

/// Settings that keep a full run of a benchmark file to a minute or two on lavapipe: 10
/// samples over 2 s per benchmark, or over `BENCH_SECONDS` seconds (`BENCH_SECONDS=5` for
/// steadier GPU figures; criterion's own `--measurement-time` is overridden by these).
pub fn configure(group: &mut BenchmarkGroup<'_, WallTime>) {
    STARTED.get_or_init(SystemTime::now);
    let seconds = match std::env::var("BENCH_SECONDS") {
        Ok(value) => value
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|s| s.is_finite() && *s > 0.0)
            .unwrap_or_else(|| {
                panic!("BENCH_SECONDS: a positive number of seconds; got {value:?}")
            }),
        Err(_) => 2.0,
    };
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs_f64(seconds));
}

/// Whether Burn says `device` can store tensors of `dtype`.
pub fn stores(device: &Device, dtype: burn::tensor::DType) -> bool {
    use burn::backend::{Backend, DTypeUsage, Dispatch};
    <Dispatch as Backend>::dtype_usage(device.as_dispatch(), dtype).contains(DTypeUsage::Storage)
}

/// The sizes to measure, as log2 of the element count: the comma-separated list in the
/// environment variable `var` (for example `20,24,26,28` on a GPU), else `default`.
pub fn sizes(var: &str, default: &[u32]) -> Vec<u32> {
    match std::env::var(var) {
        Ok(list) => list
            .split(',')
            .map(|s| {
                s.trim()
                    .parse()
                    .unwrap_or_else(|_| panic!("{var}: log2 sizes, e.g. 20,24; got {list:?}"))
            })
            .collect(),
        Err(_) => default.to_vec(),
    }
}

/// The Cube backend behind `device`, for the rows that call the kernel crate's launchers.
fn cube_device(device: &Device) -> burn_cubecl::CubeDevice {
    let DispatchDevice::Cube(cube) = device.as_dispatch().clone() else {
        panic!("the kernel-launcher rows need a Cube device, not {device:?}");
    };
    cube
}

/// A copy of `tensor`'s data as a tensor of the Cube backend under `device`, whose client and
/// handle go to the kernel crate's launchers.
pub fn cube_int<const D: usize>(tensor: &Tensor<D, Int>, device: &Device) -> CubeTensor {
    CubeBackend::int_from_data(tensor.to_data(), &cube_device(device))
}

/// [`cube_int`] for a float tensor.
pub fn cube_float<const D: usize>(tensor: &Tensor<D, Float>, device: &Device) -> CubeTensor {
    CubeBackend::float_from_data(tensor.to_data(), &cube_device(device))
}

/// Runs `op` `iters` times, waiting for the device after each call. The output lives until
/// after the sync, so Fusion cannot drop the work.
pub fn time<T>(device: &Device, iters: u64, mut op: impl FnMut() -> T) -> Duration {
    time_queued(device, iters, &[()], |_| op())
}

/// Runs `op` `iters` times over `inputs` in turn, waiting for the device once per pass over
/// them: `inputs.len()` calls are queued between two syncs, each on its own input. Outputs live
/// until after the sync, so Fusion cannot drop the work.
pub fn time_queued<I, T>(
    device: &Device,
    iters: u64,
    inputs: &[I],
    mut op: impl FnMut(&I) -> T,
) -> Duration {
    let start = Instant::now();
    let mut outputs = Vec::with_capacity(inputs.len());
    for i in 0..iters as usize {
        outputs.push(op(&inputs[i % inputs.len()]));
        if outputs.len() == inputs.len() || i + 1 == iters as usize {
            device.sync().expect("the device runs the queued work");
            outputs.clear();
        }
    }
    start.elapsed()
}

/// Benchmarks `op` as `group/name/parameter` over `inputs`, `inputs.len()` calls queued per
/// sync ([`time_queued`]), after two unmeasured passes over the inputs.
pub fn bench<I, T>(
    group: &mut BenchmarkGroup<'_, WallTime>,
    device: &Device,
    name: &str,
    parameter: &str,
    inputs: &[I],
    op: impl Fn(&I) -> T,
) {
    // The kernels compile and the memory pool takes the calls' buffers before anything is
    // timed. Without this, on a GPU the first benchmark of a size paid for both in criterion's
    // warm-up, which then judged a call to take milliseconds and took samples of 1 to 10 calls,
    // each with its own sync (about 0.2 ms on wgpu): such cells read 1.5-4x slow.
    time_queued(device, 2 * inputs.len() as u64, inputs, &op);
    group.bench_with_input(BenchmarkId::new(name, parameter), inputs, |b, xs| {
        b.iter_custom(|iters| time_queued(device, iters, xs, &op))
    });
}

/// Criterion's mean estimate for `group/name/parameter`, in nanoseconds.
pub fn mean_ns(group: &str, name: &str, parameter: &str) -> Option<f64> {
    let dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| "target".into());
    let path = dir
        .join("criterion")
        .join(group)
        .join(name)
        .join(filename_safe(parameter))
        .join("new/estimates.json");
    if let Some(started) = STARTED.get() {
        let written = std::fs::metadata(&path).and_then(|m| m.modified()).ok()?;
        if written < *started {
            return None;
        }
    }
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
    json["mean"]["point_estimate"].as_f64()
}

/// The directory name criterion gives a benchmark parameter: it replaces these characters.
fn filename_safe(name: &str) -> String {
    name.chars()
        .map(|c| if "?\"/\\*<>:|^".contains(c) { '_' } else { c })
        .collect()
}

/// Prints a Markdown table: one row per parameter, the mean time of each benchmark, and the
/// ratio of the first benchmark to each of the others.
pub fn print_ratios(title: &str, group: &str, names: &[&str], parameters: &[String]) {
    let rows: Vec<(String, Vec<f64>)> = parameters
        .iter()
        .map(|parameter| (parameter.clone(), vec![0.0; names.len()]))
        .collect();
    print_throughput(title, group, names, &rows);
}

/// Prints a Markdown table: one row per parameter with the mean time per call of each
/// benchmark, GB/s where its bytes per call are known (the non-zero entries of the row's bytes,
/// in the order of `names`), and the ratio of the first benchmark's time to each of the others'.
pub fn print_throughput(title: &str, group: &str, names: &[&str], rows: &[(String, Vec<f64>)]) {
    println!("\n{title}");
    let ours = names[0];
    let mut header = String::from("| input |");
    for name in names {
        header += &format!(" {name} |");
    }
    for name in &names[1..] {
        header += &format!(" {ours} / {name} |");
    }
    println!("{header}");
    println!("|{}", "---|".repeat(2 * names.len()));
    for (parameter, bytes) in rows {
        let times: Vec<Option<f64>> = names.iter().map(|n| mean_ns(group, n, parameter)).collect();
        let mut row = format!("| {parameter} |");
        for (time, bytes) in times.iter().zip(bytes) {
            row += &match time {
                Some(t) if *bytes > 0.0 => format!(" {:.3} ms ({:.0} GB/s) |", t / 1e6, bytes / t),
                Some(t) => format!(" {:.3} ms |", t / 1e6),
                None => " - |".to_string(),
            };
        }
        for time in &times[1..] {
            row += &match (times[0], time) {
                (Some(ours), Some(other)) => format!(" {:.2}x |", ours / other),
                _ => " - |".to_string(),
            };
        }
        println!("{row}");
    }
}
