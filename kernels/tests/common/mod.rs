//! Shared by the kernel crate's tests: the wgpu client they launch on, and what they do where
//! there is none (see `skip.rs`).

#![allow(dead_code)]

pub mod devices;
pub mod nonzero;
pub mod scatter;
mod skip;

pub use skip::left_out;

use burn_dml_ops_kernels::StorageWidth;
use cubecl::ir::{ElemType, IntKind, UIntKind};
use cubecl::prelude::*;

/// Every storage width, 8 to 64 bits.
pub const WIDTHS: [StorageWidth; 4] = [
    StorageWidth::W8,
    StorageWidth::W16,
    StorageWidth::W32,
    StorageWidth::W64,
];

/// Every integer element type, unsigned and signed, 8 to 64 bits.
pub const INTEGERS: [ElemType; 8] = [
    ElemType::UInt(UIntKind::U8),
    ElemType::Int(IntKind::I8),
    ElemType::UInt(UIntKind::U16),
    ElemType::Int(IntKind::I16),
    ElemType::UInt(UIntKind::U32),
    ElemType::Int(IntKind::I32),
    ElemType::UInt(UIntKind::U64),
    ElemType::Int(IntKind::I64),
];

/// Bytes written after an output's end, which no launch may change.
pub const GUARD: usize = 8;
/// The value of the [`GUARD`] bytes.
pub const GUARD_BYTE: u8 = 0xA5;
/// An offset every wgpu adapter accepts for a binding.
pub const OFFSET: usize = 256;

/// A seeded xorshift stream of 64-bit values, for test data.
pub fn xorshift(seed: u64) -> impl FnMut() -> u64 {
    let mut state = seed | 1;
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
}

/// The wgpu client (lavapipe on a machine without a GPU), or `None` where wgpu finds no adapter:
/// the caller then returns, and the binary's exit line counts the test as not run (a failure
/// under `BURN_DML_OPS_REQUIRE_GPU=1`). With `BURN_DML_OPS_WEBGPU_LIMITS=1`, a device of the
/// same adapter created with WebGPU's default limits on storage buffers (8 per stage) and
/// workgroup storage (16 KiB), which the launchers read from the device (cubecl-wgpu takes
/// the invocations per workgroup from the adapter, so those stay the adapter's).
pub fn client() -> Option<Client> {
    if std::env::var_os("BURN_DML_OPS_WEBGPU_LIMITS").is_some() {
        return Some(webgpu_limited_client());
    }
    match cubecl::Device::wgpu(Default::default()) {
        Ok(device) => Some(device.client()),
        Err(err) => {
            left_out(&format!("no wgpu adapter: {err}"));
            None
        }
    }
}

/// The client of [`client`] under `BURN_DML_OPS_WEBGPU_LIMITS`: the default wgpu adapter with
/// WebGPU's default limits on storage buffers and workgroup storage. Panics without an adapter.
pub fn webgpu_limited_client() -> Client {
    cubecl::Device::from(webgpu_limited_device().clone()).client()
}

/// Polls a future of wgpu's native backends, which are ready when first polled, to its end.
fn ready<T>(future: impl std::future::Future<Output = T>) -> T {
    let mut future = std::pin::pin!(future);
    let mut context = std::task::Context::from_waker(std::task::Waker::noop());
    loop {
        if let std::task::Poll::Ready(value) = future.as_mut().poll(&mut context) {
            return value;
        }
    }
}

/// The device of [`webgpu_limited_client`], created once per test binary (an existing setup,
/// beside the default device that the other tests' clients use).
fn webgpu_limited_device() -> &'static cubecl::wgpu::WgpuDevice {
    use cubecl::wgpu::{WgpuSetup, init_device, wgpu};
    static DEVICE: std::sync::OnceLock<cubecl::wgpu::WgpuDevice> = std::sync::OnceLock::new();
    DEVICE.get_or_init(|| {
        let instance =
            wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
        let adapter = ready(instance.request_adapter(&Default::default()))
            .expect("a wgpu adapter for the device with WebGPU's limits");
        // WebGPU's defaults, or the adapter's own where it has less (some GL drivers).
        let (defaults, own) = (wgpu::Limits::default(), adapter.limits());
        let limits = wgpu::Limits {
            max_storage_buffers_per_shader_stage: defaults
                .max_storage_buffers_per_shader_stage
                .min(own.max_storage_buffers_per_shader_stage),
            max_compute_workgroup_storage_size: defaults
                .max_compute_workgroup_storage_size
                .min(own.max_compute_workgroup_storage_size),
            ..own
        };
        let (device, queue) = ready(
            adapter.request_device(&wgpu::DeviceDescriptor {
                required_features: adapter
                    .features()
                    .difference(wgpu::Features::MAPPABLE_PRIMARY_BUFFERS),
                required_limits: limits,
                ..Default::default()
            }),
        )
        .expect("a device with WebGPU's default limits");
        let backend = adapter.get_info().backend;
        init_device(
            WgpuSetup {
                instance,
                adapter,
                device,
                queue,
                backend,
            },
            Default::default(),
        )
    })
}

/// Whether `client` binds buffers of `elem`.
pub fn binds(client: &Client, elem: ElemType) -> bool {
    client
        .properties()
        .type_usage(elem)
        .contains(cubecl::features::TypeUsage::Buffer)
}

/// Whether a float `Min` (`smaller`) or `Max` update `value` replaces `acc` under the crate's
/// rule: it ranks strictly below (above), with `-0.0` below `+0.0`; a NaN ranks nowhere. Every
/// narrower float converts to f64 exactly, sign of zero and NaN included.
pub fn float_replaces(smaller: bool, acc: f64, value: f64) -> bool {
    let below = value < acc || (value == acc && value.is_sign_negative() && acc.is_sign_positive());
    let above = value > acc || (value == acc && value.is_sign_positive() && acc.is_sign_negative());
    if smaller { below } else { above }
}

/// Deterministic bytes with every bit pattern density.
pub fn bytes(count: usize, seed: u64) -> Vec<u8> {
    let mut state = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
    (0..count)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 33) as u8
        })
        .collect()
}
