//! The backend extension trait: one method per operator and tensor kind.

// Burn marks its NdArray backend deprecated (in favour of Flex); projects that still use it get
// the reference bodies through the `ndarray` feature.
#![cfg_attr(feature = "ndarray", allow(deprecated))]

use burn::backend::{
    Backend, TensorMetadata, backend_extension,
    tensor::{BoolTensor, FloatTensor, IntTensor},
};
use burn::tensor::{IntDType, Shape, Slice, TensorData, read_sync};

use crate::reference;

use crate::nms_rules::BoxFormat;
use crate::scatter_nd_rules::{OutOfBounds, Reduction};
use crate::sort_rules::Order;

/// The crate's operators at the backend level, over Burn's tensor primitives.
///
/// The default bodies are the plain-Rust reference implementation: they read the tensor back to
/// the host, compute there and upload the result. `Flex` and `NdArray` use them as they are;
/// `CubeBackend` overrides every method with a CubeCL kernel, `Fusion<B>` records each call
/// lazily with its output dtype and shape, and `Autodiff<B, C>` runs the inner backend's method
/// and records ScatterND's backward pass.
///
/// Model code does not call this trait: it uses the tensor extension traits of the
/// [`prelude`](crate::prelude), which validate their arguments first. The methods here assume
/// valid arguments (for example a dtype the device can hold).
#[backend_extension(
    Fusion: cfg(all(feature = "fusion", feature = "cube")),
    Flex: cfg(feature = "flex"),
    NdArray: cfg(feature = "ndarray"),
    Cube: cfg(feature = "cube"),
    Autodiff: cfg(feature = "autodiff"),
)]
pub trait DmlOps: Backend {
    /// Population count of each element of an Int tensor (two's-complement bits of its stored
    /// width), as an Int tensor of the same shape in `out_dtype`.
    #[fusion(dtype = (*out_dtype).into(), shape = input)]
    fn int_bit_count(input: IntTensor<Self>, out_dtype: IntDType) -> IntTensor<Self> {
        let device = input.device();
        let data = read_sync(Self::int_into_data(input)).expect("BitCount: reading the input");
        Self::int_from_data(reference::bit_count(&data, out_dtype), &device)
    }

    /// Population count of each element of a Float tensor (raw IEEE bits of its stored dtype),
    /// as an Int tensor of the same shape in `out_dtype`.
    #[fusion(dtype = (*out_dtype).into(), shape = input)]
    fn float_bit_count(input: FloatTensor<Self>, out_dtype: IntDType) -> IntTensor<Self> {
        let device = input.device();
        let data = read_sync(Self::float_into_data(input)).expect("BitCount: reading the input");
        Self::int_from_data(reference::bit_count(&data, out_dtype), &device)
    }

    /// Coordinates of the non-zero elements of a Float tensor (`v != 0.0`: `-0.0` is zero, NaN
    /// and infinities are not), as `(count, coordinates)`: `count` has shape `[1]`,
    /// `coordinates` shape `[numel, width]` holding the coordinates of the last `width`
    /// dimensions in ascending element order. Padding rows are `fill` when given, unspecified
    /// otherwise.
    #[fusion(meta = nonzero_metadata)]
    fn float_nonzero_coordinates(
        input: FloatTensor<Self>,
        width: usize,
        fill: Option<i64>,
        out_dtype: IntDType,
    ) -> (IntTensor<Self>, IntTensor<Self>) {
        let device = input.device();
        let data = read_sync(Self::float_into_data(input)).expect("NonZeroCoordinates: reading");
        nonzero_on_host::<Self>(&data, &device, width, fill, out_dtype)
    }

    /// [`float_nonzero_coordinates`](Self::float_nonzero_coordinates) for Int tensors (`v != 0`).
    #[fusion(meta = nonzero_metadata)]
    fn int_nonzero_coordinates(
        input: IntTensor<Self>,
        width: usize,
        fill: Option<i64>,
        out_dtype: IntDType,
    ) -> (IntTensor<Self>, IntTensor<Self>) {
        let device = input.device();
        let data = read_sync(Self::int_into_data(input)).expect("NonZeroCoordinates: reading");
        nonzero_on_host::<Self>(&data, &device, width, fill, out_dtype)
    }

    /// [`float_nonzero_coordinates`](Self::float_nonzero_coordinates) for Bool tensors
    /// (`v == true`).
    #[fusion(meta = nonzero_metadata)]
    fn bool_nonzero_coordinates(
        input: BoolTensor<Self>,
        width: usize,
        fill: Option<i64>,
        out_dtype: IntDType,
    ) -> (IntTensor<Self>, IntTensor<Self>) {
        let device = input.device();
        let data = read_sync(Self::bool_into_data(input)).expect("NonZeroCoordinates: reading");
        nonzero_on_host::<Self>(&data, &device, width, fill, out_dtype)
    }

    /// Compress of a Float tensor along `axis` by a Bool `condition` of at most the axis's
    /// size, as `(count, values)`: `values` has the input's shape with `axis` cut to the
    /// condition's length and holds the slices whose condition is true, in ascending order, then
    /// zeros; `count` (shape `[1]`, `count_dtype`) is their number. With `axis` `None` the
    /// condition is a mask of the input's shape and `values` (shape `[numel]`) holds the
    /// elements where it is true, in row-major order: the input is never reshaped, so a view of
    /// any layout is read where it lies.
    #[fusion(meta = compress_metadata)]
    fn float_compress(
        input: FloatTensor<Self>,
        condition: BoolTensor<Self>,
        axis: Option<usize>,
        count_dtype: IntDType,
    ) -> (IntTensor<Self>, FloatTensor<Self>) {
        let device = input.device();
        let data = read_sync(Self::float_into_data(input)).expect("Compress: reading the input");
        let (count, values) = compress_on_host::<Self>(&data, condition, axis, count_dtype);
        (count, Self::float_from_data(values, &device))
    }

    /// [`float_compress`](Self::float_compress) for Int tensors.
    #[fusion(meta = compress_metadata)]
    fn int_compress(
        input: IntTensor<Self>,
        condition: BoolTensor<Self>,
        axis: Option<usize>,
        count_dtype: IntDType,
    ) -> (IntTensor<Self>, IntTensor<Self>) {
        let device = input.device();
        let data = read_sync(Self::int_into_data(input)).expect("Compress: reading the input");
        let (count, values) = compress_on_host::<Self>(&data, condition, axis, count_dtype);
        (count, Self::int_from_data(values, &device))
    }

    /// [`float_compress`](Self::float_compress) for Bool tensors (padding is false).
    #[fusion(meta = compress_metadata)]
    fn bool_compress(
        input: BoolTensor<Self>,
        condition: BoolTensor<Self>,
        axis: Option<usize>,
        count_dtype: IntDType,
    ) -> (IntTensor<Self>, BoolTensor<Self>) {
        let device = input.device();
        let data = read_sync(Self::bool_into_data(input)).expect("Compress: reading the input");
        let (count, values) = compress_on_host::<Self>(&data, condition, axis, count_dtype);
        (count, Self::bool_from_data(values, &device))
    }

    /// The first `count` slices along `axis` of a Float tensor (`count` at most that
    /// dimension): the exact forms of Compress and NonZeroCoordinates. The kernels copy raw
    /// bits, so every dtype works on every runtime, those it cannot compute with included (a
    /// slice through Burn would run a kernel of the element's type).
    #[fusion(meta = leading_slices_metadata)]
    fn float_leading_slices(
        tensor: FloatTensor<Self>,
        axis: usize,
        count: usize,
    ) -> FloatTensor<Self> {
        let slices = leading_slices(&tensor.shape(), axis, count);
        Self::float_slice(tensor, &slices)
    }

    /// [`float_leading_slices`](Self::float_leading_slices) for Int tensors.
    #[fusion(meta = leading_slices_metadata)]
    fn int_leading_slices(tensor: IntTensor<Self>, axis: usize, count: usize) -> IntTensor<Self> {
        let slices = leading_slices(&tensor.shape(), axis, count);
        Self::int_slice(tensor, &slices)
    }

    /// [`float_leading_slices`](Self::float_leading_slices) for Bool tensors.
    #[fusion(meta = leading_slices_metadata)]
    fn bool_leading_slices(
        tensor: BoolTensor<Self>,
        axis: usize,
        count: usize,
    ) -> BoolTensor<Self> {
        let slices = leading_slices(&tensor.shape(), axis, count);
        Self::bool_slice(tensor, &slices)
    }

    /// TopK of a Float tensor (DirectML's `TOP_K1`): along `axis`, the first `k` elements of
    /// each sequence in `order` (`k` at most the axis's length), ties by increasing index, and
    /// their positions along the axis in `indices_dtype` (which holds every position). Floats
    /// follow a total order (`-0.0 == +0.0`, NaN equal to NaN and above `+inf`); the values are
    /// the input's elements bit for bit. Both outputs have the input's shape with `k` along
    /// `axis`; a stable sort is `k` equal to the axis's length.
    #[fusion(meta = top_k_metadata)]
    fn float_top_k(
        input: FloatTensor<Self>,
        axis: usize,
        k: usize,
        order: Order,
        indices_dtype: IntDType,
    ) -> (FloatTensor<Self>, IntTensor<Self>) {
        let device = input.device();
        let data = read_sync(Self::float_into_data(input)).expect("TopK: reading the input");
        let (values, indices) = reference::top_k(&data, axis, k, order, indices_dtype);
        (
            Self::float_from_data(values, &device),
            Self::int_from_data(indices, &device),
        )
    }

    /// [`float_top_k`](Self::float_top_k) for Int tensors (numeric order in the dtype's own
    /// signedness).
    #[fusion(meta = top_k_metadata)]
    fn int_top_k(
        input: IntTensor<Self>,
        axis: usize,
        k: usize,
        order: Order,
        indices_dtype: IntDType,
    ) -> (IntTensor<Self>, IntTensor<Self>) {
        let device = input.device();
        let data = read_sync(Self::int_into_data(input)).expect("TopK: reading the input");
        let (values, indices) = reference::top_k(&data, axis, k, order, indices_dtype);
        (
            Self::int_from_data(values, &device),
            Self::int_from_data(indices, &device),
        )
    }

    /// One token per row of `f32` `logits` `[batch, vocab]`, as `(tokens, logprobs)`, `[batch]`
    /// `i32` and `f32`: each row's temperature, top-k, top-p and min-p (`f32`, `i32`, `f32`,
    /// `f32`, `[batch]`) and seed (`i32` `[batch, 2]`: low word, high word) with `step` decide
    /// it, as the [`SampleExt`](crate::SampleExt) docs say. A token is -1 where its row has
    /// nothing drawable.
    #[fusion(meta = sample_metadata)]
    fn float_sample(
        logits: FloatTensor<Self>,
        temperature: FloatTensor<Self>,
        top_k: IntTensor<Self>,
        top_p: FloatTensor<Self>,
        min_p: FloatTensor<Self>,
        seeds: IntTensor<Self>,
        step: u64,
    ) -> (IntTensor<Self>, FloatTensor<Self>) {
        let device = logits.device();
        let read_float = |t| read_sync(Self::float_into_data(t)).expect("Sample: reading");
        let read_int = |t| read_sync(Self::int_into_data(t)).expect("Sample: reading");
        let logits = read_float(logits);
        let floats = |t| {
            read_float(t)
                .convert::<f32>()
                .try_into_vec::<f32>()
                .expect("f32")
        };
        let ints = |t| {
            read_int(t)
                .convert::<i32>()
                .try_into_vec::<i32>()
                .expect("i32")
        };
        let (temperature, top_p, min_p) = (floats(temperature), floats(top_p), floats(min_p));
        let (top_k, seeds) = (ints(top_k), ints(seeds));
        let options: Vec<reference::RowOptions> = (0..temperature.len())
            .map(|row| reference::RowOptions {
                temperature: temperature[row],
                top_k: top_k[row] as u32,
                top_p: top_p[row],
                min_p: min_p[row],
                seed: u64::from(seeds[2 * row] as u32) | u64::from(seeds[2 * row + 1] as u32) << 32,
            })
            .collect();
        let (tokens, logprobs) = reference::sample(&logits, &options, step);
        (
            Self::int_from_data(tokens, &device),
            Self::float_from_data(logprobs, &device),
        )
    }

    /// ONNX NonMaxSuppression of `f32` `boxes` `[B, N, 4]` and `scores` `[B, C, N]`, as
    /// `(count, selected)`: for each (batch, class), the boxes whose score is strictly above
    /// `score_threshold` (every non-NaN one when `None`) in decreasing score, ties by lower box
    /// index, each kept unless a kept box of that pair has IoU strictly greater than
    /// `iou_threshold` with it, at most `max_per_class`. `selected` has shape
    /// `[B * C * min(N, max_per_class), 3]`: rows `(batch, class, box)` by batch, class and
    /// keeping order, then rows of -1; `count` (`[1]`) their number. Both are in
    /// `indices_dtype`, a signed type that holds the row count and every index.
    #[fusion(meta = nms_metadata)]
    fn float_non_max_suppression(
        boxes: FloatTensor<Self>,
        scores: FloatTensor<Self>,
        iou_threshold: f32,
        score_threshold: Option<f32>,
        max_per_class: usize,
        box_format: BoxFormat,
        indices_dtype: IntDType,
    ) -> (IntTensor<Self>, IntTensor<Self>) {
        let device = boxes.device();
        let boxes = read_sync(Self::float_into_data(boxes)).expect("NMS: reading the boxes");
        let scores = read_sync(Self::float_into_data(scores)).expect("NMS: reading the scores");
        let (count, selected) = reference::non_max_suppression(
            &boxes,
            &scores,
            (iou_threshold, score_threshold, max_per_class),
            box_format,
            indices_dtype,
        );
        (
            Self::int_from_data(count, &device),
            Self::int_from_data(selected, &device),
        )
    }

    /// Index tuples built on the device, in `indices`' dtype: a `[rows, width]` tensor, `rows`
    /// the product of `positions`, whose column `c` of row `r` is element `r * copy_len + c -
    /// copy_start` of `indices` (read flat) for `copy_start <= c < copy_start + copy_len`, else
    /// coordinate `c` of position `r` in `positions`. ONNX's ScatterElements and batched
    /// GatherND turn into ScatterND and GatherND of these; built as raw bits, they need no
    /// arithmetic of the indices' dtype (int64 on OpenGL).
    #[fusion(meta = index_tuples_metadata)]
    fn int_index_tuples(
        indices: IntTensor<Self>,
        positions: Shape,
        width: usize,
        copy_start: usize,
        copy_len: usize,
    ) -> IntTensor<Self> {
        let device = indices.device();
        let data = read_sync(Self::int_into_data(indices)).expect("index tuples: reading");
        let tuples = reference::index_tuples(&data, &positions, width, copy_start, copy_len);
        Self::int_from_data(tuples, &device)
    }

    /// ScatterND on a Float tensor: a copy of `input` (in place when its buffer is not shared)
    /// with the rows of `updates` combined, by `reduction`, into the slices that the index
    /// tuples of `indices` (`[..., k]`, `1 <= k <= input_dims`) address in the first `k` of the
    /// input's last `input_dims` dimensions (DirectML's `InputDimensionCount`; the leading
    /// others have size 1 and are skipped, never reshaped away). `updates` has
    /// `indices.numel() / k` rows of the slice's size, in row order.
    /// Negative indices count from the end once; tuples still out of range are clamped with
    /// [`OutOfBounds::Clamp`] and dropped otherwise (`Error` is checked before a backend runs).
    /// With `deterministic` the result is a function of the operands alone, Flex's bits on every
    /// backend (see [`ScatterNdOptions::deterministic`](crate::ScatterNdOptions::deterministic)).
    #[fusion(dtype = input, shape = input)]
    fn float_scatter_nd(
        input: FloatTensor<Self>,
        indices: IntTensor<Self>,
        updates: FloatTensor<Self>,
        reduction: Reduction,
        out_of_bounds: OutOfBounds,
        input_dims: usize,
        deterministic: bool,
    ) -> FloatTensor<Self> {
        let device = input.device();
        let input = read_sync(Self::float_into_data(input)).expect("ScatterND: reading input");
        let updates = read_sync(Self::float_into_data(updates)).expect("ScatterND: reading");
        let indices = read_sync(Self::int_into_data(indices)).expect("ScatterND: reading");
        let output = reference::scatter_nd(
            &input,
            &indices,
            &updates,
            reduction,
            out_of_bounds,
            input_dims,
            deterministic,
        );
        Self::float_from_data(output, &device)
    }

    /// ScatterND's adjoint for the updates (what its backward pass needs): the slices of `input`
    /// that the index tuples of `indices` address (in its last `input_dims` dimensions),
    /// resolved exactly as [`float_scatter_nd`](Self::float_scatter_nd) resolves them with
    /// `out_of_bounds`, row after row in a tensor of `shape` (as many rows of the slice's size,
    /// usually the updates' shape). A skipped tuple's row is zeros. Unlike Burn's
    /// `float_gather_nd`, no index reads outside `input`.
    #[fusion(dtype = input, shape = shape.clone())]
    fn float_gather_nd_slices(
        input: FloatTensor<Self>,
        indices: IntTensor<Self>,
        out_of_bounds: OutOfBounds,
        shape: Shape,
        input_dims: usize,
    ) -> FloatTensor<Self> {
        let device = input.device();
        let input = read_sync(Self::float_into_data(input)).expect("ScatterND: reading input");
        let indices = read_sync(Self::int_into_data(indices)).expect("ScatterND: reading");
        let output = reference::gather_nd(&input, &indices, out_of_bounds, &shape, input_dims);
        Self::float_from_data(output, &device)
    }

    /// [`float_gather_nd_slices`](Self::float_gather_nd_slices) for Int tensors: ONNX's
    /// `GatherND` on Int data, checked like the Float form.
    #[fusion(dtype = input, shape = shape.clone())]
    fn int_gather_nd_slices(
        input: IntTensor<Self>,
        indices: IntTensor<Self>,
        out_of_bounds: OutOfBounds,
        shape: Shape,
        input_dims: usize,
    ) -> IntTensor<Self> {
        let device = input.device();
        let input = read_sync(Self::int_into_data(input)).expect("GatherND: reading input");
        let indices = read_sync(Self::int_into_data(indices)).expect("GatherND: reading");
        let output = reference::gather_nd(&input, &indices, out_of_bounds, &shape, input_dims);
        Self::int_from_data(output, &device)
    }

    /// [`float_gather_nd_slices`](Self::float_gather_nd_slices) for Bool tensors (a skipped
    /// tuple's row is false).
    #[fusion(dtype = input, shape = shape.clone())]
    fn bool_gather_nd_slices(
        input: BoolTensor<Self>,
        indices: IntTensor<Self>,
        out_of_bounds: OutOfBounds,
        shape: Shape,
        input_dims: usize,
    ) -> BoolTensor<Self> {
        let device = input.device();
        let input = read_sync(Self::bool_into_data(input)).expect("GatherND: reading input");
        let indices = read_sync(Self::int_into_data(indices)).expect("GatherND: reading");
        let output = reference::gather_nd(&input, &indices, out_of_bounds, &shape, input_dims);
        Self::bool_from_data(output, &device)
    }

    /// [`float_scatter_nd`](Self::float_scatter_nd) for Int tensors.
    #[fusion(dtype = input, shape = input)]
    fn int_scatter_nd(
        input: IntTensor<Self>,
        indices: IntTensor<Self>,
        updates: IntTensor<Self>,
        reduction: Reduction,
        out_of_bounds: OutOfBounds,
        input_dims: usize,
        deterministic: bool,
    ) -> IntTensor<Self> {
        let device = input.device();
        let input = read_sync(Self::int_into_data(input)).expect("ScatterND: reading input");
        let updates = read_sync(Self::int_into_data(updates)).expect("ScatterND: reading");
        let indices = read_sync(Self::int_into_data(indices)).expect("ScatterND: reading");
        let output = reference::scatter_nd(
            &input,
            &indices,
            &updates,
            reduction,
            out_of_bounds,
            input_dims,
            deterministic,
        );
        Self::int_from_data(output, &device)
    }

    /// [`float_scatter_nd`](Self::float_scatter_nd) for Bool tensors (`Reduction::Assign`
    /// only).
    #[fusion(dtype = input, shape = input)]
    fn bool_scatter_nd(
        input: BoolTensor<Self>,
        indices: IntTensor<Self>,
        updates: BoolTensor<Self>,
        reduction: Reduction,
        out_of_bounds: OutOfBounds,
        input_dims: usize,
        deterministic: bool,
    ) -> BoolTensor<Self> {
        let device = input.device();
        let input = read_sync(Self::bool_into_data(input)).expect("ScatterND: reading input");
        let updates = read_sync(Self::bool_into_data(updates)).expect("ScatterND: reading");
        let indices = read_sync(Self::int_into_data(indices)).expect("ScatterND: reading");
        let output = reference::scatter_nd(
            &input,
            &indices,
            &updates,
            reduction,
            out_of_bounds,
            input_dims,
            deterministic,
        );
        Self::bool_from_data(output, &device)
    }
}

/// The NonZeroCoordinates reference on host data, its two outputs uploaded to `device`.
fn nonzero_on_host<B: Backend>(
    data: &TensorData,
    device: &B::Device,
    width: usize,
    fill: Option<i64>,
    out_dtype: IntDType,
) -> (IntTensor<B>, IntTensor<B>) {
    let (count, coordinates) = reference::nonzero_coordinates(data, width, fill, out_dtype);
    (
        B::int_from_data(count, device),
        B::int_from_data(coordinates, device),
    )
}

/// The Compress reference on host data: the count uploaded to the input's device, the values
/// left on the host for the caller to upload as their kind.
fn compress_on_host<B: Backend>(
    data: &TensorData,
    condition: BoolTensor<B>,
    axis: Option<usize>,
    count_dtype: IntDType,
) -> (IntTensor<B>, TensorData) {
    let device = condition.device();
    let condition = read_sync(B::bool_into_data(condition)).expect("Compress: reading");
    let (count, values) = reference::compress(data, axis, &condition, count_dtype);
    (B::int_from_data(count, &device), values)
}

/// Output metadata of the Compress methods: `[1]` in `count_dtype`, and the input's shape and
/// dtype with `axis` cut to the condition's length (`[numel]` for a mask, `axis` `None`).
#[cfg(all(feature = "fusion", feature = "cube"))]
fn compress_metadata(
    input: &burn::backend::fusion::custom::TensorSpec,
    condition: &burn::backend::fusion::custom::TensorSpec,
    axis: &Option<usize>,
    count_dtype: &IntDType,
) -> (
    burn::backend::fusion::custom::TensorSpec,
    burn::backend::fusion::custom::TensorSpec,
) {
    use burn::backend::fusion::custom::TensorSpec;
    let shape = match *axis {
        Some(axis) => {
            let mut shape = input.shape.clone();
            shape[axis] = condition.shape.num_elements();
            shape
        }
        None => [input.shape.num_elements()].into(),
    };
    (
        TensorSpec::new([1].into(), (*count_dtype).into()),
        TensorSpec::new(shape, input.dtype),
    )
}

/// Output metadata of [`DmlOps::int_index_tuples`]: `[rows, width]` in the indices' dtype.
#[cfg(all(feature = "fusion", feature = "cube"))]
fn index_tuples_metadata(
    indices: &burn::backend::fusion::custom::TensorSpec,
    positions: &Shape,
    width: &usize,
    _copy_start: &usize,
    _copy_len: &usize,
) -> burn::backend::fusion::custom::TensorSpec {
    let shape = Shape::new([positions.num_elements(), *width]);
    burn::backend::fusion::custom::TensorSpec::new(shape, indices.dtype)
}

/// Output metadata of the TopK methods: the input's shape with `k` along `axis`, in the
/// input's dtype and in `indices_dtype`.
#[cfg(all(feature = "fusion", feature = "cube"))]
fn top_k_metadata(
    input: &burn::backend::fusion::custom::TensorSpec,
    axis: &usize,
    k: &usize,
    _order: &Order,
    indices_dtype: &IntDType,
) -> (
    burn::backend::fusion::custom::TensorSpec,
    burn::backend::fusion::custom::TensorSpec,
) {
    use burn::backend::fusion::custom::TensorSpec;
    let mut shape = input.shape.clone();
    shape[*axis] = *k;
    (
        TensorSpec::new(shape.clone(), input.dtype),
        TensorSpec::new(shape, (*indices_dtype).into()),
    )
}

/// Output metadata of [`DmlOps::float_sample`]: `[batch]` tokens in `i32` and `[batch]`
/// log-probabilities in `f32`.
#[cfg(all(feature = "fusion", feature = "cube"))]
fn sample_metadata(
    logits: &burn::backend::fusion::custom::TensorSpec,
    _temperature: &burn::backend::fusion::custom::TensorSpec,
    _top_k: &burn::backend::fusion::custom::TensorSpec,
    _top_p: &burn::backend::fusion::custom::TensorSpec,
    _min_p: &burn::backend::fusion::custom::TensorSpec,
    _seeds: &burn::backend::fusion::custom::TensorSpec,
    _step: &u64,
) -> (
    burn::backend::fusion::custom::TensorSpec,
    burn::backend::fusion::custom::TensorSpec,
) {
    use burn::backend::fusion::custom::TensorSpec;
    let batch = Shape::new([logits.shape[0]]);
    (
        TensorSpec::new(batch.clone(), burn::tensor::DType::I32),
        TensorSpec::new(batch, burn::tensor::DType::F32),
    )
}

/// Output metadata of [`DmlOps::float_non_max_suppression`]: `[1]` and
/// `[B * C * min(N, max_per_class), 3]` in `indices_dtype`, known without running anything.
#[cfg(all(feature = "fusion", feature = "cube"))]
fn nms_metadata(
    boxes: &burn::backend::fusion::custom::TensorSpec,
    scores: &burn::backend::fusion::custom::TensorSpec,
    _iou_threshold: &f32,
    _score_threshold: &Option<f32>,
    max_per_class: &usize,
    _box_format: &BoxFormat,
    indices_dtype: &IntDType,
) -> (
    burn::backend::fusion::custom::TensorSpec,
    burn::backend::fusion::custom::TensorSpec,
) {
    use burn::backend::fusion::custom::TensorSpec;
    let [batches, n] = [boxes.shape[0], boxes.shape[1]];
    let rows = batches * scores.shape[1] * n.min(*max_per_class);
    let dtype = (*indices_dtype).into();
    (
        TensorSpec::new([1].into(), dtype),
        TensorSpec::new([rows, 3].into(), dtype),
    )
}

/// Every index of `shape` but the first `count` along `axis`: what the leading-slices methods
/// keep.
pub(crate) fn leading_slices(shape: &Shape, axis: usize, count: usize) -> Vec<Slice> {
    shape
        .iter()
        .enumerate()
        .map(|(d, &size)| Slice::from(0..if d == axis { count } else { size }))
        .collect()
}

/// Output metadata of the leading-slices methods: the input's shape with `axis` cut to
/// `count`, and its dtype.
#[cfg(all(feature = "fusion", feature = "cube"))]
fn leading_slices_metadata(
    tensor: &burn::backend::fusion::custom::TensorSpec,
    axis: &usize,
    count: &usize,
) -> burn::backend::fusion::custom::TensorSpec {
    let mut shape = tensor.shape.clone();
    shape[*axis] = *count;
    burn::backend::fusion::custom::TensorSpec::new(shape, tensor.dtype)
}

/// Output metadata of the NonZeroCoordinates methods: fixed DirectML shapes, `[1]` and
/// `[numel, width]`, known without running anything.
#[cfg(all(feature = "fusion", feature = "cube"))]
fn nonzero_metadata(
    input: &burn::backend::fusion::custom::TensorSpec,
    width: &usize,
    _fill: &Option<i64>,
    out_dtype: &IntDType,
) -> (
    burn::backend::fusion::custom::TensorSpec,
    burn::backend::fusion::custom::TensorSpec,
) {
    use burn::backend::fusion::custom::TensorSpec;
    let dtype = (*out_dtype).into();
    (
        TensorSpec::new([1].into(), dtype),
        TensorSpec::new([input.shape.num_elements(), *width].into(), dtype),
    )
}
