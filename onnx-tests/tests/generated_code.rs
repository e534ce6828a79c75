//! Which code the importer generated: every covered node of a model imported with the overrides
//! calls `burn_dml_ops::onnx`, and none of Burn's built-in lowerings of these operators is left;
//! the same model imported by Burn alone has them (so the check can fail).

use burn_dml_ops_onnx_tests::{CASES, generated_source};

/// Burn's built-in lowerings of ScatterND, ScatterElements, GatherND, NonZero, TopK and
/// NonMaxSuppression (burn-vision's host loop), as burn-onnx 0.22 writes them.
const BUILTIN: [&str; 8] = [
    ".argwhere()",
    ".scatter_nd(",
    ".gather_nd(",
    ".scatter(",
    "IndexingUpdateOp",
    ".topk_with_indices(",
    ".sort_with_indices(",
    "burn::vision::Nms",
];

/// The calls the overrides write, one per covered node type.
const OURS: [&str; 8] = [
    "burn_dml_ops::onnx::scatter_nd(",
    "burn_dml_ops::onnx::scatter_elements(",
    "burn_dml_ops::onnx::gather_nd(",
    "burn_dml_ops::onnx::non_zero(",
    "burn_dml_ops::onnx::compress(",
    "burn_dml_ops::onnx::top_k(",
    "burn_dml_ops::onnx::non_max_suppression(",
    "burn_dml_ops::onnx::multinomial(",
];

#[test]
fn every_covered_node_calls_the_crate_and_no_builtin_is_left() {
    for case in CASES {
        let source = generated_source("dml", case.name);
        let builtin: Vec<_> = BUILTIN.iter().filter(|b| source.contains(*b)).collect();
        assert!(
            builtin.is_empty(),
            "{}: the overridden model still has {builtin:?}",
            case.name
        );
        let calls: usize = OURS.iter().map(|call| source.matches(call).count()).sum();
        let model = std::fs::read(format!(
            "{}/models/{}.onnx",
            env!("CARGO_MANIFEST_DIR"),
            case.name
        ))
        .expect("the committed model");
        let nodes = covered_nodes(&model);
        assert_eq!(
            calls, nodes,
            "{}: {nodes} covered nodes but {calls} calls of burn_dml_ops::onnx",
            case.name
        );
    }
}

#[test]
fn burn_alone_lowers_the_same_models_onto_its_builtins() {
    let importable = |name: &str| !name.contains("compress") && !name.contains("multinomial");
    for case in CASES.iter().filter(|case| importable(case.name)) {
        let source = generated_source("builtin", case.name);
        assert!(
            BUILTIN.iter().any(|b| source.contains(b)),
            "{}: Burn's own import has none of {BUILTIN:?}",
            case.name
        );
        assert!(!source.contains("burn_dml_ops"), "{}", case.name);
    }
}

/// How many ScatterND, ScatterElements, Scatter, GatherND, NonZero, Compress, TopK,
/// NonMaxSuppression and Multinomial nodes the model holds: op types are length-prefixed strings in the
/// protobuf, found here by their bytes.
fn covered_nodes(model: &[u8]) -> usize {
    [
        "ScatterND",
        "ScatterElements",
        "Scatter",
        "GatherND",
        "NonZero",
        "Compress",
        "TopK",
        "NonMaxSuppression",
        "Multinomial",
    ]
    .iter()
    .map(|op| {
        let mut field = vec![0x22, op.len() as u8];
        field.extend_from_slice(op.as_bytes());
        model.windows(field.len()).filter(|w| *w == field).count()
    })
    .sum()
}
