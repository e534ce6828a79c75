//! Imports `model/detections.onnx` (made by `make_model.py`) with burn-dml-ops-onnx's
//! overrides: its Compress, NonZero, GatherND and ScatterElements nodes run on burn-dml-ops.

fn main() {
    let mut generator = burn_onnx::ModelGen::new();
    burn_dml_ops_onnx::input(&mut generator, "model/detections.onnx");
    burn_dml_ops_onnx::register(&mut generator);
    generator.out_dir("model/").run_from_script();
}
