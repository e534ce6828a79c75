//! Runs an imported ONNX model on `Device::default()`: the boxes whose score passes 0.5, their
//! scores, and how many each class keeps, checked against the same rule on the host.

use burn::tensor::{Device, Int, Tensor};
use burn_dml_ops_onnx_example::model::Model;

fn main() {
    let device = Device::default();
    println!("running on {device:?}");
    let scores = [0.9f32, 0.1, 0.6, 0.4, 0.7, 0.55];
    let classes = [1i64, 3, 1, 0, 2, 1];
    let boxes: Vec<f32> = (0..scores.len() * 4).map(|v| v as f32).collect();

    let model = Model::default();
    let (kept_boxes, kept_scores, per_class) = model.forward(
        Tensor::<1>::from_data(boxes.as_slice(), &device).reshape([scores.len(), 4]),
        Tensor::<1>::from_data(scores, &device),
        Tensor::<1, Int>::from_data(classes, &device),
    );
    let kept_boxes = kept_boxes
        .into_data()
        .try_to_vec::<f32>()
        .expect("f32 boxes");
    let kept_scores = kept_scores
        .into_data()
        .try_to_vec::<f32>()
        .expect("f32 scores");
    let per_class = per_class
        .into_data()
        .try_to_vec::<f32>()
        .expect("f32 counts");
    println!("kept scores {kept_scores:?}, boxes kept per class {per_class:?}");

    let keep: Vec<usize> = (0..scores.len()).filter(|&i| scores[i] > 0.5).collect();
    let expected_boxes: Vec<f32> = keep
        .iter()
        .flat_map(|&i| boxes[i * 4..i * 4 + 4].to_vec())
        .collect();
    let expected_scores: Vec<f32> = keep.iter().map(|&i| scores[i]).collect();
    let mut expected_counts = vec![0.0f32; 4];
    for &i in &keep {
        expected_counts[classes[i] as usize] += 1.0;
    }
    assert_eq!(kept_boxes, expected_boxes, "the kept boxes");
    assert_eq!(kept_scores, expected_scores, "the kept scores");
    assert_eq!(per_class, expected_counts, "the boxes kept per class");
    println!("matches the host's answer");
}
