//! `CubeBackend` (wgpu, Vulkan, CUDA): every operator launches a CubeCL kernel of the
//! `burn-dml-ops-kernels` crate on the tensor's stream. Nothing here reads back to the host.

use burn::backend::TensorMetadata;
use burn::backend::cubecl::dtype_to_elem_type;
use burn::backend::tensor::{BoolTensor, FloatTensor, IntTensor};
use burn::tensor::{DType, IntDType, Shape};
use burn_cubecl::CubeBackend;
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::tensor::CubeTensor;
use burn_dml_ops_kernels::bit_count::{BitCountPath, launch_bit_count};
use burn_dml_ops_kernels::compress::{
    CompressInput, CompressOutput, CompressShape, launch_compress,
};
use burn_dml_ops_kernels::copy::{launch_contiguous_words, launch_copy};
use burn_dml_ops_kernels::nonzero::{
    CompactionInput, CompactionOutput, CompactionPlan, NonZeroPredicate, launch_nonzero_coordinates,
};
use burn_dml_ops_kernels::scatter_nd::{
    OutOfRange as KernelOutOfRange, ReduceOp, ScatterNdData, ScatterNdIndices, ScatterNdLayout,
    ScatterReduction, deterministic_strategy, launch_gather_nd, launch_scatter_nd,
    scatter_strategy,
};
use burn_dml_ops_kernels::sort::{
    SortInput, SortOrder, SortOutput, SortPlan, SortShape, launch_top_k,
};
use burn_dml_ops_kernels::tuples::launch_index_tuples;
use burn_dml_ops_kernels::{InputView, StorageWidth};
use cubecl::features::TypeUsage;
use cubecl::zspace::metadata::Metadata;
use cubecl::zspace::striding::row_major_contiguous_strides;

use super::cube_common::{empty_output, int_elem, launch_failed};
use crate::DmlOps;
use crate::nms_rules::BoxFormat;
use crate::scatter_nd_rules::{OutOfBounds, Reduction, indexed_dims};
use crate::sort_rules::Order;

impl DmlOps for CubeBackend {
    fn int_bit_count(input: IntTensor<Self>, out_dtype: IntDType) -> IntTensor<Self> {
        bit_count(input, out_dtype)
    }

    fn float_bit_count(input: FloatTensor<Self>, out_dtype: IntDType) -> IntTensor<Self> {
        bit_count(input, out_dtype)
    }

    fn float_leading_slices(
        tensor: FloatTensor<Self>,
        axis: usize,
        count: usize,
    ) -> FloatTensor<Self> {
        leading_slices(tensor, axis, count)
    }

    fn int_leading_slices(tensor: IntTensor<Self>, axis: usize, count: usize) -> IntTensor<Self> {
        leading_slices(tensor, axis, count)
    }

    fn bool_leading_slices(
        tensor: BoolTensor<Self>,
        axis: usize,
        count: usize,
    ) -> BoolTensor<Self> {
        leading_slices(tensor, axis, count)
    }

    fn float_compress(
        input: FloatTensor<Self>,
        condition: BoolTensor<Self>,
        axis: Option<usize>,
        count_dtype: IntDType,
    ) -> (IntTensor<Self>, FloatTensor<Self>) {
        compress(input, condition, axis, count_dtype)
    }

    fn int_compress(
        input: IntTensor<Self>,
        condition: BoolTensor<Self>,
        axis: Option<usize>,
        count_dtype: IntDType,
    ) -> (IntTensor<Self>, IntTensor<Self>) {
        compress(input, condition, axis, count_dtype)
    }

    fn bool_compress(
        input: BoolTensor<Self>,
        condition: BoolTensor<Self>,
        axis: Option<usize>,
        count_dtype: IntDType,
    ) -> (IntTensor<Self>, BoolTensor<Self>) {
        compress(input, condition, axis, count_dtype)
    }

    fn int_index_tuples(
        indices: IntTensor<Self>,
        positions: Shape,
        width: usize,
        copy_start: usize,
        copy_len: usize,
    ) -> IntTensor<Self> {
        let indices = contiguous_bits(indices, "index tuples");
        let tuples = empty_output(
            &indices,
            Shape::new([positions.num_elements(), width]),
            indices.dtype,
        );
        launch_index_tuples(
            &indices.client,
            indices.handle.clone(),
            tuples.handle.clone(),
            dtype_to_elem_type(indices.dtype),
            &positions,
            (width, copy_start, copy_len),
        )
        .unwrap_or_else(|err| launch_failed("index tuples", &indices.device, err));
        tuples
    }

    fn float_top_k(
        input: FloatTensor<Self>,
        axis: usize,
        k: usize,
        order: Order,
        indices_dtype: IntDType,
    ) -> (FloatTensor<Self>, IntTensor<Self>) {
        top_k(input, axis, k, order, indices_dtype)
    }

    fn int_top_k(
        input: IntTensor<Self>,
        axis: usize,
        k: usize,
        order: Order,
        indices_dtype: IntDType,
    ) -> (IntTensor<Self>, IntTensor<Self>) {
        top_k(input, axis, k, order, indices_dtype)
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
        let options = super::cube_sample::RowOptions {
            temperature,
            top_k,
            top_p,
            min_p,
            seeds,
        };
        super::cube_sample::sample(logits, options, step)
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
        super::cube_nms::non_max_suppression(
            boxes,
            scores,
            (iou_threshold, score_threshold, max_per_class),
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
        let predicate = NonZeroPredicate::AnyBitButSign;
        nonzero_coordinates(input, predicate, width, fill, out_dtype)
    }

    fn int_nonzero_coordinates(
        input: IntTensor<Self>,
        width: usize,
        fill: Option<i64>,
        out_dtype: IntDType,
    ) -> (IntTensor<Self>, IntTensor<Self>) {
        nonzero_coordinates(input, NonZeroPredicate::AnyBit, width, fill, out_dtype)
    }

    fn bool_nonzero_coordinates(
        input: BoolTensor<Self>,
        width: usize,
        fill: Option<i64>,
        out_dtype: IntDType,
    ) -> (IntTensor<Self>, IntTensor<Self>) {
        nonzero_coordinates(input, NonZeroPredicate::AnyBit, width, fill, out_dtype)
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
        scatter_nd(
            input,
            indices,
            updates,
            reduction,
            out_of_bounds,
            input_dims,
            deterministic,
        )
    }

    fn float_gather_nd_slices(
        input: FloatTensor<Self>,
        indices: IntTensor<Self>,
        out_of_bounds: OutOfBounds,
        shape: Shape,
        input_dims: usize,
    ) -> FloatTensor<Self> {
        gather_nd(input, indices, out_of_bounds, shape, input_dims)
    }

    fn int_gather_nd_slices(
        input: IntTensor<Self>,
        indices: IntTensor<Self>,
        out_of_bounds: OutOfBounds,
        shape: Shape,
        input_dims: usize,
    ) -> IntTensor<Self> {
        gather_nd(input, indices, out_of_bounds, shape, input_dims)
    }

    fn bool_gather_nd_slices(
        input: BoolTensor<Self>,
        indices: IntTensor<Self>,
        out_of_bounds: OutOfBounds,
        shape: Shape,
        input_dims: usize,
    ) -> BoolTensor<Self> {
        gather_nd(input, indices, out_of_bounds, shape, input_dims)
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
        scatter_nd(
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
        scatter_nd(
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

/// The storage width of `tensor`'s elements; the tensor extension traits only let fixed-width
/// dtypes through.
fn storage_width(tensor: &CubeTensor, operator: &str) -> StorageWidth {
    StorageWidth::from_bytes(tensor.dtype.size()).unwrap_or_else(|| {
        panic!(
            "{operator}: dtype {:?} has no fixed element width; the tensor extension traits \
             refuse it before it gets here",
            tensor.dtype
        )
    })
}

/// Whether `strides` lay `shape` out densely: the row-major strides of some order of its axes
/// (a transposed or permuted contiguous tensor), so the elements fill offsets `0..len` once each.
fn is_dense(shape: &[usize], strides: &[usize]) -> bool {
    let mut axes: Vec<(usize, usize)> = shape
        .iter()
        .zip(strides)
        .filter(|(size, _)| **size != 1)
        .map(|(&size, &stride)| (stride, size))
        .collect();
    axes.sort_unstable();
    let mut expected = 1;
    for (stride, size) in axes {
        if stride != expected {
            return false;
        }
        expected *= size;
    }
    true
}

/// BitCount in one launch, never a copy first. A dense input (contiguous, transposed, permuted)
/// is counted in memory order and its output takes the input's strides, as elementwise ops do;
/// any other view (sliced with gaps, broadcast) is read where it lies by the word-wise kernel.
/// The kernel path follows from what the runtime binds, so every dtype counts.
fn bit_count(input: CubeTensor, out_dtype: IntDType) -> CubeTensor {
    // A storage-tiled tensor (laid out for a matmul) has no strides to read it by.
    let input = if input.meta.is_tiled() {
        into_contiguous(input)
    } else {
        input
    };
    let shape = input.shape();
    let len = shape.num_elements();
    let width = storage_width(&input, "BitCount");
    let strides = input.meta.strides().to_vec();
    let output_elem = int_elem(out_dtype);
    let (view, output) = if len > 0 && is_dense(&shape, &strides) {
        let handle = input.client.empty(len * output_elem.size());
        let layout = Metadata::new(shape, input.meta.strides.clone());
        let output = CubeTensor::new(
            input.client.clone(),
            handle,
            layout,
            input.device.clone(),
            DType::from(out_dtype),
        );
        (
            InputView::contiguous(input.handle.clone(), width, len),
            output,
        )
    } else {
        let view = InputView {
            handle: input.handle.clone(),
            width,
            shape: shape.to_vec(),
            strides,
        };
        (view, empty_output(&input, shape, DType::from(out_dtype)))
    };
    let path = BitCountPath::for_input(&input.client, &view, output_elem);
    launch_bit_count(
        &input.client,
        &view,
        output.handle.clone(),
        output_elem,
        path,
    )
    .unwrap_or_else(|err| launch_failed("BitCount", &input.device, err));
    output
}

/// `input` laid out row-major from its first element, for a kernel that reads its raw bits:
/// itself when it already is, Burn's copy where the runtime binds the element type, and
/// otherwise the kernel crate's copy through 32-bit words, into a buffer of whole words.
fn contiguous_bits(input: CubeTensor, operator: &str) -> CubeTensor {
    let elem = dtype_to_elem_type(input.dtype);
    let binds = input
        .client
        .properties()
        .type_usage(elem)
        .contains(TypeUsage::Buffer);
    if binds || input.meta.is_tiled() || input.is_contiguous() {
        return into_contiguous(input);
    }
    let shape = input.shape();
    let width = storage_width(&input, operator);
    let view = InputView {
        handle: input.handle.clone(),
        width,
        shape: shape.to_vec(),
        strides: input.meta.strides().to_vec(),
    };
    let words = (shape.num_elements() * width.bytes()).div_ceil(4);
    let handle = input.client.empty(words.max(1) * 4);
    launch_contiguous_words(&input.client, &view, handle.clone())
        .unwrap_or_else(|err| launch_failed(operator, &input.device, err));
    let layout = Metadata::new(shape.clone(), row_major_contiguous_strides(&shape));
    CubeTensor::new(input.client, handle, layout, input.device, input.dtype)
}

fn nonzero_coordinates(
    input: CubeTensor,
    predicate: NonZeroPredicate,
    width: usize,
    fill: Option<i64>,
    out_dtype: IntDType,
) -> (CubeTensor, CubeTensor) {
    let input = contiguous_bits(input, "NonZeroCoordinates");
    let shape = input.shape();
    let len = shape.num_elements();
    let dims = &shape[shape.num_dims() - width..];
    let empty = |shape: Shape| empty_output(&input, shape, DType::from(out_dtype));
    let count = empty([1].into());
    let coordinates = empty([len, width].into());
    launch_nonzero_coordinates(
        &input.client,
        &CompactionInput {
            handle: input.handle.clone(),
            width: storage_width(&input, "NonZeroCoordinates"),
            predicate,
            dims,
        },
        &CompactionOutput {
            count: count.handle.clone(),
            coordinates: coordinates.handle.clone(),
            elem: int_elem(out_dtype),
            fill,
        },
        CompactionPlan::for_len(&input.client, len),
    )
    .unwrap_or_else(|err| launch_failed("NonZeroCoordinates", &input.device, err));
    (count, coordinates)
}

/// Compress along `axis` (or by a mask of the input's shape, `axis` `None`) through
/// `launch_compress`, moving raw bits so every dtype runs: a mask over elements goes through the
/// compaction's own write, slices through a list of the selected ones and one launch that moves
/// them and writes the zero padding. Both tensors are made contiguous as bits first, so a mask
/// is then read flat.
fn compress(
    input: CubeTensor,
    condition: CubeTensor,
    axis: Option<usize>,
    count_dtype: IntDType,
) -> (CubeTensor, CubeTensor) {
    let input = contiguous_bits(input, "Compress");
    let condition = contiguous_bits(condition, "Compress");
    let slices = condition.shape().num_elements();
    let (shape, axis) = match axis {
        Some(axis) => (input.shape(), axis),
        None => (Shape::new([input.shape().num_elements()]), 0),
    };
    let mut values_shape = shape.clone();
    values_shape[axis] = slices;
    let count = empty_output(&input, [1].into(), DType::from(count_dtype));
    let values = empty_output(&input, values_shape, input.dtype);
    launch_compress(
        &input.client,
        &CompressInput {
            values: input.handle.clone(),
            elem: dtype_to_elem_type(input.dtype),
            condition: condition.handle.clone(),
            condition_width: storage_width(&condition, "Compress"),
        },
        &CompressOutput {
            count: count.handle.clone(),
            count_elem: int_elem(count_dtype),
            values: values.handle.clone(),
        },
        CompressShape {
            outer: shape[..axis].iter().product(),
            axis_len: shape[axis],
            inner: shape[axis + 1..].iter().product(),
            slices,
        },
        CompactionPlan::for_len(&input.client, slices),
    )
    .unwrap_or_else(|err| launch_failed("Compress", &input.device, err));
    (count, values)
}

/// TopK along `axis` through `launch_top_k`: a batched radix sort of the raw bits' keys,
/// reading and writing 32-bit words, so every dtype runs on every runtime. A view is made
/// contiguous as bits first.
fn top_k(
    input: CubeTensor,
    axis: usize,
    k: usize,
    order: Order,
    indices_dtype: IntDType,
) -> (CubeTensor, CubeTensor) {
    let input = contiguous_bits(input, "TopK");
    let shape = input.shape();
    let mut out_shape = shape.clone();
    out_shape[axis] = k;
    let values = empty_output(&input, out_shape.clone(), input.dtype);
    let indices = empty_output(&input, out_shape, DType::from(indices_dtype));
    launch_top_k(
        &input.client,
        &SortInput {
            values: input.handle.clone(),
            elem: dtype_to_elem_type(input.dtype),
        },
        &SortOutput {
            values: values.handle.clone(),
            indices: indices.handle.clone(),
            indices_elem: int_elem(indices_dtype),
        },
        SortShape {
            outer: shape[..axis].iter().product(),
            axis_len: shape[axis],
            inner: shape[axis + 1..].iter().product(),
            k,
        },
        match order {
            Order::Ascending => SortOrder::Ascending,
            Order::Descending => SortOrder::Descending,
        },
        SortPlan::for_client(&input.client),
    )
    .unwrap_or_else(|err| launch_failed("TopK", &input.device, err));
    (values, indices)
}

/// The first `count` slices along `axis`, copied as raw bits (through 32-bit words where the
/// runtime cannot bind the type), so no kernel of the element type has to compile: one copy of
/// a prefix when `axis` has no dimension of more than one element before it, else a copy of the
/// strided view that keeps those slices.
fn leading_slices(tensor: CubeTensor, axis: usize, count: usize) -> CubeTensor {
    let tensor = contiguous_bits(tensor, "the exact form");
    let shape = tensor.shape();
    let mut kept = shape.clone();
    kept[axis] = count;
    if shape[..axis].iter().all(|&d| d == 1) {
        let output = empty_output(&tensor, kept.clone(), tensor.dtype);
        launch_copy(
            &tensor.client,
            tensor.handle.clone(),
            output.handle.clone(),
            dtype_to_elem_type(tensor.dtype),
            kept.num_elements(),
        )
        .unwrap_or_else(|err| launch_failed("the exact form", &tensor.device, err));
        return output;
    }
    // The kept slices as a view of the same buffer with the same strides, then made contiguous.
    let strides = tensor.meta.strides().to_vec();
    let view = CubeTensor::new(
        tensor.client.clone(),
        tensor.handle.clone(),
        Metadata::new(kept, strides),
        tensor.device.clone(),
        tensor.dtype,
    );
    contiguous_bits(view, "the exact form")
}

/// ScatterND in place where the input's buffer is not shared, after one copy otherwise. The
/// index tuples address the last `input_dims` dimensions; the leading others have size 1, so
/// the contiguous layout is the same with or without them. `deterministic` takes the strategy
/// whose result does not depend on timing.
fn scatter_nd(
    input: CubeTensor,
    indices: CubeTensor,
    updates: CubeTensor,
    reduction: Reduction,
    out_of_bounds: OutOfBounds,
    input_dims: usize,
    deterministic: bool,
) -> CubeTensor {
    let input = contiguous_bits(input, "ScatterND");
    let indices = contiguous_bits(indices, "ScatterND");
    let updates = contiguous_bits(updates, "ScatterND");
    let shape = input.shape();
    let len = shape.num_elements();
    // In place when nobody else holds the input's buffer, otherwise one copy.
    let output = if input.can_mut() {
        input
    } else {
        let output = empty_output(&input, shape.clone(), input.dtype);
        launch_copy(
            &input.client,
            input.handle.clone(),
            output.handle.clone(),
            dtype_to_elem_type(input.dtype),
            len,
        )
        .unwrap_or_else(|err| launch_failed("ScatterND", &input.device, err));
        output
    };
    let layout = scatter_layout(&shape, &indices.shape(), input_dims);
    let reduction = match reduction {
        Reduction::Assign => ScatterReduction::Assign,
        Reduction::Add => ScatterReduction::Reduce(ReduceOp::Add),
        Reduction::Mul => ScatterReduction::Reduce(ReduceOp::Mul),
        Reduction::Min => ScatterReduction::Reduce(ReduceOp::Min),
        Reduction::Max => ScatterReduction::Reduce(ReduceOp::Max),
    };
    let data_elem = dtype_to_elem_type(output.dtype);
    let strategy = if deterministic {
        deterministic_strategy(&output.client, data_elem, reduction)
    } else {
        scatter_strategy(&output.client, data_elem, reduction)
    };
    launch_scatter_nd(
        &output.client,
        &ScatterNdData {
            output: output.handle.clone(),
            updates: updates.handle.clone(),
            elem: data_elem,
        },
        &kernel_indices(&indices, out_of_bounds),
        layout,
        reduction,
        strategy,
    )
    .unwrap_or_else(|err| launch_failed("ScatterND", &output.device, err));
    output
}

/// The kernels' view of a ScatterND (or its adjoint's) shapes: the `k` indexed dimensions
/// (the first of `data`'s last `input_dims`), one row per index tuple, and the slice each tuple
/// addresses.
fn scatter_layout<'a>(data: &'a Shape, indices: &Shape, input_dims: usize) -> ScatterNdLayout<'a> {
    let k = indices[indices.num_dims() - 1];
    let (dims, slice) = indexed_dims(data, input_dims, k);
    ScatterNdLayout {
        dims,
        rows: indices.num_elements() / k,
        slice,
    }
}

/// The index tuples of `indices` for the kernels, with the kernels' policy for a tuple out of
/// range.
fn kernel_indices(indices: &CubeTensor, out_of_bounds: OutOfBounds) -> ScatterNdIndices {
    ScatterNdIndices {
        handle: indices.handle.clone(),
        elem: dtype_to_elem_type(indices.dtype),
        out_of_range: match out_of_bounds {
            OutOfBounds::Clamp => KernelOutOfRange::Clamp,
            OutOfBounds::Skip | OutOfBounds::Error => KernelOutOfRange::Skip,
        },
    }
}

fn gather_nd(
    input: CubeTensor,
    indices: CubeTensor,
    out_of_bounds: OutOfBounds,
    shape: Shape,
    input_dims: usize,
) -> CubeTensor {
    let input = contiguous_bits(input, "GatherND");
    let indices = contiguous_bits(indices, "GatherND");
    let output = empty_output(&input, shape, input.dtype);
    let input_shape = input.shape();
    launch_gather_nd(
        &input.client,
        input.handle.clone(),
        output.handle.clone(),
        dtype_to_elem_type(input.dtype),
        &kernel_indices(&indices, out_of_bounds),
        scatter_layout(&input_shape, &indices.shape(), input_dims),
    )
    .unwrap_or_else(|err| launch_failed("GatherND", &input.device, err));
    output
}
