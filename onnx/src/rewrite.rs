//! The copy of a model that routes its `Compress` and `Multinomial` nodes, which burn-onnx 0.22
//! cannot import, to this crate's hooks: the same graph with those nodes moved into [`DOMAIN`].

use std::path::{Path, PathBuf};

use onnx_ir::{GraphProto, Message, ModelProto};

use crate::DOMAIN;

/// The op types burn-onnx 0.22 parses only as placeholders, which this crate's hooks run.
const ROUTED: [&str; 2] = ["Compress", "Multinomial"];

/// Where the copy of the model at `path` was written, or `None` where the model has no
/// `Compress` or `Multinomial` node of ONNX's domain (it is then imported as it is).
///
/// # Panics
///
/// Where the model cannot be read, parsed or written, naming the path and the cause.
pub(crate) fn route_unsupported(path: &str) -> Option<PathBuf> {
    let fail = |what: &str, cause: &dyn std::fmt::Display| -> ! {
        panic!("burn-dml-ops-onnx: cannot {what} the ONNX model '{path}': {cause}")
    };
    let bytes = std::fs::read(path).unwrap_or_else(|err| fail("read", &err));
    let mut model = ModelProto::parse_from_bytes(&bytes).unwrap_or_else(|err| fail("parse", &err));
    let moved = model.graph.as_mut().map_or(0, move_routed);
    if moved == 0 {
        return None;
    }
    let mut domain = model.opset_import.first().cloned().unwrap_or_else(|| {
        fail(
            "route Compress or Multinomial in",
            &"the model imports no opset",
        )
    });
    domain.domain = DOMAIN.to_string();
    domain.version = 1;
    model.opset_import.retain(|id| id.domain != DOMAIN);
    model.opset_import.push(domain);
    let copy = copy_path(Path::new(path), &bytes);
    let written = model
        .write_to_bytes()
        .map_err(|err| err.to_string())
        .and_then(|bytes| {
            std::fs::create_dir_all(copy.parent().expect("the copy is inside a folder"))
                .and_then(|()| std::fs::write(&copy, bytes))
                .map_err(|err| err.to_string())
        });
    written.unwrap_or_else(|err| fail("write a copy of", &err));
    Some(copy)
}

/// Moves every node of ONNX's domain whose op type is [`ROUTED`] in `graph` and its subgraphs
/// into [`DOMAIN`]; returns how many it moved.
fn move_routed(graph: &mut GraphProto) -> usize {
    let mut moved = 0;
    for node in &mut graph.node {
        let onnx_domain = matches!(node.domain.as_str(), "" | "ai.onnx");
        if ROUTED.contains(&node.op_type.as_str()) && onnx_domain {
            node.domain = DOMAIN.to_string();
            moved += 1;
        }
        for attribute in &mut node.attribute {
            moved += attribute.g.as_mut().map_or(0, move_routed);
            moved += attribute.graphs.iter_mut().map(move_routed).sum::<usize>();
        }
    }
    moved
}

/// A path for the copy, under `OUT_DIR` (the temporary folder outside a build script), in a
/// folder named after the source path and contents, and with the source's file name.
fn copy_path(source: &Path, bytes: &[u8]) -> PathBuf {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    source.hash(&mut hasher);
    bytes.hash(&mut hasher);
    let root = std::env::var_os("OUT_DIR").map_or_else(std::env::temp_dir, PathBuf::from);
    let name = source.file_name().expect("a model path names a file");
    root.join("burn-dml-ops-onnx")
        .join(format!("{:016x}", hasher.finish()))
        .join(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(name: &str) -> String {
        format!(
            "{}/../onnx-tests/models/{name}.onnx",
            env!("CARGO_MANIFEST_DIR")
        )
    }

    #[test]
    fn compress_moves_into_the_domain_in_a_copy_of_the_same_name() {
        let source = model("own_compress_short_condition_made_on_device");
        let copy = route_unsupported(&source).expect("the model has a Compress node");
        assert_eq!(copy.file_name(), Path::new(&source).file_name());
        let routed = ModelProto::parse_from_bytes(&std::fs::read(&copy).unwrap()).unwrap();
        let graph = routed.graph.as_ref().unwrap();
        let ops: Vec<_> = graph
            .node
            .iter()
            .map(|n| (n.op_type.as_str(), n.domain.as_str()))
            .collect();
        assert_eq!(ops, [("Greater", ""), ("Compress", DOMAIN)]);
        let domains: Vec<_> = routed
            .opset_import
            .iter()
            .map(|id| (id.domain.as_str(), id.version))
            .collect();
        assert_eq!(domains, [("", 18), (DOMAIN, 1)]);
    }

    #[test]
    fn multinomial_moves_into_the_domain_beside_the_nodes_around_it() {
        let copy = route_unsupported(&model("own_multinomial_unseeded_mask_made_on_device"))
            .expect("the model has a Multinomial node");
        let routed = ModelProto::parse_from_bytes(&std::fs::read(&copy).unwrap()).unwrap();
        let ops: Vec<_> = routed
            .graph
            .as_ref()
            .unwrap()
            .node
            .iter()
            .map(|n| (n.op_type.as_str(), n.domain.as_str()))
            .collect();
        assert_eq!(ops, [("Add", ""), ("Multinomial", DOMAIN)]);
    }

    #[test]
    fn a_model_without_compress_is_imported_as_it_is() {
        assert_eq!(route_unsupported(&model("own_mask_select_chain")), None);
    }
}
