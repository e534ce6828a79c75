//! The hook of ONNX `Multinomial` (which [`input`](crate::input) moves into
//! [`DOMAIN`](crate::DOMAIN)): `burn_dml_ops::onnx::multinomial`, with the node's `sample_size`,
//! `seed` and output dtype, and a count of the node's runs that makes each run draw anew.

use burn_onnx::ext::proc_macro2::TokenStream;
use burn_onnx::ext::quote::quote;
use burn_onnx::ext::{
    ArgType, CodegenContext, CustomNode, CustomOp, DType, ProcessError, TensorType, arg_to_ident,
};

use crate::DOMAIN;
use crate::codegen::{int_dtype, tensor};

const OP: &str = "Multinomial";

/// ONNX's `dtype` codes that `Multinomial` allows for its output.
const INT32: i64 = 6;
const INT64: i64 = 7;

/// ONNX `Multinomial` on burn-dml-ops' sampler.
pub(crate) struct Multinomial;

/// What the generated call needs from a node.
struct Attributes {
    dtype: DType,
    sample_size: usize,
    seed: Option<f32>,
}

impl Multinomial {
    /// The node's attributes, after checking its input and them.
    fn attributes(node: &CustomNode) -> Result<Attributes, ProcessError> {
        let name = &node.name;
        let input = tensor(OP, name, "input", node.inputs.first())?;
        if input.rank != 2 || !input.dtype.is_float() {
            return Err(ProcessError::Custom(format!(
                "Multinomial node '{name}': the input must be a [batch, classes] float tensor, \
                 but the importer typed it rank {} {:?}",
                input.rank, input.dtype
            )));
        }
        let dtype = match node.attrs.get_i64("dtype").unwrap_or(INT32) {
            INT32 => DType::I32,
            INT64 => DType::I64,
            other => {
                return Err(ProcessError::Custom(format!(
                    "Multinomial node '{name}': dtype {other} is neither int32 ({INT32}) nor \
                     int64 ({INT64}), the two ONNX allows"
                )));
            }
        };
        let sample_size = node.attrs.get_i64("sample_size").unwrap_or(1);
        let sample_size = usize::try_from(sample_size)
            .ok()
            .filter(|&n| n >= 1)
            .ok_or_else(|| {
                ProcessError::Custom(format!(
                    "Multinomial node '{name}': sample_size {sample_size} is below 1"
                ))
            })?;
        Ok(Attributes {
            dtype,
            sample_size,
            seed: node.attrs.get_f32("seed"),
        })
    }
}

impl CustomOp for Multinomial {
    fn op_type(&self) -> &str {
        OP
    }

    fn domain(&self) -> &str {
        DOMAIN
    }

    fn infer_output_types(&self, node: &CustomNode) -> Result<Vec<ArgType>, ProcessError> {
        let Attributes { dtype, .. } = Self::attributes(node)?;
        Ok(vec![ArgType::Tensor(TensorType {
            dtype,
            rank: 2,
            static_shape: None,
        })])
    }

    fn forward(
        &self,
        node: &CustomNode,
        ctx: &mut CodegenContext<'_, '_>,
    ) -> Result<TokenStream, ProcessError> {
        let Attributes {
            dtype,
            sample_size,
            seed,
        } = Self::attributes(node)?;
        let dtype = int_dtype(OP, &node.name, dtype)?;
        let seed = match seed {
            Some(seed) => quote! { Some(#seed) },
            None => quote! { None },
        };
        let output = arg_to_ident(node.outputs.first().ok_or_else(|| {
            ProcessError::Custom(format!("Multinomial node '{}' has no output", node.name))
        })?);
        let input = ctx.arg(&node.inputs[0]);
        // One count per node and process: the n-th run draws with steps after the (n-1)-th's.
        Ok(quote! {
            let #output = {
                static RUNS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
                let run = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                burn_dml_ops::onnx::multinomial(#input, #sample_size, #seed, run, #dtype)
            };
        })
    }
}
