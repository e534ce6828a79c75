//! Every kernel the launchers launch, compiled for NVIDIA GPUs without one (run with
//! `--features cuda-compile-test`): each launcher runs
//! under a [`Capture`] whose device properties are an sm_90 GPU's (32-lane planes; every type
//! CUDA binds), at every configuration it picks there (dtypes, compaction plans and layouts,
//! ScatterND strategies and reductions, BitCount paths, Compress's moves, the copies). Each
//! captured kernel is turned into CUDA C++ by cubecl-cpp, then compiled by NVRTC for
//! `compute_80` and `compute_90` and by `ptxas` for `sm_80` and `sm_90`. The launchers run a
//! second time on a device that binds only 32-bit types, so that their words, packed and split
//! forms (never picked on CUDA) are checked to compile too, for sm_90.
//!
//! NVRTC and the CUDA headers are found under `CUDA_PATH` (`lib/libnvrtc.so*`, `include/`,
//! `bin/ptxas`), which may be the `nvidia/cu13` folder of the `nvidia-cuda-nvrtc`,
//! `nvidia-cuda-runtime` and `nvidia-cuda-nvcc` wheels. Without them the test says so and
//! checks only that every kernel turns into CUDA C++; `BURN_DML_OPS_REQUIRE_NVRTC=1` makes that
//! a failure. `BURN_DML_OPS_CUDA_SOURCES=DIR` writes each source to
//! `DIR/<kernel>__<configuration>.cu`, and `ptxas`'s resource report beside it as `.txt`.

mod common;
mod cuda;
mod launchers;

use std::collections::BTreeMap;

use burn_dml_ops_kernels::capture::Capture;
use cubecl::prelude::*;

use cuda::{CapturedSource, Nvrtc, Resources, Types, sm90_properties};
use launchers::{KERNELS, OPERATORS, assert_count_fits, assert_cube_fits};

/// Runs `launch` under a capture on an sm_90 device, then on one that binds 32-bit types only
/// (so the launchers' words and packed forms are built too), and returns what it built, once
/// per kernel and configuration, as CUDA C++; `functions` names the kernel functions. A
/// launcher that refuses a combination (an `Err`) builds nothing, as it would on a GPU.
fn capture_all(
    client: &Client,
    functions: &[&str],
    mut launch: impl FnMut(&Client),
) -> Vec<CapturedSource> {
    let mut kernels = BTreeMap::new();
    for types in [Types::Cuda, Types::Words32] {
        let properties = sm90_properties(client, types);
        let hardware = properties.hardware.clone();
        let capture = Capture::open(properties, Default::default());
        launch(client);
        for captured in capture.take() {
            let id = format!("{:?}", captured.kernel.id());
            assert_count_fits(&id, &captured.cube_count, &hardware);
            kernels.entry(id).or_insert((captured.kernel, types));
        }
    }
    kernels
        .into_values()
        .map(|(kernel, types)| {
            let source = CapturedSource::new(kernel, functions, types);
            let hardware = sm90_properties(client, types).hardware;
            assert_cube_fits(&source.name, source.cube_dim, &hardware);
            source
        })
        .collect()
}

/// Captures every launcher at every configuration, and expects each operator to have built
/// every kernel it has.
fn every_kernel(client: &Client) -> BTreeMap<String, CapturedSource> {
    let mut sources = BTreeMap::new();
    for (operator, launch, expected) in OPERATORS {
        let captured = capture_all(client, &KERNELS, launch);
        for kernel in expected.iter() {
            assert!(
                captured.iter().any(|source| source.function == *kernel),
                "{operator}: no launch of {kernel} at any configuration; built: {:?}",
                captured
                    .iter()
                    .map(|s| &s.function)
                    .collect::<std::collections::BTreeSet<_>>()
            );
        }
        for source in captured {
            sources.entry(source.file_stem()).or_insert(source);
        }
    }
    sources
}

#[test]
fn every_kernel_compiles_for_nvidia() {
    let Some(client) = common::client() else {
        return;
    };
    let sources = every_kernel(&client);
    eprintln!(
        "{} kernel configurations turned into CUDA C++",
        sources.len()
    );
    if let Ok(dir) = std::env::var("BURN_DML_OPS_CUDA_SOURCES") {
        std::fs::create_dir_all(&dir).expect("the sources folder can be made");
        for (stem, source) in &sources {
            std::fs::write(format!("{dir}/{stem}.cu"), &source.code).expect("a source is written");
        }
    }
    let Some(nvrtc) = Nvrtc::find() else {
        let message = "NVRTC not found (set CUDA_PATH to a folder with lib/libnvrtc.so* and \
                       include/): every kernel turned into CUDA C++, none compiled";
        assert!(
            std::env::var_os("BURN_DML_OPS_REQUIRE_NVRTC").is_none(),
            "{message}"
        );
        eprintln!("{message}");
        return;
    };
    // Compiled on every core: NVRTC and ptxas take about a quarter of a second a source.
    let sources: Vec<(&String, &CapturedSource)> = sources.iter().collect();
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let chunk = sources.len().div_ceil(threads).max(1);
    let results: Vec<(Vec<String>, Vec<String>)> = std::thread::scope(|scope| {
        let workers: Vec<_> = sources
            .chunks(chunk)
            .map(|part| scope.spawn(|| compile_all(&nvrtc, part)))
            .collect();
        workers
            .into_iter()
            .map(|worker| worker.join().expect("a compile thread"))
            .collect()
    });
    let (failures, rows): (Vec<String>, Vec<String>) = results.into_iter().fold(
        (Vec::new(), Vec::new()),
        |(mut failures, mut rows), (f, r)| {
            failures.extend(f);
            rows.extend(r);
            (failures, rows)
        },
    );
    let ptxas_reports = rows.len();
    if let Ok(dir) = std::env::var("BURN_DML_OPS_CUDA_SOURCES") {
        let table = format!(
            "kernel\tunits\tregisters\tspill_bytes\tshared_bytes\toccupancy_sm90\n{}",
            rows.join("")
        );
        std::fs::write(format!("{dir}/resources_sm90.tsv"), table).expect("the table is written");
    }
    eprintln!(
        "{} sources compiled by NVRTC; {ptxas_reports} assembled by ptxas for sm_90",
        sources.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {} compilations failed:\n{}",
        failures.len(),
        2 * sources.len(),
        failures.join("\n\n")
    );
}

/// Compiles `sources` for compute_80 and compute_90 and assembles them for sm_80 and sm_90:
/// the failures, and a resource row (tab-separated, sm_90) per source `ptxas` assembled.
fn compile_all(
    nvrtc: &Nvrtc,
    sources: &[(&String, &CapturedSource)],
) -> (Vec<String>, Vec<String>) {
    let mut failures = Vec::new();
    let mut rows = Vec::new();
    for (stem, source) in sources {
        // The words and packed forms run where types are missing, never on CUDA: they are
        // checked to compile for the newest architecture only.
        let archs: &[u32] = match source.types {
            Types::Cuda => &[80, 90],
            Types::Words32 => &[90],
        };
        for &arch in archs {
            match nvrtc.compile(&source.code, arch) {
                Ok(ptx) => match nvrtc.ptxas(&ptx, arch) {
                    Some(Ok(report)) if arch == 90 => {
                        let resources = Resources::parse(&report)
                            .unwrap_or_else(|| panic!("{stem}: an unread ptxas report: {report}"));
                        let occupancy =
                            resources.occupancy_sm90(source.units, source.shared_memory);
                        rows.push(format!(
                            "{stem}\t{}\t{}\t{}\t{}\t{occupancy:.2}\n",
                            source.units,
                            resources.registers,
                            resources.spill_bytes,
                            source.shared_memory + resources.static_shared,
                        ));
                    }
                    Some(Ok(_)) | None => {}
                    Some(Err(log)) => failures.push(format!("{stem} (ptxas sm_{arch}): {log}")),
                },
                Err(log) => failures.push(format!("{stem} (NVRTC compute_{arch}): {log}")),
            }
        }
    }
    (failures, rows)
}
