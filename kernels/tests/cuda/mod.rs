//! What the CUDA compile test needs besides the launchers: an sm_90 GPU's device properties,
//! a captured kernel's CUDA C++, and NVRTC and `ptxas` found through `CUDA_PATH`.

use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::path::PathBuf;
use std::process::Command;

use cubecl::Compiler;
use cubecl::CubeKernel;
use cubecl::ir::features::AtomicUsage;
use cubecl::ir::settings::Dim3;
use cubecl::ir::{DeviceProperties, ElemType, FloatKind, Type};
use cubecl::prelude::*;
use cubecl_cpp::shared::{CompilationOptions, CppCompiler, CppSupportedFeatures};
use cubecl_cpp::target::Cuda;

use crate::common::devices::{register_words32, sm90_device};

/// The types a capture's device binds.
#[derive(Clone, Copy, Debug)]
pub enum Types {
    /// Every type CUDA binds: what the launchers see on an NVIDIA GPU.
    Cuda,
    /// 32-bit types only (as on wgpu's OpenGL backend): the launchers then pick their words,
    /// packed and split forms, so that those compile for CUDA too.
    Words32,
}

/// An H100's properties (see `sm90_device`) with the types of `types` and the atomics of sm_90.
pub fn sm90_properties(client: &Client, types: Types) -> DeviceProperties {
    let mut properties = sm90_device(client);
    match types {
        Types::Cuda => {
            cubecl_cpp::register_supported_types(&mut properties);
            properties.register_atomic_type_usage(
                Type::atomic(ElemType::Float(FloatKind::F64)),
                AtomicUsage::Add | AtomicUsage::LoadStore | AtomicUsage::Exchange,
            );
            properties.register_atomic_type_usage(
                Type::atomic(ElemType::Float(FloatKind::F16)),
                AtomicUsage::Add,
            );
        }
        Types::Words32 => register_words32(&mut properties),
    }
    properties
}

/// One captured kernel as CUDA C++: its function, the name CubeCL gave this configuration of
/// it (the function's name, its types and a digest), and the source.
pub struct CapturedSource {
    pub function: String,
    pub name: String,
    pub code: String,
    /// Units per cube.
    pub units: u32,
    /// The cube's size along each dimension.
    pub cube_dim: Dim3,
    /// Bytes of shared memory the launch reserves (cubecl-cpp's dynamic shared memory).
    pub shared_memory: usize,
    /// The types of the device it was built for.
    pub types: Types,
}

impl CapturedSource {
    /// Defines `kernel` (as launched: unchecked) and compiles it with cubecl-cpp's CUDA
    /// dialect; its function is the longest of `functions` that starts its name. A kernel that
    /// does not turn into CUDA C++ fails the test, naming it.
    pub fn new(kernel: Box<dyn CubeKernel>, functions: &[&str], types: Types) -> Self {
        let configuration = format!("{:?}", kernel.id());
        let mut definition = cubecl::define_kernel(&*kernel)
            .unwrap_or_else(|err| panic!("{configuration}: the kernel does not expand: {err}"));
        // Launchers launch unchecked; the capture builds kernels as checked ones.
        definition.settings.execution_mode = ExecutionMode::Unchecked;
        let name = definition.settings.kernel_name.clone();
        let cube_dim = definition.settings.cube_dim;
        let units = cube_dim.num_elems();
        let options = CompilationOptions {
            warp_size: 32,
            supports_features: CppSupportedFeatures {
                grid_constants: true,
                ..Default::default()
            },
            ..Default::default()
        };
        let kernel = CppCompiler::<Cuda>::default()
            .compile(definition, &options)
            .unwrap_or_else(|err| panic!("{name} at {configuration}: no CUDA C++: {err}"));
        let shared_memory = kernel.shared_memory_size;
        let code = kernel.to_string();
        let function = functions
            .iter()
            .filter(|function| name.starts_with(**function))
            .max_by_key(|function| function.len())
            .unwrap_or_else(|| panic!("{name} is none of the expected kernels {functions:?}"))
            .to_string();
        Self {
            function,
            name,
            code,
            units,
            cube_dim,
            shared_memory,
            types,
        }
    }

    /// `<function>__<configuration>`, usable as a file name: the configuration is what CubeCL
    /// appends to the function's name (its types and a digest of the rest).
    pub fn file_stem(&self) -> String {
        let configuration = self.name[self.function.len()..].trim_start_matches('_');
        format!("{}__{configuration}", self.function)
    }
}

/// What `ptxas -v` reports for one kernel, and the occupancy it allows.
#[derive(Clone, Debug)]
pub struct Resources {
    pub registers: u32,
    pub spill_bytes: u32,
    pub static_shared: usize,
}

impl Resources {
    /// Reads `ptxas -v`'s report.
    pub fn parse(report: &str) -> Option<Self> {
        let number_before = |marker: &str| -> Option<u64> {
            let at = report.find(marker)?;
            report[..at].split_whitespace().last()?.parse().ok()
        };
        Some(Self {
            registers: number_before(" registers")? as u32,
            spill_bytes: (number_before(" bytes spill stores").unwrap_or(0)
                + number_before(" bytes spill loads").unwrap_or(0)) as u32,
            static_shared: number_before(" bytes smem").unwrap_or(0) as usize,
        })
    }

    /// The share of an sm_90 SM's 64 warp slots that cubes of `units` units using these
    /// registers and `shared` more bytes of shared memory can fill: registers are allocated
    /// per warp in 256s out of 65,536, shared memory out of 228 KiB with 1 KiB reserved per
    /// cube, at most 32 cubes.
    pub fn occupancy_sm90(&self, units: u32, shared: usize) -> f64 {
        let warps = units.div_ceil(32).max(1);
        let per_warp = (self.registers.max(1) * 32).div_ceil(256) * 256;
        let by_registers = (65_536 / per_warp) / warps;
        let by_warps = 64 / warps;
        let smem = shared + self.static_shared;
        let by_shared = if smem == 0 {
            u32::MAX
        } else {
            (233_472 / (smem + 1024)) as u32
        };
        let cubes = by_registers.min(by_warps).min(by_shared).min(32);
        f64::from(cubes * warps) / 64.0
    }
}

type Program = *mut c_void;

/// NVRTC, loaded from `CUDA_PATH`, and `ptxas` beside it (or on `PATH`).
pub struct Nvrtc {
    library: libloading::Library,
    include: PathBuf,
    ptxas: Option<PathBuf>,
}

impl Nvrtc {
    /// NVRTC and the headers under `CUDA_PATH` (or `/usr/local/cuda`); `None` where either is
    /// missing.
    pub fn find() -> Option<Self> {
        let root = std::env::var_os("CUDA_PATH")
            .map(PathBuf::from)
            .unwrap_or_else(|| "/usr/local/cuda".into());
        let include = root.join("include");
        if !include.join("cuda_fp16.h").exists() {
            return None;
        }
        let library = ["lib", "lib64"]
            .iter()
            .filter_map(|dir| std::fs::read_dir(root.join(dir)).ok())
            .flatten()
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .filter(|path| {
                path.file_name()
                    .and_then(|name| name.to_str())
                    .is_some_and(|name| name.starts_with("libnvrtc.so"))
            })
            .min()?;
        // SAFETY: loading NVRTC runs its initialisers, which have no preconditions.
        let library = unsafe { libloading::Library::new(&library) }.ok()?;
        let ptxas = [root.join("bin/ptxas")]
            .into_iter()
            .find(|path| path.exists())
            .or_else(|| {
                Command::new("ptxas")
                    .arg("--version")
                    .output()
                    .ok()
                    .filter(|out| out.status.success())
                    .map(|_| PathBuf::from("ptxas"))
            });
        Some(Self {
            library,
            include,
            ptxas,
        })
    }

    /// PTX of `source` for `compute_<arch>`, or NVRTC's log.
    pub fn compile(&self, source: &str, arch: u32) -> Result<String, String> {
        type Create = unsafe extern "C" fn(
            *mut Program,
            *const c_char,
            *const c_char,
            c_int,
            *const *const c_char,
            *const *const c_char,
        ) -> c_int;
        type Compile = unsafe extern "C" fn(Program, c_int, *const *const c_char) -> c_int;
        type Size = unsafe extern "C" fn(Program, *mut usize) -> c_int;
        type Text = unsafe extern "C" fn(Program, *mut c_char) -> c_int;
        type Destroy = unsafe extern "C" fn(*mut Program) -> c_int;
        let source = CString::new(source).expect("no NUL in a source");
        let options = [
            format!("--gpu-architecture=compute_{arch}"),
            format!("--include-path={}", self.include.display()),
            "-lineinfo".to_string(),
        ]
        .map(|option| CString::new(option).expect("no NUL in an option"));
        let option_pointers: Vec<*const c_char> = options.iter().map(|o| o.as_ptr()).collect();
        // SAFETY: the symbols have NVRTC's documented signatures; every pointer passed lives
        // until the call returns, and the program is destroyed once, at the end.
        unsafe {
            let create = self.symbol::<Create>(b"nvrtcCreateProgram\0");
            let compile = self.symbol::<Compile>(b"nvrtcCompileProgram\0");
            let log_size = self.symbol::<Size>(b"nvrtcGetProgramLogSize\0");
            let log = self.symbol::<Text>(b"nvrtcGetProgramLog\0");
            let ptx_size = self.symbol::<Size>(b"nvrtcGetPTXSize\0");
            let ptx = self.symbol::<Text>(b"nvrtcGetPTX\0");
            let destroy = self.symbol::<Destroy>(b"nvrtcDestroyProgram\0");
            let mut program: Program = std::ptr::null_mut();
            let created = create(
                &mut program,
                source.as_ptr(),
                c"kernel.cu".as_ptr(),
                0,
                std::ptr::null(),
                std::ptr::null(),
            );
            if created != 0 {
                return Err(format!("nvrtcCreateProgram returned {created}"));
            }
            let read = |size: Size, text: Text| {
                let mut len = 0usize;
                size(program, &mut len);
                let mut buffer = vec![0 as c_char; len.max(1)];
                text(program, buffer.as_mut_ptr());
                CStr::from_ptr(buffer.as_ptr())
                    .to_string_lossy()
                    .into_owned()
            };
            let compiled = compile(
                program,
                option_pointers.len() as c_int,
                option_pointers.as_ptr(),
            );
            let result = if compiled == 0 {
                Ok(read(ptx_size, ptx))
            } else {
                Err(read(log_size, log))
            };
            destroy(&mut program);
            result
        }
    }

    /// `ptxas`'s resource report (registers, spills, shared memory) for `ptx` on `sm_<arch>`,
    /// its error log, or `None` without `ptxas`.
    pub fn ptxas(&self, ptx: &str, arch: u32) -> Option<Result<String, String>> {
        let ptxas = self.ptxas.as_ref()?;
        // One folder per process and thread: the test assembles on several threads at once.
        let dir = std::env::temp_dir()
            .join(format!(
                "burn-dml-ops-ptxas-{}-{:?}",
                std::process::id(),
                std::thread::current().id()
            ))
            .to_string_lossy()
            .replace(['(', ')'], "");
        let dir = PathBuf::from(dir);
        std::fs::create_dir_all(&dir).ok()?;
        let input = dir.join(format!("kernel_{arch}.ptx"));
        std::fs::write(&input, ptx).ok()?;
        let output = Command::new(ptxas)
            .arg(format!("-arch=sm_{arch}"))
            .arg("-v")
            .arg("-o")
            .arg(dir.join("kernel.cubin"))
            .arg(&input)
            .output()
            .ok()?;
        let log = String::from_utf8_lossy(&output.stderr).into_owned();
        Some(if output.status.success() {
            Ok(log)
        } else {
            Err(log)
        })
    }

    /// # Safety
    ///
    /// `T` must be the symbol's real type.
    unsafe fn symbol<T: Copy>(&self, name: &[u8]) -> T {
        // SAFETY: forwarded to the caller.
        *unsafe { self.library.get::<T>(name) }
            .unwrap_or_else(|err| panic!("NVRTC lacks {}: {err}", String::from_utf8_lossy(name)))
    }
}
