//! ONNX's `ScatterND`, `ScatterElements`, `GatherND`, `NonZero`, `Compress`, `TopK` and
//! `NonMaxSuppression` on this crate's kernels, with ONNX's semantics: what models imported with
//! the `burn-dml-ops-onnx` build helper call. Model code can call them too.
//!
//! `Multinomial` draws with [`SampleExt`]'s counter-based randomness, so it
//! matches ONNX Runtime in distribution only (see [`multinomial`]).
//!
//! Each function panics, with the [`DmlOpsError`](crate::DmlOpsError)'s message and the
//! operator's name, where ONNX Runtime returns an error for a shape or dtype (a generated
//! `forward` has no error channel). Index values never do: an index tuple out of range after
//! negative indices wrap is dropped ([`OutOfBounds::Skip`], the default of the build helper;
//! ONNX Runtime returns an error instead), clamped, or an error, as the options say; a skipped
//! `GatherND` row is zeros. Nothing reads back to the host except `NonZero` and `Compress`,
//! whose output sizes depend on the data (they read a 4-byte count once), `NonMaxSuppression`
//! (the same), and [`top_k_count`], [`int_scalar`] and [`float_scalar`], which read a scalar
//! input the model computes at run time.
//!
//! ```
//! use burn::tensor::{Device, Int, Tensor};
//! use burn_dml_ops::onnx;
//! use burn_dml_ops::prelude::*;
//!
//! let device = Device::flex();
//! let data = Tensor::<2>::from_data([[1.0, 2.0], [3.0, 4.0]], &device);
//! let mask = data.clone().greater_elem(1.5);
//! // torch's `data[mask]` as exported: NonZero -> Transpose -> GatherND.
//! let coordinates = onnx::non_zero(mask, burn::tensor::IntDType::I64).transpose();
//! let picked: Tensor<1> = onnx::gather_nd(data, coordinates, 0, OutOfBounds::Skip);
//! assert_eq!(picked.to_data().try_to_vec::<f32>().unwrap(), vec![2.0, 3.0, 4.0]);
//! ```

use burn::backend::Dispatch;
use burn::tensor::kind::{Basic, Kind};
use burn::tensor::{Bool, DType, FloatDType, Int, IntDType, Shape, Tensor, TensorData};

use crate::tensor::support::can_compute;
use crate::{
    BoxFormat, CompressExt, Compressed, DmlOps, NmsExt, NmsOptions, NonZeroExt, NonZeroOptions,
    Order, OutOfBounds, RowSampling, SampleExt, ScatterNdExt, ScatterNdOptions, SortExt,
    SortOptions,
};

/// ONNX `ScatterND` (opsets 11 to 18): [`ScatterNdExt::try_scatter_nd`] with `options`, whose
/// reduction is the node's (`none` is [`Reduction::Assign`](crate::Reduction::Assign)).
///
/// # Panics
///
/// Where `try_scatter_nd` returns an error, with its message.
pub fn scatter_nd<const D: usize, const DI: usize, const DU: usize, K: Basic>(
    data: Tensor<D, K>,
    indices: Tensor<DI, Int>,
    updates: Tensor<DU, K>,
    options: ScatterNdOptions,
) -> Tensor<D, K>
where
    Tensor<D, K>: ScatterNdExt<D, K>,
{
    data.try_scatter_nd(indices, updates, options)
        .unwrap_or_else(|err| panic!("ONNX ScatterND: {err}"))
}

/// ONNX `ScatterElements` (and the deprecated `Scatter`) along `axis`: element `p` of `updates`
/// goes to `p` with coordinate `axis` replaced by `indices[p]`. It runs as a ScatterND whose
/// index tuples the device builds from `indices` and the coordinates of each position (as raw
/// bits, so int64 indices run on OpenGL too), so duplicates reduce exactly as in
/// [`scatter_nd`].
///
/// # Panics
///
/// Where `indices` and `updates` differ in shape, `axis` is not below the rank, an index
/// dimension other than `axis` is larger than the data's (ONNX Runtime's rule), or where
/// [`scatter_nd`] would.
pub fn scatter_elements<const D: usize, K: Basic>(
    data: Tensor<D, K>,
    indices: Tensor<D, Int>,
    updates: Tensor<D, K>,
    axis: usize,
    options: ScatterNdOptions,
) -> Tensor<D, K>
where
    Tensor<D, K>: ScatterNdExt<D, K>,
{
    let (data_dims, index_dims) = (data.dims(), indices.dims());
    let fail = |detail: String| -> ! {
        panic!(
            "ONNX ScatterElements: {detail} (data {data_dims:?}, indices {index_dims:?}, updates \
             {:?}, axis {axis})",
            updates.dims()
        )
    };
    if updates.dims() != index_dims {
        fail("indices and updates must have the same shape".into());
    }
    if axis >= D {
        fail(format!("axis must be below the rank {D}"));
    }
    if let Some(dim) = (0..D).find(|&d| d != axis && index_dims[d] > data_dims[d]) {
        fail(format!(
            "indices dimension {dim} is larger than the data's; only the axis may differ freely"
        ));
    }
    let rows = index_dims.iter().product::<usize>();
    let tuples = element_tuples(indices, axis);
    scatter_nd(data, tuples, updates.reshape([rows]), options)
}

/// The index tuples of ScatterElements as a `[numel, D]` tensor in the indices' dtype: row `p`
/// is the coordinates of position `p` of `indices`, with coordinate `axis` replaced by its value.
/// Built on the device as raw bits, so int64 indices need no 64-bit arithmetic (OpenGL).
fn element_tuples<const D: usize>(indices: Tensor<D, Int>, axis: usize) -> Tensor<2, Int> {
    let positions = Shape::from(indices.dims());
    let tuples =
        <Dispatch as DmlOps>::int_index_tuples(indices.into_dispatch(), positions, D, axis, 1);
    Tensor::from_dispatch(tuples)
}

/// ONNX `GatherND` with `batch_dims`: for each index tuple of `indices` (`[..., k]`) the slice of
/// `data` it addresses, in the batch of its leading `batch_dims` coordinates. The output has
/// shape `indices.shape[..DI - 1] ++ data.shape[batch_dims + k..]` (`DO` its rank). Unlike
/// Burn's `gather_nd`, no index reads outside `data`: negative indices wrap once, and a tuple
/// still out of range is dropped (a zero row) or clamped as `out_of_bounds` says
/// ([`OutOfBounds::Error`] reads the indices back and panics naming the tuple).
///
/// # Panics
///
/// Where `k` is 0 or `batch_dims + k` exceeds the data's rank, the batch dimensions of `data`
/// and `indices` differ, or `DO` is not the output's rank.
pub fn gather_nd<const D: usize, const DI: usize, const DO: usize, K: Basic>(
    data: Tensor<D, K>,
    indices: Tensor<DI, Int>,
    batch_dims: usize,
    out_of_bounds: OutOfBounds,
) -> Tensor<DO, K> {
    let (data_dims, index_dims) = (data.dims(), indices.dims());
    let fail = |detail: &str| -> ! {
        panic!(
            "ONNX GatherND: {detail} (data {data_dims:?}, indices {index_dims:?}, batch_dims \
             {batch_dims})"
        )
    };
    let k = index_dims[DI - 1];
    if k == 0 || batch_dims + k > D || batch_dims >= DI {
        fail(
            "the index tuples' size k (the indices' last dimension) must be at least 1, and batch_dims + k at most the data's rank, with batch_dims below the indices' rank",
        );
    }
    if data_dims[..batch_dims] != index_dims[..batch_dims] {
        fail("the first batch_dims dimensions of data and indices must be equal");
    }
    let output: Vec<usize> = index_dims[..DI - 1]
        .iter()
        .chain(&data_dims[batch_dims + k..])
        .copied()
        .collect();
    if output.len() != DO {
        fail(&format!("the output has shape {output:?}, not rank {DO}"));
    }
    let tuples = if batch_dims == 0 {
        indices
    } else {
        batch_tuples(indices, batch_dims)
    };
    if out_of_bounds == OutOfBounds::Error {
        check_gather_in_range(&tuples, &data_dims);
    }
    let (data, tuples, shape) = (
        data.into_dispatch(),
        tuples.into_dispatch(),
        Shape::from(output),
    );
    let gathered = match K::KIND {
        Kind::Float => {
            <Dispatch as DmlOps>::float_gather_nd_slices(data, tuples, out_of_bounds, shape, D)
        }
        Kind::Int => {
            <Dispatch as DmlOps>::int_gather_nd_slices(data, tuples, out_of_bounds, shape, D)
        }
        Kind::Bool => {
            <Dispatch as DmlOps>::bool_gather_nd_slices(data, tuples, out_of_bounds, shape, D)
        }
    };
    Tensor::from_dispatch(gathered)
}

/// The tuples of a batched GatherND as `[rows, batch_dims + k]`: each row's batch coordinates
/// (its position in the indices' first `batch_dims` dimensions), then its own `k`. Built on the
/// device as raw bits, as [`element_tuples`].
fn batch_tuples<const DI: usize>(indices: Tensor<DI, Int>, batch_dims: usize) -> Tensor<DI, Int> {
    let dims = indices.dims();
    let k = dims[DI - 1];
    let positions = Shape::from(dims[..DI - 1].to_vec());
    let tuples = <Dispatch as DmlOps>::int_index_tuples(
        indices.into_dispatch(),
        positions,
        batch_dims + k,
        batch_dims,
        k,
    );
    let mut tuple_dims = dims;
    tuple_dims[DI - 1] = batch_dims + k;
    Tensor::<2, Int>::from_dispatch(tuples).reshape(tuple_dims)
}

/// `OutOfBounds::Error` for GatherND: reads the tuples back once and panics naming the first
/// one out of range after negative indices wrap.
fn check_gather_in_range<const DI: usize>(tuples: &Tensor<DI, Int>, data_dims: &[usize]) {
    let data = crate::tensor::support::read_int_bits(tuples.clone());
    let values = crate::scatter_nd_rules::index_values(&data);
    let k = tuples.dims()[DI - 1];
    for (row, tuple) in values.chunks_exact(k).enumerate() {
        let resolved = tuple.iter().zip(data_dims).all(|(&value, &dim)| {
            crate::scatter_nd_rules::resolve_index(value, dim, false).is_some()
        });
        if !resolved {
            panic!(
                "ONNX GatherND: index tuple {tuple:?} (tuple {row}) is out of range for data of \
                 shape {data_dims:?}; use OutOfBounds::Skip or Clamp to drop or clamp such tuples"
            );
        }
    }
}

/// ONNX `NonZero`: the coordinates of the non-zero elements as `[rank, count]`, in row-major
/// order, in `dtype` where the device computes with it (ONNX says int64) and in the device's
/// default Int dtype where it does not (wgpu's OpenGL backend, which has no 64-bit integers).
/// Reads the 4-byte count back once to size the output; nothing else leaves the device.
pub fn non_zero<const D: usize, K: Basic>(input: Tensor<D, K>, dtype: IntDType) -> Tensor<2, Int>
where
    Tensor<D, K>: NonZeroExt,
{
    let device = input.device();
    let out_dtype = can_compute(&device, dtype.into()).then_some(dtype);
    let options = NonZeroOptions {
        out_dtype,
        ..Default::default()
    };
    input
        .nonzero_coordinates_with(options)
        .unwrap_or_else(|err| panic!("ONNX NonZero: {err}"))
        .into_exact()
        .transpose()
}

/// ONNX `Compress`: the slices along `axis` (negative counts from the end) whose `condition` is
/// true, or with `axis` `None` the elements of the flattened input; a condition shorter than
/// the axis drops the slices past its end. Reads the 4-byte count back once to size the output.
///
/// # Panics
///
/// Where the condition is longer than the axis, `axis` is out of range, or `DO` is not the
/// output's rank (`D` with an axis, 1 without).
pub fn compress<const D: usize, const DO: usize, K: Basic>(
    input: Tensor<D, K>,
    condition: Tensor<1, Bool>,
    axis: Option<isize>,
) -> Tensor<DO, K>
where
    Tensor<D, K>: CompressExt<D, K>,
    Tensor<1, K>: CompressExt<1, K>,
{
    let expected = if axis.is_some() { D } else { 1 };
    if DO != expected {
        panic!("ONNX Compress: the output has rank {expected}, not {DO}");
    }
    match axis {
        Some(axis) => exact(input.try_compress_axis(axis, condition)),
        None => {
            let numel = input.shape().num_elements();
            exact(input.reshape([numel]).try_compress_axis(0, condition))
        }
    }
}

/// The exact form of a Compress result as a tensor of the rank the importer typed (the same
/// shape: Compress keeps the rank, or is 1-D when flattened).
fn exact<const R: usize, const DO: usize, K: Basic>(
    kept: Result<Compressed<R, K>, crate::DmlOpsError>,
) -> Tensor<DO, K> {
    let kept = kept
        .unwrap_or_else(|err| panic!("ONNX Compress: {err}"))
        .into_exact();
    let shape = Shape::from(kept.dims().to_vec());
    kept.reshape(shape)
}

/// ONNX `TopK` (opsets 1, 10 and 11+): the `k` largest (`largest`) or smallest elements along
/// `axis` in that order, ties by increasing index, and their indices in `dtype` where the device
/// computes with it (the importer's int64), else in the device's default Int dtype (OpenGL has
/// no 64-bit integers). `sorted = 0` leaves the order to the implementation, and this order
/// satisfies it. Nothing reads back to the host.
///
/// # Panics
///
/// Where [`SortExt::try_top_k`] returns an error (`k` above the axis's length), with its
/// message.
pub fn top_k<const D: usize, K: Basic>(
    input: Tensor<D, K>,
    k: usize,
    axis: usize,
    largest: bool,
    dtype: IntDType,
) -> (Tensor<D, K>, Tensor<D, Int>)
where
    Tensor<D, K>: SortExt<D, K>,
{
    let device = input.device();
    let options = SortOptions {
        order: if largest {
            Order::Descending
        } else {
            Order::Ascending
        },
        indices_dtype: can_compute(&device, dtype.into()).then_some(dtype),
    };
    let sorted = input
        .try_top_k(k, axis as isize, options)
        .unwrap_or_else(|err| panic!("ONNX TopK: {err}"));
    (sorted.values, sorted.indices)
}

/// The `K` of an ONNX `TopK` that the model computes at run time (a one-element Int tensor):
/// read back to the host once, since the output's shape depends on it.
///
/// # Panics
///
/// Where the tensor does not hold exactly one element, or holds a negative value.
pub fn top_k_count<const D: usize>(k: Tensor<D, Int>) -> usize {
    let k = int_scalar(k);
    usize::try_from(k)
        .unwrap_or_else(|_| panic!("ONNX TopK: K = {k} is negative; K must be at least 0"))
}

/// ONNX `NonMaxSuppression` (opsets 10 and 11): [`NmsExt::non_max_suppression`] with ONNX's
/// inputs, as `[num_selected, 3]` rows `(batch, class, box)`, in `dtype` where the device
/// computes with it (ONNX says int64) and in the device's default Int dtype where it does not
/// (wgpu's OpenGL backend). `max_output_boxes_per_class` of 0 or less selects nothing (ONNX's
/// default when the input is absent), as does a NaN score threshold. Reads the 4-byte count
/// back once to size the output; nothing else leaves the device.
///
/// # Panics
///
/// Where `non_max_suppression` returns an error (shapes that do not match, an IoU threshold
/// outside `0..=1`, which ONNX Runtime refuses too), with its message.
pub fn non_max_suppression(
    boxes: Tensor<3>,
    scores: Tensor<3>,
    max_output_boxes_per_class: i64,
    iou_threshold: f32,
    score_threshold: Option<f32>,
    center_point_box: bool,
    dtype: IntDType,
) -> Tensor<2, Int> {
    let device = boxes.device();
    let options = NmsOptions {
        iou_threshold,
        score_threshold,
        max_per_class: Some(usize::try_from(max_output_boxes_per_class).unwrap_or(0)),
        box_format: if center_point_box {
            BoxFormat::Center
        } else {
            BoxFormat::Corners
        },
        indices_dtype: Some(if can_compute(&device, dtype.into()) {
            dtype
        } else {
            device.settings().int_dtype
        }),
    };
    boxes
        .non_max_suppression(scores, options)
        .unwrap_or_else(|err| panic!("ONNX NonMaxSuppression: {err}"))
        .into_exact()
}

/// An optional scalar input of an ONNX node that the model feeds or computes at run time (a
/// one-element Int tensor, such as NonMaxSuppression's `max_output_boxes_per_class`): read back
/// to the host once.
///
/// # Panics
///
/// Where the tensor does not hold exactly one element.
pub fn int_scalar<const D: usize>(value: Tensor<D, Int>) -> i64 {
    let values = crate::tensor::support::read_int_bits(value)
        .convert_dtype(burn::tensor::DType::I64)
        .try_to_vec::<i64>()
        .expect("an Int tensor converts to i64");
    match values[..] {
        [value] => value,
        _ => panic!(
            "ONNX: a scalar input must hold one element, got {} elements",
            values.len()
        ),
    }
}

/// [`int_scalar`] for a Float input (NonMaxSuppression's thresholds), as `f32`.
///
/// # Panics
///
/// Where the tensor does not hold exactly one element.
pub fn float_scalar<const D: usize>(value: Tensor<D>) -> f32 {
    let values = value
        .into_data()
        .convert::<f32>()
        .try_to_vec::<f32>()
        .expect("a Float tensor converts to f32");
    match values[..] {
        [value] => value,
        _ => panic!(
            "ONNX: a scalar input must hold one element, got {} elements",
            values.len()
        ),
    }
}

/// ONNX `Multinomial`: `sample_size` draws per row of `[batch, classes]` unnormalised
/// log-probabilities, as `[batch, sample_size]` class indices in `dtype` where the device computes
/// with it (ONNX says int32 or int64) and in the device's default Int dtype where it does not.
///
/// Each draw is [`SampleExt::sample_rows`] at temperature 1 with no filter: row `b`'s seed is
/// the node's (`seed`'s `f32` bits; a seed this process picks once where the node has none) with
/// `b` in its high 32 bits, and draw `j` of the node's `call`-th run uses step
/// `call * sample_size + j`, so successive runs draw anew, as ONNX Runtime's do. The draws
/// follow the softmax of each row but are not ONNX Runtime's (another generator): they match it
/// in distribution only. A row with nothing drawable (every logit `-inf` or NaN) gives -1, where
/// ONNX Runtime gives `classes`. `sample_size` launches (one per draw), nothing read back.
///
/// # Panics
///
/// Where [`SampleExt::sample_rows`] returns an error (no class, more than 2^24 classes), with
/// its message.
pub fn multinomial(
    logits: Tensor<2>,
    sample_size: usize,
    seed: Option<f32>,
    call: u64,
    dtype: IntDType,
) -> Tensor<2, Int> {
    let device = logits.device();
    let [batch, _] = logits.dims();
    let base = seed.map_or_else(process_seed, |seed| u64::from(seed.to_bits()));
    let words: Vec<i32> = (0..batch)
        .flat_map(|row| [base as u32, (base >> 32) as u32 ^ row as u32].map(|w| w as i32))
        .collect();
    let rows = RowSampling {
        temperature: Tensor::ones([batch], &device),
        top_k: Tensor::zeros([batch], &device),
        top_p: Tensor::ones([batch], &device),
        min_p: Tensor::zeros([batch], &device),
        seed: Tensor::from_data(TensorData::new(words, [batch, 2]), &device),
    };
    // Cast once, not once per draw.
    let logits = if logits.dtype() == DType::F32 {
        logits
    } else {
        logits.cast(FloatDType::F32)
    };
    let first = call.wrapping_mul(sample_size as u64);
    let draws: Vec<Tensor<1, Int>> = (0..sample_size as u64)
        .map(|j| {
            logits
                .clone()
                .sample_rows(&rows, first.wrapping_add(j))
                .unwrap_or_else(|err| panic!("ONNX Multinomial: {err}"))
                .tokens
        })
        .collect();
    let dtype = if can_compute(&device, dtype.into()) {
        dtype
    } else {
        device.settings().int_dtype
    };
    if draws.is_empty() {
        return Tensor::<2, Int>::empty([batch, 0], (&device, DType::from(dtype)));
    }
    let tokens = Tensor::stack::<2>(draws, 1);
    if tokens.dtype() == DType::from(dtype) {
        tokens
    } else {
        tokens.cast(dtype)
    }
}

/// The seed of a `Multinomial` node that has none: random, picked once per process (the hash
/// keys of the standard library's `RandomState`).
fn process_seed() -> u64 {
    use std::hash::{BuildHasher, RandomState};
    static SEED: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *SEED.get_or_init(|| RandomState::new().hash_one(0x5EED_u64))
}
