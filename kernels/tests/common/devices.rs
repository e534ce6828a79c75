//! The devices that captures build kernels for, as CubeCL would report them: an NVIDIA H100 and a
//! browser's WebGPU adapter with the default limits.

use cubecl::ir::features::{AtomicUsage, Plane, TypeUsage};
use cubecl::ir::{
    AddressType, DeviceIdentity, DeviceProperties, ElemType, FloatKind, HardwareProperties,
    IntKind, Type, UIntKind, VectorSize,
};
use cubecl::prelude::*;

/// A captured device's properties: `hardware`, named `name` (`fingerprint` for CubeCL's
/// caches), with the client's memory and timing and no types registered yet.
pub fn captured_device(
    client: &Client,
    hardware: HardwareProperties,
    name: &str,
    fingerprint: &str,
) -> DeviceProperties {
    DeviceProperties::new(
        Default::default(),
        client.properties().memory.clone(),
        hardware,
        client.properties().timing_method,
        DeviceIdentity {
            name: name.into(),
            fingerprint: fingerprint.into(),
            physical: None,
        },
    )
}

/// What CubeCL's CUDA runtime reports for an H100 (compute capability 9.0), as far as the
/// launchers and the kernels' expansion read it: 32-lane planes, 1024 units and 227 KiB of
/// shared memory per cube, 132 multiprocessors, plane operations; no types registered yet.
pub fn sm90_device(client: &Client) -> DeviceProperties {
    let hardware = HardwareProperties {
        load_width: 128,
        vector_register_count: None,
        plane_size_min: 32,
        plane_size_max: 32,
        max_bindings: 1024,
        max_shared_memory_size: 232_448,
        max_cube_count: (i32::MAX as u32, 65_535, 65_535),
        max_units_per_cube: 1024,
        max_cube_dim: (1024, 1024, 64),
        num_streaming_multiprocessors: Some(132),
        num_tensor_cores: None,
        min_tensor_cores_dim: None,
        num_cpu_cores: None,
        last_level_cache_size: None,
        max_vector_size: VectorSize::MAX,
        cube_mma_reserved_shared_memory: 0,
    };
    let mut properties = captured_device(
        client,
        hardware,
        "NVIDIA compute capability 9.0 (captured)",
        "ptx_sm90",
    );
    properties.features.plane.insert(Plane::Ops);
    properties.features.plane.insert(Plane::Sync);
    properties
        .features
        .plane
        .insert(Plane::NonUniformControlFlow);
    properties.features.memory_reinterpret = true;
    properties.features.alignment = true;
    properties.features.device_memory_scope = true;
    properties
}

/// Registers 32-bit types and their atomics only (as wgpu's OpenGL backend binds them), with
/// 32- and 64-bit addresses: the launchers then pick their words, packed and split forms.
pub fn register_words32(properties: &mut DeviceProperties) {
    properties.register_address_type(AddressType::U32);
    properties.register_address_type(AddressType::U64);
    for elem in [
        ElemType::UInt(UIntKind::U32),
        ElemType::Int(IntKind::I32),
        ElemType::Float(FloatKind::F32),
        ElemType::Bool,
    ] {
        properties.register_type_usage(elem, TypeUsage::all());
    }
    for elem in [ElemType::UInt(UIntKind::U32), ElemType::Int(IntKind::I32)] {
        properties.register_atomic_type_usage(Type::atomic(elem), AtomicUsage::all());
    }
    properties.register_atomic_type_usage(
        Type::atomic(ElemType::Float(FloatKind::F32)),
        AtomicUsage::Add | AtomicUsage::LoadStore | AtomicUsage::Exchange,
    );
}

/// An adapter as a page gets it without asking for limits: WebGPU's defaults, 32-bit types and
/// atomics, `f16` and subgroups (of any size from 4 to 128) where the feature is on.
pub fn webgpu_properties(client: &Client, f16: bool, subgroups: bool) -> DeviceProperties {
    let hardware = HardwareProperties {
        load_width: 128,
        vector_register_count: None,
        plane_size_min: 4,
        plane_size_max: 128,
        // 8 storage buffers per stage, one of them CubeCL's own (as cubecl-wgpu counts them).
        max_bindings: 7,
        max_shared_memory_size: 16_384,
        max_cube_count: (65_535, 65_535, 65_535),
        max_units_per_cube: 256,
        max_cube_dim: (256, 256, 64),
        num_streaming_multiprocessors: None,
        num_tensor_cores: None,
        min_tensor_cores_dim: None,
        num_cpu_cores: None,
        last_level_cache_size: None,
        max_vector_size: 4,
        cube_mma_reserved_shared_memory: 0,
    };
    let mut properties = captured_device(
        client,
        hardware,
        "WebGPU default limits (captured)",
        "webgpu_default",
    );
    properties.register_address_type(AddressType::U32);
    for elem in [
        ElemType::UInt(UIntKind::U32),
        ElemType::Int(IntKind::I32),
        ElemType::Float(FloatKind::F32),
        ElemType::Float(FloatKind::Flex32),
        ElemType::Bool,
    ] {
        properties.register_type_usage(elem, TypeUsage::all());
    }
    if f16 {
        properties.register_type_usage(ElemType::Float(FloatKind::F16), TypeUsage::all());
    }
    for elem in [ElemType::UInt(UIntKind::U32), ElemType::Int(IntKind::I32)] {
        properties.register_atomic_type_usage(
            Type::atomic(elem),
            AtomicUsage::LoadStore | AtomicUsage::Exchange | AtomicUsage::Add,
        );
    }
    if subgroups {
        properties.features.plane.insert(Plane::Ops);
    }
    properties
}
