//! An ONNX model imported at build time with burn-dml-ops-onnx's overrides (`build.rs`): its
//! Compress, NonZero, GatherND and ScatterElements nodes call burn-dml-ops' kernels.

/// The model generated from `model/detections.onnx` (made by `make_model.py`): the boxes whose
/// score passes 0.5, their scores, and how many boxes each of 4 classes keeps.
pub mod model {
    include!(concat!(env!("OUT_DIR"), "/model/detections.rs"));
}
