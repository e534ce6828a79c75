//! Makes models imported with [burn-onnx](https://docs.rs/burn-onnx) 0.22 run ONNX's
//! `ScatterND`, `ScatterElements` (and the deprecated `Scatter`), `GatherND`, `NonZero`,
//! `Compress`, `TopK`, `NonMaxSuppression` and `Multinomial` on
//! [burn-dml-ops](https://docs.rs/burn-dml-ops)' kernels instead of Burn's built-ins, which read
//! `NonZero`'s input back to the host, check no index, reduce duplicates unreliably on GPUs,
//! cannot import `Compress` or `Multinomial`, sort on the host, and run non-maximum suppression
//! on the host one (batch, class) at a time.
//!
//! Use it from a build script, as a build-dependency beside `burn-onnx`; the crate that
//! includes the generated code depends on `burn-dml-ops` (and what burn-onnx's code needs):
//!
//! ```no_run
//! // build.rs
//! let mut generator = burn_onnx::ModelGen::new();
//! burn_dml_ops_onnx::input(&mut generator, "src/model/model.onnx"); // in place of generator.input(..)
//! burn_dml_ops_onnx::register(&mut generator); // the overrides
//! generator.out_dir("model/").run_from_script();
//! ```
//!
//! The generated `forward` calls [`burn_dml_ops::onnx`](https://docs.rs/burn-dml-ops) for each
//! such node, with ONNX's semantics (`Multinomial`'s draws match ONNX Runtime's in distribution
//! only: another generator). Index values out of range after negative indices wrap are
//! dropped by default (a `GatherND` row of zeros), where ONNX Runtime returns an error:
//! [`register_with`] chooses clamping or an error instead, and deterministic ScatterND. A node
//! the overrides cannot run (a `Shape` operand, a reduction on Bool data) fails the build with a
//! message naming it: none falls back to Burn's built-in.

mod codegen;
mod compress;
mod multinomial;
mod overrides;
mod rewrite;

use burn_onnx::ModelGen;

/// The ONNX domain [`input`] moves `Compress` and `Multinomial` nodes into, so that burn-onnx
/// hands them to this crate's hooks instead of rejecting them.
pub const DOMAIN: &str = "burn_dml_ops";

/// What a ScatterND, ScatterElements or GatherND index tuple still out of range after negative
/// indices wrap does (ONNX Runtime returns an error for it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OutOfBounds {
    /// Dropped: a scatter leaves the data there as it was, a gather writes a row of zeros.
    #[default]
    Skip,
    /// Clamped into range, coordinate by coordinate.
    Clamp,
    /// A panic naming the tuple, after reading the indices back to the host once per call.
    Error,
}

/// The choices [`register_with`] bakes into the generated code.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// What an index out of range does; [`OutOfBounds::Skip`] by default.
    pub out_of_bounds: OutOfBounds,
    /// Scatters whose result depends on the operands alone, never on timing (burn-dml-ops'
    /// `ScatterNdOptions::deterministic`): float `Add` and `Mul` rounded once, `none` keeping
    /// the last duplicate in index order. Off by default (slower on GPUs).
    pub deterministic: bool,
}

/// Hands the model at `path` to `generator`, as [`ModelGen::input`] does. A model with a
/// `Compress` or `Multinomial` node, which burn-onnx 0.22 cannot import, goes through a copy
/// under `OUT_DIR` (the system's temporary folder outside a build script) whose such nodes are
/// moved into this crate's domain, [`DOMAIN`], for [`register`]'s hooks; the copy keeps the file name, so
/// the generated file keeps its name too. Any other model is handed over unchanged.
///
/// # Panics
///
/// Where the model cannot be read or parsed, or the copy cannot be written, with the path and
/// the cause: in a build script that fails the build.
pub fn input<'a>(generator: &'a mut ModelGen, path: &str) -> &'a mut ModelGen {
    if std::env::var_os("OUT_DIR").is_some() {
        println!("cargo:rerun-if-changed={path}");
    }
    match rewrite::route_unsupported(path) {
        Some(copy) => generator.input(copy.to_str().expect("OUT_DIR is a UTF-8 path")),
        None => generator.input(path),
    }
}

/// Registers the overrides with the default [`Options`]: `ScatterND`, `ScatterElements`,
/// `Scatter`, `GatherND`, `NonZero`, `TopK` and `NonMaxSuppression` nodes generate calls of
/// burn-dml-ops' kernels, and `Compress` and `Multinomial` nodes routed by [`input`] get hooks
/// of their own.
///
/// # Panics
///
/// Where `generator` already has an override for one of these operators (burn-onnx's rule).
pub fn register(generator: &mut ModelGen) -> &mut ModelGen {
    register_with(generator, Options::default())
}

/// [`register`] with explicit [`Options`].
///
/// # Panics
///
/// As [`register`].
pub fn register_with(generator: &mut ModelGen, options: Options) -> &mut ModelGen {
    use onnx_ir::NodeType;
    for target in [
        NodeType::ScatterND,
        NodeType::ScatterElements,
        NodeType::Scatter,
    ] {
        generator.register_op_override(overrides::Scatter { target, options });
    }
    generator
        .register_op_override(overrides::GatherNd { options })
        .register_op_override(overrides::NonZero)
        .register_op_override(overrides::TopK)
        .register_op_override(overrides::NonMaxSuppression)
        .register_custom_op(compress::Compress)
        .register_custom_op(multinomial::Multinomial)
}
