//! Shared by the kernel crate's tests: the wgpu client they launch on.

use cubecl::prelude::*;

/// The wgpu client (lavapipe on a machine without a GPU). Panics with install instructions
/// when there is no adapter: these tests never skip.
pub fn client() -> Client {
    cubecl::Device::wgpu(Default::default())
        .unwrap_or_else(|err| {
            panic!(
                "no wgpu adapter ({err}). These tests run CubeCL kernels; on a machine without \
                 a GPU install Mesa's lavapipe: `apt-get install -y mesa-vulkan-drivers \
                 libvulkan1`"
            )
        })
        .client()
}
