//! Every kernel the launchers launch, as WGSL for a browser's WebGPU, validated by Tint (Chrome's
//! WGSL compiler): each launcher runs under a [`Capture`] whose device has WebGPU's default
//! limits (16 KiB of workgroup storage, 256 invocations, 8 storage buffers per stage, 65,535
//! workgroups per dimension) and 32-bit types only, with and without the `shader-f16` and
//! `subgroups` features, at every configuration it picks there. Each kernel is turned into WGSL
//! by cubecl-wgpu's compiler, written to a folder, and checked by `tests/wgsl/validate.cjs`
//! through Dawn's node binding (npm `webgpu` 0.6.2, null backend: no GPU): shader module,
//! compilation messages and compute pipeline under the default limits, uniformity included.
//!
//! Built with `--features cubecl/exclusive-memory-only` (as CI runs it a second time), the WGSL
//! is the form browsers get: CubeCL turns that on for every wasm target, and its compiler then
//! declares each buffer a kernel never writes `var<storage, read>`, where Tint rejects atomics.
//!
//! Without node or the `webgpu` package (found through `NODE_PATH`) the test says so and checks
//! only that every kernel turns into WGSL; `BURN_DML_OPS_REQUIRE_TINT=1` makes that a failure.
//! `BURN_DML_OPS_WGSL_SOURCES=DIR` keeps the sources in `DIR`.

mod common;
mod launchers;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use burn_dml_ops_kernels::capture::Capture;
use cubecl::Compiler;
use cubecl::ir::HardwareProperties;
use cubecl::prelude::*;
use cubecl::wgpu::WgslCompiler;

use common::devices::webgpu_properties;
use launchers::{KERNELS, OPERATORS, assert_count_fits, assert_cube_fits};

/// The kernels no launcher picks for a browser's adapter, and why: each needs a type or an
/// atomic that WebGPU lacks, and its launcher takes another path (or refuses the dtype) there.
const NOT_FOR_BROWSERS: [&str; 1] = [
    // Deterministic f64 `Add`/`Mul` computes in f64, which no browser has: an `Err` there.
    "scatter_nd_ordered_f64",
];

/// One captured kernel as WGSL (as cubecl-wgpu compiles it for wasm32): its function and the
/// name CubeCL gave this configuration.
struct WgslSource {
    function: String,
    name: String,
    code: String,
}

/// Turns `kernel` (as launched: unchecked) into WGSL, after checking that its cube fits
/// `hardware`; its function is the longest of `KERNELS` that starts its name.
fn wgsl_of(kernel: &dyn CubeKernel, hardware: &HardwareProperties) -> WgslSource {
    let configuration = format!("{:?}", kernel.id());
    let mut definition = cubecl::define_kernel(kernel)
        .unwrap_or_else(|err| panic!("{configuration}: the kernel does not expand: {err}"));
    definition.settings.execution_mode = ExecutionMode::Unchecked;
    let name = definition.settings.kernel_name.clone();
    assert_cube_fits(&name, definition.settings.cube_dim, hardware);
    let shader = WgslCompiler
        .compile(definition, &Default::default())
        .unwrap_or_else(|err| panic!("{name} at {configuration}: no WGSL: {err}"));
    let function = KERNELS
        .iter()
        .filter(|function| name.starts_with(**function))
        .max_by_key(|function| function.len())
        .unwrap_or_else(|| panic!("{name} is none of the kernels {KERNELS:?}"))
        .to_string();
    let mut code = shader.to_string();
    // cubecl-wgpu built for wasm32 enables subgroups where a kernel uses them, as browsers
    // require; built natively it leaves the directive out, which naga rejects.
    if code.contains("subgroup") && !code.contains("enable subgroups;") {
        code.insert_str(0, "enable subgroups;\n");
    }
    WgslSource {
        function,
        name,
        code,
    }
}

/// Every kernel every launcher builds on a WebGPU adapter with `features`, by file stem; each
/// configuration is turned into WGSL once, and every launch is checked against the adapter's
/// limits on cubes (which Tint does not see).
fn every_kernel(client: &Client, f16: bool, subgroups: bool) -> BTreeMap<String, WgslSource> {
    let properties = webgpu_properties(client, f16, subgroups);
    let hardware = properties.hardware.clone();
    let capture = Capture::open(properties, Default::default());
    let mut kernels = BTreeMap::new();
    for (_, launch, _) in OPERATORS {
        launch(client);
        for captured in capture.take() {
            let id = format!("{:?}", captured.kernel.id());
            assert_count_fits(&id, &captured.cube_count, &hardware);
            kernels.entry(id).or_insert(captured.kernel);
        }
    }
    kernels
        .into_values()
        .map(|kernel| {
            let source = wgsl_of(&*kernel, &hardware);
            let configuration = source.name[source.function.len()..].trim_start_matches('_');
            (format!("{}__{configuration}", source.function), source)
        })
        .collect()
}

/// A source Tint rejected: its file (`<kernel>__<configuration>.wgsl`) and Tint's messages.
struct Failure {
    file: String,
    message: String,
}

/// Runs the Tint validation of the `.wgsl` files in `dir`: `None` where node or Dawn is missing,
/// else each failing file with Tint's messages.
fn validate(dir: &Path, features: &[&str]) -> Option<Vec<Failure>> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/wgsl/validate.cjs");
    let output = Command::new("node")
        .arg(script)
        .arg(dir)
        .args(features)
        .output()
        .ok()?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if output.status.code() == Some(2) {
        eprintln!("{}", String::from_utf8_lossy(&output.stderr).trim());
        return None;
    }
    assert!(
        output.status.success(),
        "the validation script failed: {}{stdout}",
        String::from_utf8_lossy(&output.stderr)
    );
    let mut failures = Vec::new();
    let mut checked = 0;
    for line in stdout.lines() {
        if line.starts_with("ok ") {
            checked += 1;
        } else if let Some(file) = line.strip_prefix("error ") {
            checked += 1;
            failures.push(Failure {
                file: file.to_string(),
                message: String::new(),
            });
        } else if let Some(message) = line.strip_prefix('\t') {
            let last = failures.last_mut().expect("a message follows its file");
            last.message.push_str("\n    ");
            last.message.push_str(message);
        }
    }
    let files = std::fs::read_dir(dir)
        .expect("the sources folder is read")
        .filter(|entry| {
            entry
                .as_ref()
                .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "wgsl"))
        })
        .count();
    assert_eq!(checked, files, "Tint's report covers every file:\n{stdout}");
    Some(failures)
}

#[test]
fn every_kernel_is_valid_wgsl_for_browsers() {
    let Some(client) = common::client() else {
        return;
    };
    let root = std::env::var("BURN_DML_OPS_WGSL_SOURCES").map_or_else(
        |_| std::env::temp_dir().join(format!("burn-dml-ops-wgsl-{}", std::process::id())),
        Into::into,
    );
    let mut built = BTreeSet::new();
    let mut failures = Vec::new();
    let mut validated = true;
    let mut total = 0;
    // Each feature off and on: a core adapter, and one with both.
    for (f16, subgroups) in [(false, false), (true, true)] {
        let features: Vec<&str> = [(f16, "shader-f16"), (subgroups, "subgroups")]
            .into_iter()
            .filter_map(|(on, feature)| on.then_some(feature))
            .collect();
        let dir = root.join(if features.is_empty() {
            "core".to_string()
        } else {
            features.join("+")
        });
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("the sources folder is made");
        let sources = every_kernel(&client, f16, subgroups);
        total += sources.len();
        for (stem, source) in &sources {
            built.insert(source.function.clone());
            std::fs::write(dir.join(format!("{stem}.wgsl")), &source.code)
                .expect("a source is written");
        }
        match validate(&dir, &features) {
            Some(found) => failures.extend(found.into_iter().map(|failure| Failure {
                file: failure.file,
                message: format!("[{}]{}", features.join("+"), failure.message),
            })),
            None => validated = false,
        }
    }
    if std::env::var_os("BURN_DML_OPS_WGSL_SOURCES").is_none() {
        let _ = std::fs::remove_dir_all(&root);
    }
    let never: BTreeSet<&str> = KERNELS
        .iter()
        .copied()
        .filter(|kernel| !built.contains(*kernel))
        .collect();
    assert_eq!(
        never,
        NOT_FOR_BROWSERS.into_iter().collect(),
        "the kernels no launcher picks for a browser"
    );
    if !validated {
        let message = "node or its `webgpu` package not found (npm install webgpu@0.6.2, and \
                       NODE_PATH to its node_modules): every kernel turned into WGSL, none \
                       validated";
        assert!(
            std::env::var_os("BURN_DML_OPS_REQUIRE_TINT").is_none(),
            "{message}"
        );
        eprintln!("{message}");
        return;
    }
    eprintln!("{total} kernel configurations validated by Tint");
    assert!(
        failures.is_empty(),
        "{} of {total} WGSL sources rejected by Tint:\n{}",
        failures.len(),
        failures
            .iter()
            .map(|f| format!("{}: {}", f.file, f.message))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// Launchers size their cubes for the device they decide for (a capture's, here), never for
/// the client they were handed: BitCount's elementwise cubes are made of planes of the widest
/// size the captured device reports, whatever the client's own plane size.
#[test]
fn cubes_are_sized_for_the_captured_device() {
    let Some(client) = common::client() else {
        return;
    };
    for plane in [4, 16, 128] {
        let mut properties = webgpu_properties(&client, false, true);
        properties.hardware.plane_size_max = plane;
        let hardware = properties.hardware.clone();
        let capture = Capture::open(properties, Default::default());
        launchers::launch_every_bit_count(&client);
        let launches = capture.take();
        assert!(!launches.is_empty(), "BitCount built no kernel");
        for launch in launches {
            let definition = cubecl::define_kernel(&*launch.kernel).expect("the kernel expands");
            let (name, cube_dim) = (
                definition.settings.kernel_name,
                definition.settings.cube_dim,
            );
            assert_cube_fits(&name, cube_dim, &hardware);
            assert_count_fits(&name, &launch.cube_count, &hardware);
            assert_eq!(cube_dim.x, plane, "{name}: a cube of {cube_dim:?}");
        }
    }
}

/// The device `BURN_DML_OPS_WEBGPU_LIMITS=1` gives the kernel tests (CI runs them on it) has
/// WebGPU's limits where the launchers read them: 7 storage buffers of a kernel's own (CubeCL
/// binds the eighth) and 16 KiB of workgroup storage.
#[test]
fn the_limited_device_reports_webgpu_limits() {
    if common::client().is_none() {
        return;
    }
    let client = common::webgpu_limited_client();
    let hardware = &client.properties().hardware;
    assert!(
        hardware.max_bindings <= 7 && hardware.max_shared_memory_size <= 16_384,
        "{} storage buffers and {} bytes of workgroup storage",
        hardware.max_bindings,
        hardware.max_shared_memory_size
    );
}
