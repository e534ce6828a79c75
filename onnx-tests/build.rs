//! Imports every model of `models/` twice: with burn-dml-ops-onnx's overrides (`dml/`) and by
//! Burn alone (`builtin/`, leaving out the models with a `Compress` or `Multinomial` node, which
//! Burn 0.22 cannot import).

use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=models");
    let mut models: Vec<PathBuf> = std::fs::read_dir("models")
        .expect("onnx-tests/models holds the models")
        .map(|entry| entry.expect("a readable folder entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "onnx"))
        .collect();
    models.sort();

    let mut dml = burn_onnx::ModelGen::new();
    let mut builtin = burn_onnx::ModelGen::new();
    for model in &models {
        let path = model.to_str().expect("model paths are UTF-8");
        burn_dml_ops_onnx::input(&mut dml, path);
        if !path.contains("compress") && !path.contains("multinomial") {
            builtin.input(path);
        }
    }
    burn_dml_ops_onnx::register(&mut dml);
    dml.out_dir("dml/").run_from_script();
    builtin.out_dir("builtin/").run_from_script();
}
