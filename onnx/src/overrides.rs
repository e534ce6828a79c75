//! The `OpOverride`s of the built-in node types: each emits one call of `burn_dml_ops::onnx`.

use burn_onnx::ext::proc_macro2::TokenStream;
use burn_onnx::ext::quote::quote;
use burn_onnx::ext::{
    ArgType, Argument, CodegenContext, DType, Node, NodeType, OpOverride, ProcessError,
    arg_to_ident,
};
use onnx_ir::gathernd::GatherNDNode;
use onnx_ir::non_max_suppression::{BoxFormat, NonMaxSuppressionNode};
use onnx_ir::scatter_elements::{ScatterElementsNode, ScatterElementsReduction};
use onnx_ir::scatter_nd::{ScatterNDNode, ScatterNDReduction};
use onnx_ir::topk::{TopKInput, TopKNode};

use crate::Options;
use crate::codegen::{int_dtype, kind, out_of_bounds, tensor};

/// The reduction of a scatter node, as ONNX names it and as burn-dml-ops' `Reduction` does.
struct NodeReduction {
    onnx: &'static str,
    variant: TokenStream,
}

impl NodeReduction {
    fn new(onnx: &'static str) -> Self {
        let variant = match onnx {
            "add" => quote! { Add },
            "mul" => quote! { Mul },
            "max" => quote! { Max },
            "min" => quote! { Min },
            _ => quote! { Assign },
        };
        Self { onnx, variant }
    }
}

fn scatter_nd_reduction(reduction: &ScatterNDReduction) -> NodeReduction {
    NodeReduction::new(match reduction {
        ScatterNDReduction::None => "none",
        ScatterNDReduction::Add => "add",
        ScatterNDReduction::Mul => "mul",
        ScatterNDReduction::Max => "max",
        ScatterNDReduction::Min => "min",
    })
}

fn scatter_elements_reduction(reduction: &ScatterElementsReduction) -> NodeReduction {
    NodeReduction::new(match reduction {
        ScatterElementsReduction::None => "none",
        ScatterElementsReduction::Add => "add",
        ScatterElementsReduction::Mul => "mul",
        ScatterElementsReduction::Max => "max",
        ScatterElementsReduction::Min => "min",
    })
}

/// What every scatter node holds, whichever its type.
struct ScatterNode<'a> {
    op: &'static str,
    name: &'a str,
    inputs: &'a [Argument],
    outputs: &'a [Argument],
    reduction: NodeReduction,
    /// ScatterElements' axis; `None` for ScatterND.
    axis: Option<usize>,
}

/// `ScatterND`, `ScatterElements` and `Scatter`: `burn_dml_ops::onnx::scatter_nd` or
/// `scatter_elements`, with the node's reduction and the registered options.
pub(crate) struct Scatter {
    pub(crate) target: NodeType,
    pub(crate) options: Options,
}

impl Scatter {
    /// The call for a scatter node's operands, after the checks every scatter shares.
    fn emit(
        &self,
        node: ScatterNode<'_>,
        ctx: &mut CodegenContext<'_, '_>,
    ) -> Result<TokenStream, ProcessError> {
        let ScatterNode {
            op,
            name,
            inputs,
            outputs,
            reduction,
            axis,
        } = node;
        let data = tensor(op, name, "data", inputs.first())?;
        tensor(op, name, "indices", inputs.get(1))?;
        tensor(op, name, "updates", inputs.get(2))?;
        if data.dtype.is_bool() && reduction.onnx != "none" {
            return Err(ProcessError::Custom(format!(
                "{op} node '{name}': reduction '{}' on Bool data; ONNX and burn-dml-ops define \
                 only 'none' for Bool tensors",
                reduction.onnx
            )));
        }
        let output =
            arg_to_ident(outputs.first().ok_or_else(|| {
                ProcessError::Custom(format!("{op} node '{name}' has no output"))
            })?);
        let [data, indices, updates] = [0, 1, 2].map(|i| ctx.arg(&inputs[i]));
        let variant = reduction.variant;
        let out_of_bounds = out_of_bounds(&self.options);
        let deterministic = self.options.deterministic;
        let options = quote! {
            burn_dml_ops::ScatterNdOptions {
                reduction: burn_dml_ops::Reduction::#variant,
                out_of_bounds: #out_of_bounds,
                deterministic: #deterministic,
                ..Default::default()
            }
        };
        Ok(match axis {
            None => quote! {
                let #output = burn_dml_ops::onnx::scatter_nd(#data, #indices, #updates, #options);
            },
            Some(axis) => quote! {
                let #output = burn_dml_ops::onnx::scatter_elements(
                    #data, #indices, #updates, #axis, #options
                );
            },
        })
    }
}

impl OpOverride for Scatter {
    fn target(&self) -> NodeType {
        self.target.clone()
    }

    fn forward(
        &self,
        node: &Node,
        ctx: &mut CodegenContext<'_, '_>,
    ) -> Result<TokenStream, ProcessError> {
        match node {
            Node::ScatterND(ScatterNDNode {
                name,
                inputs,
                outputs,
                config,
            }) => {
                let node = ScatterNode {
                    op: "ScatterND",
                    name,
                    inputs,
                    outputs,
                    reduction: scatter_nd_reduction(&config.reduction),
                    axis: None,
                };
                self.emit(node, ctx)
            }
            Node::ScatterElements(ScatterElementsNode {
                name,
                inputs,
                outputs,
                config,
            })
            | Node::Scatter(ScatterElementsNode {
                name,
                inputs,
                outputs,
                config,
            }) => {
                let node = ScatterNode {
                    op: "ScatterElements",
                    name,
                    inputs,
                    outputs,
                    reduction: scatter_elements_reduction(&config.reduction),
                    axis: Some(config.axis),
                };
                self.emit(node, ctx)
            }
            other => Err(unexpected(&self.target, other)),
        }
    }
}

/// `GatherND`: `burn_dml_ops::onnx::gather_nd`, with the node's `batch_dims`.
pub(crate) struct GatherNd {
    pub(crate) options: Options,
}

impl OpOverride for GatherNd {
    fn target(&self) -> NodeType {
        NodeType::GatherND
    }

    fn forward(
        &self,
        node: &Node,
        ctx: &mut CodegenContext<'_, '_>,
    ) -> Result<TokenStream, ProcessError> {
        let Node::GatherND(GatherNDNode {
            name,
            inputs,
            outputs,
            config,
        }) = node
        else {
            return Err(unexpected(&NodeType::GatherND, node));
        };
        let op = "GatherND";
        tensor(op, name, "data", inputs.first())?;
        tensor(op, name, "indices", inputs.get(1))?;
        let out = tensor(op, name, "output", outputs.first())?;
        let (rank, kind) = (out.rank, kind(out.dtype));
        let output = arg_to_ident(&outputs[0]);
        let [data, indices] = [0, 1].map(|i| ctx.arg(&inputs[i]));
        let batch_dims = config.batch_dims;
        let out_of_bounds = out_of_bounds(&self.options);
        Ok(quote! {
            let #output: burn::tensor::Tensor<#rank, #kind> =
                burn_dml_ops::onnx::gather_nd(#data, #indices, #batch_dims, #out_of_bounds);
        })
    }
}

/// `NonZero`: `burn_dml_ops::onnx::non_zero`, in the dtype the importer typed (int64).
pub(crate) struct NonZero;

impl OpOverride for NonZero {
    fn target(&self) -> NodeType {
        NodeType::NonZero
    }

    fn forward(
        &self,
        node: &Node,
        ctx: &mut CodegenContext<'_, '_>,
    ) -> Result<TokenStream, ProcessError> {
        let Node::NonZero(nonzero) = node else {
            return Err(unexpected(&NodeType::NonZero, node));
        };
        let (op, name) = ("NonZero", &nonzero.name);
        let input = tensor(op, name, "input", nonzero.inputs.first())?;
        if input.rank == 0 {
            return Err(ProcessError::Custom(format!(
                "NonZero node '{name}': the input is a rank-0 tensor, which Burn's tensors cannot \
                 hold"
            )));
        }
        let out = tensor(op, name, "output", nonzero.outputs.first())?;
        let dtype = int_dtype(op, name, out.dtype)?;
        let output = arg_to_ident(&nonzero.outputs[0]);
        let input = ctx.arg(&nonzero.inputs[0]);
        Ok(quote! {
            let #output = burn_dml_ops::onnx::non_zero(#input, #dtype);
        })
    }
}

/// `TopK`: `burn_dml_ops::onnx::top_k`, with `largest` and the axis; `sorted = 0` runs the same
/// code, since sorted output satisfies it. A static `K` is a constant; a runtime one is read back
/// once through `top_k_count` (the output's shape depends on it).
pub(crate) struct TopK;

impl OpOverride for TopK {
    fn target(&self) -> NodeType {
        NodeType::TopK
    }

    fn forward(
        &self,
        node: &Node,
        ctx: &mut CodegenContext<'_, '_>,
    ) -> Result<TokenStream, ProcessError> {
        let Node::TopK(TopKNode {
            name,
            inputs,
            outputs,
            config,
        }) = node
        else {
            return Err(unexpected(&NodeType::TopK, node));
        };
        let op = "TopK";
        let input = tensor(op, name, "input", inputs.first())?;
        if input.rank == 0 {
            return Err(ProcessError::Custom(format!(
                "TopK node '{name}': the input is a rank-0 tensor, which has no axis"
            )));
        }
        tensor(op, name, "values", outputs.first())?;
        let indices = tensor(op, name, "indices", outputs.get(1))?;
        let dtype = int_dtype(op, name, indices.dtype)?;
        let k = match &config.k {
            TopKInput::Static(k) => quote! { #k },
            TopKInput::Runtime(runtime) => {
                let argument = &inputs[runtime.input_index];
                match &argument.ty {
                    ArgType::ScalarNative(_) => {
                        let k = arg_to_ident(argument);
                        quote! {
                            usize::try_from(#k as i64).unwrap_or_else(|_| {
                                panic!("ONNX TopK: K = {} is negative; K must be at least 0", #k)
                            })
                        }
                    }
                    _ => {
                        let k = ctx.arg(argument);
                        quote! { burn_dml_ops::onnx::top_k_count(#k) }
                    }
                }
            }
        };
        let input = ctx.arg(&inputs[0]);
        let (values, indices) = (arg_to_ident(&outputs[0]), arg_to_ident(&outputs[1]));
        let (axis, largest) = (config.axis, config.largest);
        Ok(quote! {
            let (#values, #indices) =
                burn_dml_ops::onnx::top_k(#input, #k, #axis, #largest, #dtype);
        })
    }
}

/// `NonMaxSuppression` (opsets 10 and 11): `burn_dml_ops::onnx::non_max_suppression`, then its
/// exact form. The optional inputs may be absent (ONNX's defaults: no box selected, IoU
/// threshold 0, no score threshold), constants, or tensors the model computes, which are read
/// back once each.
pub(crate) struct NonMaxSuppression;

impl OpOverride for NonMaxSuppression {
    fn target(&self) -> NodeType {
        NodeType::NonMaxSuppression
    }

    fn forward(
        &self,
        node: &Node,
        ctx: &mut CodegenContext<'_, '_>,
    ) -> Result<TokenStream, ProcessError> {
        let Node::NonMaxSuppression(NonMaxSuppressionNode {
            name,
            inputs,
            outputs,
            config,
        }) = node
        else {
            return Err(unexpected(&NodeType::NonMaxSuppression, node));
        };
        let op = "NonMaxSuppression";
        for (role, index) in [("boxes", 0), ("scores", 1)] {
            let operand = tensor(op, name, role, inputs.get(index))?;
            if operand.rank != 3 {
                return Err(ProcessError::Custom(format!(
                    "NonMaxSuppression node '{name}': {role} have rank {}, not 3",
                    operand.rank
                )));
            }
        }
        let out = tensor(op, name, "output", outputs.first())?;
        let dtype = int_dtype(op, name, out.dtype)?;
        let mut scalar =
            |index: usize, float: bool| optional_scalar(op, name, inputs.get(index), float, ctx);
        let max_output = scalar(2, false)?.unwrap_or(quote! { 0i64 });
        let iou = scalar(3, true)?.unwrap_or(quote! { 0.0f32 });
        let score = scalar(4, true)?.map_or(quote! { None }, |v| quote! { Some(#v) });
        let center = matches!(config.center_point_box, Some(BoxFormat::Center));
        let (boxes, scores) = (ctx.arg(&inputs[0]), ctx.arg(&inputs[1]));
        let output = arg_to_ident(&outputs[0]);
        Ok(quote! {
            let #output = burn_dml_ops::onnx::non_max_suppression(
                #boxes, #scores, #max_output, #iou, #score, #center, #dtype,
            );
        })
    }
}

/// An optional scalar input as an `f32` (`float`) or `i64` expression: `None` where absent, the
/// value where the importer made it a native scalar (a constant), and a read of the one-element
/// tensor where the model feeds or computes it.
fn optional_scalar(
    op: &str,
    node: &str,
    argument: Option<&Argument>,
    float: bool,
    ctx: &mut CodegenContext<'_, '_>,
) -> Result<Option<TokenStream>, ProcessError> {
    let Some(argument) = argument.filter(|argument| !argument.is_optional()) else {
        return Ok(None);
    };
    let value = ctx.arg(argument);
    let (wanted, ty) = if float {
        (DType::F32, quote! { f32 })
    } else {
        (DType::I64, quote! { i64 })
    };
    // The expression's type: the native scalar's own, or what the read returns.
    let (typed, value) = match &argument.ty {
        ArgType::ScalarNative(dtype) => (*dtype, value),
        ArgType::ScalarTensor(dtype) => read_scalar(dtype, value),
        ArgType::Tensor(tensor) if tensor.rank == 1 => read_scalar(&tensor.dtype, value),
        other => {
            return Err(ProcessError::Custom(format!(
                "{op} node '{node}': a scalar input is typed {other:?}, not a scalar or a \
                 one-element tensor"
            )));
        }
    };
    Ok(Some(if typed == wanted {
        value
    } else {
        quote! { (#value) as #ty }
    }))
}

/// The read of a one-element tensor of `dtype`, and its type: `f32` or `i64`.
fn read_scalar(dtype: &DType, value: TokenStream) -> (DType, TokenStream) {
    if dtype.is_float() {
        (
            DType::F32,
            quote! { burn_dml_ops::onnx::float_scalar(#value) },
        )
    } else {
        (
            DType::I64,
            quote! { burn_dml_ops::onnx::int_scalar(#value) },
        )
    }
}

/// The error for a node of another type than the override's target (never expected).
fn unexpected(target: &NodeType, node: &Node) -> ProcessError {
    ProcessError::Custom(format!(
        "burn-dml-ops-onnx's {target:?} override was handed a different node: {node:?}"
    ))
}
