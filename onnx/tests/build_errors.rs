//! A node the overrides cannot run fails the import with a message that names the node (by the
//! importer's name for it: its op type and a count, as in the generated code) and says why,
//! instead of falling back to Burn's built-in.

use std::panic::{AssertUnwindSafe, catch_unwind};

/// The panic message of importing `tests/models/<name>.onnx` with the overrides.
fn import_error(name: &str) -> String {
    let dir = env!("CARGO_MANIFEST_DIR");
    let model = format!("{dir}/tests/models/{name}.onnx");
    let out = std::env::temp_dir().join(format!("burn-dml-ops-onnx-{name}-{}", std::process::id()));
    let panic = catch_unwind(AssertUnwindSafe(|| {
        // `default()`, not `new()`: `new` installs burn-onnx's logger, whose output of the
        // expected panic would pass the test harness's capture and read as a failure.
        let mut generator = burn_onnx::ModelGen::default();
        burn_dml_ops_onnx::input(&mut generator, &model);
        burn_dml_ops_onnx::register(&mut generator);
        generator
            .out_dir(out.to_str().expect("a UTF-8 temporary folder"))
            .run_from_cli();
    }))
    .expect_err("the import must fail");
    let _ = std::fs::remove_dir_all(&out);
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

fn assert_names(message: &str, parts: &[&str]) {
    for part in parts {
        assert!(message.contains(part), "{part:?} missing from: {message}");
    }
}

#[test]
fn a_reduction_on_bool_data_names_the_node() {
    let message = import_error("bad_scatternd_bool_add");
    assert_names(
        &message,
        &["ScatterND node 'scatternd1'", "'add' on Bool data"],
    );
}

#[test]
fn a_compress_condition_of_rank_2_names_the_node() {
    let message = import_error("bad_compress_condition_rank2");
    assert_names(&message, &["Compress node 'custom1'", "1-D Bool tensor"]);
}

#[test]
fn a_nonzero_of_a_host_shape_names_the_node() {
    let message = import_error("bad_nonzero_of_shape");
    assert_names(
        &message,
        &["'nonzero1' (NonZero)", "expected Tensor, got Shape"],
    );
}

#[test]
fn a_multinomial_of_float_draws_names_the_node() {
    let message = import_error("bad_multinomial_float_dtype");
    assert_names(&message, &["Multinomial node", "dtype 1 is neither int32"]);
}
