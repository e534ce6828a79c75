//! Tokens the hooks share: operand types checked with a message naming the node, Burn's kind
//! and dtype paths, and the options' paths in burn-dml-ops.

use burn_onnx::ext::proc_macro2::TokenStream;
use burn_onnx::ext::quote::quote;
use burn_onnx::ext::{ArgType, Argument, DType, ProcessError, TensorType};

use crate::{Options, OutOfBounds};

/// A node's operand that must be a tensor on the device, or the error that names the node,
/// the operand and what it is instead.
pub(crate) fn tensor<'a>(
    op: &str,
    node: &str,
    role: &str,
    argument: Option<&'a Argument>,
) -> Result<&'a TensorType, ProcessError> {
    match argument.map(|argument| &argument.ty) {
        Some(ArgType::Tensor(tensor)) => Ok(tensor),
        Some(other) => Err(ProcessError::Custom(format!(
            "{op} node '{node}': burn-dml-ops-onnx runs {role} as a tensor on the device, but the \
             importer typed it {other:?} (a host shape or scalar); this node cannot run on \
             burn-dml-ops' kernels"
        ))),
        None => Err(ProcessError::Custom(format!(
            "{op} node '{node}': the {role} operand is missing"
        ))),
    }
}

/// Burn's tensor kind of `dtype`: `Float`, `Int` or `Bool`.
pub(crate) fn kind(dtype: DType) -> TokenStream {
    if dtype.is_float() {
        quote! { burn::tensor::Float }
    } else if dtype.is_bool() {
        quote! { burn::tensor::Bool }
    } else {
        quote! { burn::tensor::Int }
    }
}

/// `burn::tensor::IntDType::X` for an integer `dtype`, or the error naming the node.
pub(crate) fn int_dtype(op: &str, node: &str, dtype: DType) -> Result<TokenStream, ProcessError> {
    let tokens = match dtype {
        DType::I64 => quote! { I64 },
        DType::I32 => quote! { I32 },
        DType::I16 => quote! { I16 },
        DType::I8 => quote! { I8 },
        DType::U64 => quote! { U64 },
        DType::U32 => quote! { U32 },
        DType::U16 => quote! { U16 },
        DType::U8 => quote! { U8 },
        other => {
            return Err(ProcessError::Custom(format!(
                "{op} node '{node}': the output is typed {other:?}, not an integer dtype"
            )));
        }
    };
    Ok(quote! { burn::tensor::IntDType::#tokens })
}

/// `burn_dml_ops::OutOfBounds::X` for the options' policy.
pub(crate) fn out_of_bounds(options: &Options) -> TokenStream {
    match options.out_of_bounds {
        OutOfBounds::Skip => quote! { burn_dml_ops::OutOfBounds::Skip },
        OutOfBounds::Clamp => quote! { burn_dml_ops::OutOfBounds::Clamp },
        OutOfBounds::Error => quote! { burn_dml_ops::OutOfBounds::Error },
    }
}
