//! Shared by the examples: the device they run on.

use burn::tensor::Device;

/// `Device::default()` where wgpu finds an adapter (a GPU, or lavapipe/llvmpipe on the CPU);
/// otherwise Flex, the CPU backend, after one line that says so and how to get the GPU path.
pub fn device() -> Device {
    #[cfg(feature = "wgpu")]
    if let Err(err) = cubecl::Device::wgpu(Default::default()) {
        println!(
            "No wgpu adapter ({err}); running on Flex, the CPU backend. For the GPU path, \
             install a GPU driver, or Mesa's lavapipe on a machine without a GPU: \
             `apt-get install -y mesa-vulkan-drivers libvulkan1`."
        );
        return Device::flex();
    }
    Device::default()
}
