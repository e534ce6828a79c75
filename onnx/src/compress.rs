//! The hook of ONNX `Compress` (which [`input`](crate::input) moves into [`DOMAIN`]):
//! `burn_dml_ops::onnx::compress`, with the node's axis or none (flattened).

use burn_onnx::ext::proc_macro2::TokenStream;
use burn_onnx::ext::quote::quote;
use burn_onnx::ext::{
    ArgType, CodegenContext, CustomNode, CustomOp, ProcessError, TensorType, arg_to_ident,
};

use crate::DOMAIN;
use crate::codegen::{kind, tensor};

const OP: &str = "Compress";

/// ONNX `Compress` on burn-dml-ops' kernels.
pub(crate) struct Compress;

impl Compress {
    /// The input's type and the node's axis, as the output's rank needs them.
    fn operands(node: &CustomNode) -> Result<(&TensorType, Option<i64>), ProcessError> {
        let input = tensor(OP, &node.name, "input", node.inputs.first())?;
        let condition = tensor(OP, &node.name, "condition", node.inputs.get(1))?;
        if condition.rank != 1 || !condition.dtype.is_bool() {
            return Err(ProcessError::Custom(format!(
                "Compress node '{}': the condition must be a 1-D Bool tensor, but the importer \
                 typed it rank {} {:?}",
                node.name, condition.rank, condition.dtype
            )));
        }
        let axis = node.attrs.get_i64("axis");
        if let Some(axis) = axis {
            let rank = input.rank as i64;
            if !(-rank..rank).contains(&axis) {
                return Err(ProcessError::Custom(format!(
                    "Compress node '{}': axis {axis} is outside -{rank}..{rank} for a rank-{rank} \
                     input",
                    node.name
                )));
            }
        }
        Ok((input, axis))
    }
}

impl CustomOp for Compress {
    fn op_type(&self) -> &str {
        OP
    }

    fn domain(&self) -> &str {
        DOMAIN
    }

    fn infer_output_types(&self, node: &CustomNode) -> Result<Vec<ArgType>, ProcessError> {
        let (input, axis) = Self::operands(node)?;
        let rank = if axis.is_some() { input.rank } else { 1 };
        Ok(vec![ArgType::Tensor(TensorType {
            dtype: input.dtype,
            rank,
            static_shape: None,
        })])
    }

    fn forward(
        &self,
        node: &CustomNode,
        ctx: &mut CodegenContext<'_, '_>,
    ) -> Result<TokenStream, ProcessError> {
        let (input, axis) = Self::operands(node)?;
        let rank = if axis.is_some() { input.rank } else { 1 };
        let kind = kind(input.dtype);
        let axis = match axis {
            Some(axis) => {
                let axis = axis as isize;
                quote! { Some(#axis) }
            }
            None => quote! { None },
        };
        let output = arg_to_ident(node.outputs.first().ok_or_else(|| {
            ProcessError::Custom(format!("Compress node '{}' has no output", node.name))
        })?);
        let [data, condition] = [0, 1].map(|i| ctx.arg(&node.inputs[i]));
        Ok(quote! {
            let #output: burn::tensor::Tensor<#rank, #kind> =
                burn_dml_ops::onnx::compress(#data, #condition, #axis);
        })
    }
}
