//! `Autodiff<B, C>` (Burn's autodiff devices): every operator runs on the inner backend `B`.
//!
//! BitCount and NonZeroCoordinates return Int tensors, which carry no gradient: a tracked Float
//! input is read through its primitive. Compress on Float tensors records its backward pass
//! (each selected element's gradient back to its position, zero elsewhere). ScatterND on Float
//! tensors records its backward pass for `Assign` and `Add`; `Mul`, `Min` and `Max` refuse
//! tracked operands (the tensor extension trait turns that into a
//! [`DmlOpsError`](crate::DmlOpsError) before it gets here). TopK on Float tensors records its
//! backward pass (each value's gradient back to the position its index names). Sampling returns
//! tokens and log-probabilities with no gradient.

use burn::backend::Autodiff;
use burn::backend::TensorMetadata;
use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind, binary, unary};
use burn::backend::tensor::{BoolTensor, FloatTensor, IntTensor};
use burn::tensor::{FloatDType, IndexingUpdateOp, IntDType, Shape};

use crate::DmlOps;
use crate::nms_rules::BoxFormat;
use crate::ops::leading_slices;
use crate::scatter_nd_rules::{OutOfBounds, Reduction, not_differentiable};
use crate::sort_rules::Order;

impl<B: DmlOps, C: CheckpointStrategy> DmlOps for Autodiff<B, C> {
    fn int_bit_count(input: IntTensor<Self>, out_dtype: IntDType) -> IntTensor<Self> {
        B::int_bit_count(input, out_dtype)
    }

    fn float_bit_count(input: FloatTensor<Self>, out_dtype: IntDType) -> IntTensor<Self> {
        B::float_bit_count(input.into_primitive(), out_dtype)
    }

    fn float_leading_slices(
        tensor: FloatTensor<Self>,
        axis: usize,
        count: usize,
    ) -> FloatTensor<Self> {
        let prep = LeadingSlicesBackward
            .prepare::<C>([tensor.node()])
            .compute_bound()
            .stateful();
        let state = (tensor.primitive().shape(), axis, count);
        let kept = B::float_leading_slices(tensor.into_primitive(), axis, count);
        match prep {
            OpsKind::Tracked(prep) => prep.finish(state, kept),
            OpsKind::UnTracked(prep) => prep.finish(kept),
        }
    }

    fn int_leading_slices(tensor: IntTensor<Self>, axis: usize, count: usize) -> IntTensor<Self> {
        B::int_leading_slices(tensor, axis, count)
    }

    fn bool_leading_slices(
        tensor: BoolTensor<Self>,
        axis: usize,
        count: usize,
    ) -> BoolTensor<Self> {
        B::bool_leading_slices(tensor, axis, count)
    }

    fn float_compress(
        input: FloatTensor<Self>,
        condition: BoolTensor<Self>,
        axis: Option<usize>,
        count_dtype: IntDType,
    ) -> (IntTensor<Self>, FloatTensor<Self>) {
        let prep = CompressBackward
            .prepare::<C>([input.node()])
            .compute_bound()
            .stateful();
        let state = CompressState {
            condition: condition.clone(),
            axis,
            input_shape: input.primitive().shape(),
        };
        let (count, values) =
            B::float_compress(input.into_primitive(), condition, axis, count_dtype);
        let values = match prep {
            OpsKind::Tracked(prep) => prep.finish(state, values),
            OpsKind::UnTracked(prep) => prep.finish(values),
        };
        (count, values)
    }

    fn int_compress(
        input: IntTensor<Self>,
        condition: BoolTensor<Self>,
        axis: Option<usize>,
        count_dtype: IntDType,
    ) -> (IntTensor<Self>, IntTensor<Self>) {
        B::int_compress(input, condition, axis, count_dtype)
    }

    fn bool_compress(
        input: BoolTensor<Self>,
        condition: BoolTensor<Self>,
        axis: Option<usize>,
        count_dtype: IntDType,
    ) -> (IntTensor<Self>, BoolTensor<Self>) {
        B::bool_compress(input, condition, axis, count_dtype)
    }

    fn int_index_tuples(
        indices: IntTensor<Self>,
        positions: Shape,
        width: usize,
        copy_start: usize,
        copy_len: usize,
    ) -> IntTensor<Self> {
        B::int_index_tuples(indices, positions, width, copy_start, copy_len)
    }

    fn float_top_k(
        input: FloatTensor<Self>,
        axis: usize,
        k: usize,
        order: Order,
        indices_dtype: IntDType,
    ) -> (FloatTensor<Self>, IntTensor<Self>) {
        let prep = TopKBackward
            .prepare::<C>([input.node()])
            .compute_bound()
            .stateful();
        let shape = input.primitive().shape();
        let (values, indices) =
            B::float_top_k(input.into_primitive(), axis, k, order, indices_dtype);
        let values = match prep {
            OpsKind::Tracked(prep) => prep.finish((indices.clone(), shape, axis), values),
            OpsKind::UnTracked(prep) => prep.finish(values),
        };
        (values, indices)
    }

    fn int_top_k(
        input: IntTensor<Self>,
        axis: usize,
        k: usize,
        order: Order,
        indices_dtype: IntDType,
    ) -> (IntTensor<Self>, IntTensor<Self>) {
        B::int_top_k(input, axis, k, order, indices_dtype)
    }

    fn float_sample(
        logits: FloatTensor<Self>,
        temperature: FloatTensor<Self>,
        top_k: IntTensor<Self>,
        top_p: FloatTensor<Self>,
        min_p: FloatTensor<Self>,
        seeds: IntTensor<Self>,
        step: u64,
    ) -> (IntTensor<Self>, FloatTensor<Self>) {
        let (tokens, logprobs) = B::float_sample(
            logits.into_primitive(),
            temperature.into_primitive(),
            top_k,
            top_p.into_primitive(),
            min_p.into_primitive(),
            seeds,
            step,
        );
        let logprobs = NoGradient
            .prepare::<C>([])
            .compute_bound()
            .stateless(logprobs);
        (tokens, logprobs)
    }

    fn float_non_max_suppression(
        boxes: FloatTensor<Self>,
        scores: FloatTensor<Self>,
        iou_threshold: f32,
        score_threshold: Option<f32>,
        max_per_class: usize,
        box_format: BoxFormat,
        indices_dtype: IntDType,
    ) -> (IntTensor<Self>, IntTensor<Self>) {
        B::float_non_max_suppression(
            boxes.into_primitive(),
            scores.into_primitive(),
            iou_threshold,
            score_threshold,
            max_per_class,
            box_format,
            indices_dtype,
        )
    }

    fn float_nonzero_coordinates(
        input: FloatTensor<Self>,
        width: usize,
        fill: Option<i64>,
        out_dtype: IntDType,
    ) -> (IntTensor<Self>, IntTensor<Self>) {
        B::float_nonzero_coordinates(input.into_primitive(), width, fill, out_dtype)
    }

    fn int_nonzero_coordinates(
        input: IntTensor<Self>,
        width: usize,
        fill: Option<i64>,
        out_dtype: IntDType,
    ) -> (IntTensor<Self>, IntTensor<Self>) {
        B::int_nonzero_coordinates(input, width, fill, out_dtype)
    }

    fn bool_nonzero_coordinates(
        input: BoolTensor<Self>,
        width: usize,
        fill: Option<i64>,
        out_dtype: IntDType,
    ) -> (IntTensor<Self>, IntTensor<Self>) {
        B::bool_nonzero_coordinates(input, width, fill, out_dtype)
    }

    fn float_scatter_nd(
        input: FloatTensor<Self>,
        indices: IntTensor<Self>,
        updates: FloatTensor<Self>,
        reduction: Reduction,
        out_of_bounds: OutOfBounds,
        input_dims: usize,
        deterministic: bool,
    ) -> FloatTensor<Self> {
        let prep = ScatterNdBackward
            .prepare::<C>([input.node(), updates.node()])
            .compute_bound()
            .stateful();
        let updates_shape = updates.primitive().shape();
        let forward = |indices| {
            <B as DmlOps>::float_scatter_nd(
                input.into_primitive(),
                indices,
                updates.into_primitive(),
                reduction,
                out_of_bounds,
                input_dims,
                deterministic,
            )
        };
        match prep {
            OpsKind::Tracked(prep) => {
                assert!(
                    matches!(reduction, Reduction::Assign | Reduction::Add),
                    "ScatterND: {}",
                    not_differentiable(reduction)
                );
                let state = ScatterNdState {
                    indices: indices.clone(),
                    updates_shape,
                    reduction,
                    out_of_bounds,
                    input_dims,
                    deterministic,
                };
                prep.finish(state, forward(indices))
            }
            OpsKind::UnTracked(prep) => prep.finish(forward(indices)),
        }
    }

    fn float_gather_nd_slices(
        input: FloatTensor<Self>,
        indices: IntTensor<Self>,
        out_of_bounds: OutOfBounds,
        shape: Shape,
        input_dims: usize,
    ) -> FloatTensor<Self> {
        let prep = GatherNdBackward
            .prepare::<C>([input.node()])
            .compute_bound()
            .stateful();
        let input_shape = input.primitive().shape();
        let forward = |indices| {
            B::float_gather_nd_slices(
                input.into_primitive(),
                indices,
                out_of_bounds,
                shape,
                input_dims,
            )
        };
        match prep {
            OpsKind::Tracked(prep) => {
                let state = GatherNdState {
                    indices: indices.clone(),
                    input_shape,
                    out_of_bounds,
                    input_dims,
                };
                prep.finish(state, forward(indices))
            }
            OpsKind::UnTracked(prep) => prep.finish(forward(indices)),
        }
    }

    fn int_gather_nd_slices(
        input: IntTensor<Self>,
        indices: IntTensor<Self>,
        out_of_bounds: OutOfBounds,
        shape: Shape,
        input_dims: usize,
    ) -> IntTensor<Self> {
        B::int_gather_nd_slices(input, indices, out_of_bounds, shape, input_dims)
    }

    fn bool_gather_nd_slices(
        input: BoolTensor<Self>,
        indices: IntTensor<Self>,
        out_of_bounds: OutOfBounds,
        shape: Shape,
        input_dims: usize,
    ) -> BoolTensor<Self> {
        B::bool_gather_nd_slices(input, indices, out_of_bounds, shape, input_dims)
    }

    fn int_scatter_nd(
        input: IntTensor<Self>,
        indices: IntTensor<Self>,
        updates: IntTensor<Self>,
        reduction: Reduction,
        out_of_bounds: OutOfBounds,
        input_dims: usize,
        deterministic: bool,
    ) -> IntTensor<Self> {
        <B as DmlOps>::int_scatter_nd(
            input,
            indices,
            updates,
            reduction,
            out_of_bounds,
            input_dims,
            deterministic,
        )
    }

    fn bool_scatter_nd(
        input: BoolTensor<Self>,
        indices: IntTensor<Self>,
        updates: BoolTensor<Self>,
        reduction: Reduction,
        out_of_bounds: OutOfBounds,
        input_dims: usize,
        deterministic: bool,
    ) -> BoolTensor<Self> {
        <B as DmlOps>::bool_scatter_nd(
            input,
            indices,
            updates,
            reduction,
            out_of_bounds,
            input_dims,
            deterministic,
        )
    }
}

/// ScatterND's backward pass (`Assign` and `Add`).
#[derive(Debug)]
struct ScatterNdBackward;

/// What ScatterND's backward pass keeps from the forward call.
#[derive(Clone, Debug)]
struct ScatterNdState<B: DmlOps> {
    indices: IntTensor<B>,
    updates_shape: Shape,
    reduction: Reduction,
    out_of_bounds: OutOfBounds,
    input_dims: usize,
    deterministic: bool,
}

impl<B: DmlOps> Backward<B, 2> for ScatterNdBackward {
    type State = ScatterNdState<B>;

    /// With `G` the output's gradient:
    /// - input: `Add` passes `G` through; `Assign` zeroes the elements that an update replaced
    ///   (a ScatterND of zeros with the same indices and policy);
    /// - updates: each row gets `G` at the slice its index tuple addressed (after wrapping and
    ///   clamping), and zeros when the tuple was skipped or, for a deterministic `Assign`, when
    ///   a later row replaced its update (only the update that landed has a gradient).
    fn backward(
        self,
        ops: Ops<Self::State, 2>,
        grads: &mut Gradients,
        _checkpointer: &mut Checkpointer,
    ) {
        let ScatterNdState {
            indices,
            updates_shape,
            reduction,
            out_of_bounds,
            input_dims,
            deterministic,
        } = ops.state;
        let (indices_4input, shape_4input) = (indices.clone(), updates_shape.clone());
        binary::<B, _, _>(
            ops.parents,
            ops.node,
            grads,
            |grad| match reduction {
                // No index tuple: the scatter replaced nothing, so the gradient passes through.
                // (Creating the empty zeros would also trip Burn 0.22.1's Fusion, which drops
                // one-element elementwise work fused with a zero-element tensor's creation.)
                Reduction::Assign if shape_4input.num_elements() == 0 => grad,
                Reduction::Assign => {
                    let zeros = B::float_zeros(shape_4input, &grad.device(), grad.dtype().into());
                    <B as DmlOps>::float_scatter_nd(
                        grad,
                        indices_4input,
                        zeros,
                        Reduction::Assign,
                        out_of_bounds,
                        input_dims,
                        false,
                    )
                }
                _ => grad,
            },
            |grad| {
                let input_shape = grad.shape();
                let gathered = B::float_gather_nd_slices(
                    grad,
                    indices.clone(),
                    out_of_bounds,
                    updates_shape.clone(),
                    input_dims,
                );
                if deterministic && reduction == Reduction::Assign {
                    let winners = ScatterNdWinners::<B> {
                        indices,
                        out_of_bounds,
                        input_dims,
                        input_shape,
                        updates_shape,
                    };
                    let losers = B::bool_not(winners.rows(&gathered.device()));
                    B::float_mask_fill(gathered, losers, 0.0.into())
                } else {
                    gathered
                }
            },
        );
    }
}

/// A deterministic `Assign`'s index tuples, for finding the rows whose update landed.
struct ScatterNdWinners<B: DmlOps> {
    indices: IntTensor<B>,
    out_of_bounds: OutOfBounds,
    input_dims: usize,
    input_shape: Shape,
    updates_shape: Shape,
}

impl<B: DmlOps> ScatterNdWinners<B> {
    /// True at the elements of the update rows that landed (the latest row of each target):
    /// each row's number, in two `f32` parts below 2^12 and 2^24 (exact), is scattered
    /// deterministically into the input's shape and gathered back, and compared with its own.
    fn rows(self, device: &B::Device) -> BoolTensor<B> {
        let tuples = self.indices.shape();
        let rows = tuples.num_elements() / tuples[tuples.num_dims() - 1].max(1);
        let slice = self.updates_shape.num_elements() / rows.max(1);
        // i32 where it holds every row number: OpenGL has no i64.
        let id_dtype = if i32::try_from(rows).is_ok() {
            IntDType::I32
        } else {
            IntDType::I64
        };
        let ids = B::int_expand(
            B::int_reshape(
                B::int_arange(0..rows as i64, device, id_dtype),
                Shape::new([rows, 1]),
            ),
            Shape::new([rows, slice]),
        );
        let ids = B::int_reshape(ids, self.updates_shape.clone());
        let parts = [
            B::int_remainder_scalar(ids.clone(), 4096.into()),
            B::int_div_scalar(ids, 4096.into()),
        ];
        let bool_dtype = burn::backend::get_or_init_device_settings::<B>(device).bool_dtype;
        let mut landed: Option<BoolTensor<B>> = None;
        for part in parts {
            let own = B::int_into_float(part, FloatDType::F32);
            let canvas = B::float_full(
                self.input_shape.clone(),
                (-1.0).into(),
                device,
                FloatDType::F32,
            );
            let scattered = <B as DmlOps>::float_scatter_nd(
                canvas,
                self.indices.clone(),
                own.clone(),
                Reduction::Assign,
                self.out_of_bounds,
                self.input_dims,
                true,
            );
            let winner = B::float_gather_nd_slices(
                scattered,
                self.indices.clone(),
                self.out_of_bounds,
                self.updates_shape.clone(),
                self.input_dims,
            );
            let same = B::float_equal(own, winner, bool_dtype);
            landed = Some(match landed {
                Some(landed) => B::bool_and(landed, same),
                None => same,
            });
        }
        landed.expect("two parts")
    }
}

/// The backward pass of [`DmlOps::float_gather_nd_slices`]: the gradient of the gathered rows,
/// added back into zeros at the slices they came from.
#[derive(Debug)]
struct GatherNdBackward;

/// What the gather's backward pass keeps from the forward call.
#[derive(Clone, Debug)]
struct GatherNdState<B: DmlOps> {
    indices: IntTensor<B>,
    input_shape: Shape,
    out_of_bounds: OutOfBounds,
    input_dims: usize,
}

impl<B: DmlOps> Backward<B, 1> for GatherNdBackward {
    type State = GatherNdState<B>;

    fn backward(
        self,
        ops: Ops<Self::State, 1>,
        grads: &mut Gradients,
        _checkpointer: &mut Checkpointer,
    ) {
        let GatherNdState {
            indices,
            input_shape,
            out_of_bounds,
            input_dims,
        } = ops.state;
        unary::<B, _>(ops.parents, ops.node, grads, |grad| {
            let zeros = B::float_zeros(input_shape, &grad.device(), grad.dtype().into());
            <B as DmlOps>::float_scatter_nd(
                zeros,
                indices,
                grad,
                Reduction::Add,
                out_of_bounds,
                input_dims,
                false,
            )
        });
    }
}

/// Compress's backward pass.
#[derive(Debug)]
struct CompressBackward;

/// What Compress's backward pass keeps from the forward call.
#[derive(Clone, Debug)]
struct CompressState<B: DmlOps> {
    condition: BoolTensor<B>,
    /// `None` for a mask of the input's shape.
    axis: Option<usize>,
    input_shape: Shape,
}

impl<B: DmlOps> Backward<B, 1> for CompressBackward {
    type State = CompressState<B>;

    /// Slice `r < count` of the output's gradient goes back to the `r`-th selected slice of the
    /// input, every other slice gets zero: a ScatterND along the axis (moved to the front) of the
    /// gradient into zeros, at the selected slices' indices. The compaction pads the index list
    /// with the axis's size, which the scatter skips, so nothing reads the count back. A mask
    /// is the same along the one axis of the flattened input, reshaped back at the end.
    fn backward(
        self,
        ops: Ops<Self::State, 1>,
        grads: &mut Gradients,
        _checkpointer: &mut Checkpointer,
    ) {
        let CompressState {
            condition,
            axis,
            input_shape,
        } = ops.state;
        unary::<B, _>(ops.parents, ops.node, grads, |grad| {
            let device = grad.device();
            let dtype = grad.dtype().into();
            let mask = axis.is_none();
            let (shape, axis, condition) = match axis {
                Some(axis) => (input_shape.clone(), axis, condition),
                None => {
                    let flat = Shape::new([input_shape.num_elements()]);
                    (flat.clone(), 0, B::bool_reshape(condition, flat))
                }
            };
            // The flat gradient of a mask is contiguous, so its reshape moves nothing.
            let unflatten = |gradient| {
                if mask {
                    B::float_reshape(gradient, input_shape.clone())
                } else {
                    gradient
                }
            };
            let axis_len = shape[axis];
            let zeros = B::float_zeros(shape, &device, dtype);
            if grad.shape().num_elements() == 0 {
                return unflatten(zeros);
            }
            let index_dtype = if i32::try_from(axis_len).is_ok() {
                IntDType::I32
            } else {
                IntDType::I64
            };
            let (_, selected) =
                B::bool_nonzero_coordinates(condition, 1, Some(axis_len as i64), index_dtype);
            let rank = grad.shape().num_dims();
            let scattered = <B as DmlOps>::float_scatter_nd(
                B::float_swap_dims(zeros, 0, axis),
                selected,
                B::float_swap_dims(grad, 0, axis),
                Reduction::Assign,
                OutOfBounds::Skip,
                rank,
                false,
            );
            unflatten(B::float_swap_dims(scattered, 0, axis))
        });
    }
}

/// A Float result that carries no gradient and has no parents in the graph: sampling's
/// log-probabilities.
#[derive(Debug)]
struct NoGradient;

impl<B: DmlOps> Backward<B, 0> for NoGradient {
    type State = ();

    fn backward(
        self,
        _ops: Ops<Self::State, 0>,
        _grads: &mut Gradients,
        _checkpointer: &mut Checkpointer,
    ) {
    }
}

/// The backward pass of the leading slices: the gradient goes back to the slices kept, zeros
/// to the rest.
#[derive(Debug)]
struct LeadingSlicesBackward;

impl<B: DmlOps> Backward<B, 1> for LeadingSlicesBackward {
    /// The input's shape, the axis and the number of slices kept.
    type State = (Shape, usize, usize);

    fn backward(
        self,
        ops: Ops<Self::State, 1>,
        grads: &mut Gradients,
        _checkpointer: &mut Checkpointer,
    ) {
        let (shape, axis, count) = ops.state;
        unary::<B, _>(ops.parents, ops.node, grads, |grad| {
            let zeros = B::float_zeros(shape.clone(), &grad.device(), grad.dtype().into());
            B::float_slice_assign(zeros, &leading_slices(&shape, axis, count), grad)
        });
    }
}

/// The backward pass of TopK: each value's gradient goes back to the position its index
/// names, every other position gets zero.
#[derive(Debug)]
struct TopKBackward;

impl<B: DmlOps> Backward<B, 1> for TopKBackward {
    /// The indices, the input's shape and the axis.
    type State = (IntTensor<B>, Shape, usize);

    fn backward(
        self,
        ops: Ops<Self::State, 1>,
        grads: &mut Gradients,
        _checkpointer: &mut Checkpointer,
    ) {
        let (indices, shape, axis) = ops.state;
        unary::<B, _>(ops.parents, ops.node, grads, |grad| {
            let zeros = B::float_zeros(shape, &grad.device(), grad.dtype().into());
            // The positions of one sequence are distinct, so adding is assigning.
            B::float_scatter(axis, zeros, indices, grad, IndexingUpdateOp::Add)
        });
    }
}
