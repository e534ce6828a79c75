//! Shared by the kernel crate's tests: the wgpu client they launch on, and what they do where
//! there is none (see `skip.rs`).

#![allow(dead_code)]

mod skip;

use skip::left_out;

use cubecl::prelude::*;

/// The wgpu client (lavapipe on a machine without a GPU), or `None` where wgpu finds no adapter:
/// the caller then returns, and the binary's exit line counts the test as not run (a failure
/// under `BURN_DML_OPS_REQUIRE_GPU=1`).
pub fn client() -> Option<Client> {
    match cubecl::Device::wgpu(Default::default()) {
        Ok(device) => Some(device.client()),
        Err(err) => {
            left_out(&format!("no wgpu adapter: {err}"));
            None
        }
    }
}
