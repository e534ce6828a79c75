//! The WebGPU device under test: Burn's own acquisition (the adapter's limits), or a device the
//! page requests with WebGPU's default limits and registers with Burn.

use burn::tensor::Device;
use burn::tensor::wgpu::{WgpuSetup, wgpu};

/// Which limits the device under test is requested with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limits {
    /// The adapter's own, as `Device::wgpu_options().init_async()` requests them.
    Adapter,
    /// WebGPU's defaults for storage (8 storage buffers per stage, 16 KiB of workgroup storage,
    /// 128 MiB bindings), or the adapter's own where it has less: what a page gets that asks for
    /// nothing.
    Default,
}

impl Limits {
    /// `"adapter"` or `"default"`.
    pub fn parse(name: &str) -> Result<Self, String> {
        match name {
            "adapter" => Ok(Self::Adapter),
            "default" => Ok(Self::Default),
            other => Err(format!("limits `{other}`: expected `adapter` or `default`")),
        }
    }
}

/// The Fusion-wrapped wgpu device of the page, at `limits`.
pub async fn webgpu(limits: Limits) -> Result<Device, String> {
    match limits {
        Limits::Adapter => Device::wgpu_options()
            .init_async()
            .await
            .map_err(|err| format!("no WebGPU device: {err}")),
        Limits::Default => {
            let instance =
                wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle());
            let adapter = instance
                .request_adapter(&Default::default())
                .await
                .map_err(|err| format!("no WebGPU adapter: {err}"))?;
            // The invocations per workgroup stay the adapter's: CubeCL 0.11 sizes cubes by the
            // adapter's limits, not the device's, and a device with fewer fails every launch.
            let (defaults, own) = (wgpu::Limits::default(), adapter.limits());
            let limits = wgpu::Limits {
                max_storage_buffers_per_shader_stage: defaults
                    .max_storage_buffers_per_shader_stage
                    .min(own.max_storage_buffers_per_shader_stage),
                max_compute_workgroup_storage_size: defaults
                    .max_compute_workgroup_storage_size
                    .min(own.max_compute_workgroup_storage_size),
                max_storage_buffer_binding_size: defaults
                    .max_storage_buffer_binding_size
                    .min(own.max_storage_buffer_binding_size),
                max_buffer_size: defaults.max_buffer_size.min(own.max_buffer_size),
                ..own
            };
            let (device, queue) = adapter
                .request_device(&wgpu::DeviceDescriptor {
                    required_features: adapter
                        .features()
                        .difference(wgpu::Features::MAPPABLE_PRIMARY_BUFFERS),
                    required_limits: limits,
                    ..Default::default()
                })
                .await
                .map_err(|err| format!("no device at WebGPU's default limits: {err}"))?;
            let backend = adapter.get_info().backend;
            Device::wgpu_options()
                .setup(WgpuSetup {
                    instance,
                    adapter,
                    device,
                    queue,
                    backend,
                })
                .init()
                .map_err(|err| format!("the device at WebGPU's default limits: {err}"))
        }
    }
}
