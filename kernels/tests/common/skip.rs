//! What the GPU tests do where wgpu finds no adapter, shared by both crates' test suites
//! (`tests/common` includes this file too).
//!
//! By default a test that needs the adapter leaves its wgpu part out, and the test binary ends
//! with one line on stderr that counts those tests and says how to run them. Where GPU coverage
//! is required (CI), set [`REQUIRE_GPU`] to `1`: a missing adapter then fails every such test
//! with the same instructions.

use std::collections::BTreeSet;
use std::io::Write;
use std::sync::Mutex;

/// The environment variable that turns a missing wgpu adapter into a test failure: set it to `1`
/// where the kernels must be tested (`.ci/run` does).
pub const REQUIRE_GPU: &str = "BURN_DML_OPS_REQUIRE_GPU";

/// How to get an adapter on a machine without a GPU.
pub const INSTALL: &str = "on a machine without a GPU, install Mesa's lavapipe (a Vulkan driver \
    on the CPU): `apt-get update && apt-get install -y mesa-vulkan-drivers libvulkan1`, then \
    rerun; `vulkaninfo --summary` (package vulkan-tools) should list a device named llvmpipe";

/// How to get a CUDA device: there is no CPU stand-in.
pub const INSTALL_CUDA: &str = "use a machine with an NVIDIA GPU and its driver, or unset \
    BURN_DEVICE to test wgpu instead";

/// What to do about a missing device, for the runtime named in `cause`.
fn install(cause: &str) -> &'static str {
    if cause.contains("CUDA") {
        INSTALL_CUDA
    } else {
        INSTALL
    }
}

/// The tests of this binary that left wgpu out, by name, and the first cause seen.
static LEFT_OUT: Mutex<(BTreeSet<String>, String)> = Mutex::new((BTreeSet::new(), String::new()));

/// Whether [`REQUIRE_GPU`] is set to `1`.
pub fn gpu_required() -> bool {
    std::env::var(REQUIRE_GPU).is_ok_and(|value| value == "1")
}

/// Called by a test that found no adapter (`cause` says why). Panics with the install
/// instructions where [`REQUIRE_GPU`] is set; otherwise records the test for the summary line
/// that the binary prints when it exits, and returns so the caller can skip its wgpu part.
pub fn left_out(cause: &str) {
    if gpu_required() {
        panic!(
            "{cause}. {REQUIRE_GPU}=1 requires a GPU device: {}",
            install(cause)
        );
    }
    let test = std::thread::current()
        .name()
        .unwrap_or("a test run outside the harness")
        .to_string();
    let mut left_out = LEFT_OUT.lock().unwrap_or_else(|poison| poison.into_inner());
    if left_out.0.is_empty() {
        left_out.1 = cause.to_string();
        // SAFETY: `atexit` takes a plain function pointer; `summary` never unwinds.
        unsafe { atexit(summary) };
    }
    left_out.0.insert(test);
}

unsafe extern "C" {
    fn atexit(callback: extern "C" fn()) -> std::os::raw::c_int;
}

/// The line this binary prints at exit when tests left wgpu out: straight to the process's
/// stderr, past the harness's capture.
extern "C" fn summary() {
    let Ok(left_out) = LEFT_OUT.lock() else {
        return;
    };
    let (tests, cause) = &*left_out;
    let _ = writeln!(
        std::io::stderr(),
        "NOT RUN ON A GPU: {} test(s) of this binary left out their GPU part ({cause}): {}. \
         To run them, {}. With {REQUIRE_GPU}=1 a missing device fails them instead.",
        tests.len(),
        tests.iter().cloned().collect::<Vec<_>>().join(", "),
        install(cause),
    );
}
