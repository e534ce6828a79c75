//! `CubeBackend` (wgpu, Vulkan, CUDA): every operator launches a CubeCL kernel of the
//! `burn-dml-ops-kernels` crate on the tensor's stream. Nothing here reads back to the host.

use burn::backend::TensorMetadata;
use burn::backend::tensor::{BoolTensor, FloatTensor, IntTensor};
use burn::tensor::{DType, IntDType, Shape};
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::ops::numeric::empty_device_dtype;
use burn_cubecl::tensor::CubeTensor;
use burn_cubecl::{CubeBackend, CubeDevice};
use burn_dml_ops_kernels::copy::launch_copy;
use burn_dml_ops_kernels::nonzero::{NonZeroPredicate, launch_nonzero_coordinates};
use burn_dml_ops_kernels::scatter_nd::{
    OutOfRange, ReduceOp, ScatterNdLayout, ScatterReduction, ScatterStrategy, launch_scatter_nd,
    scatter_strategy,
};
use burn_dml_ops_kernels::{KernelError, StorageWidth, bit_count::launch_bit_count};
use cubecl::ir::{ElemType, FloatKind, IntKind, UIntKind};

use crate::{DmlOps, OutOfBounds, Reduction};

impl DmlOps for CubeBackend {
    fn int_bit_count(input: IntTensor<Self>, out_dtype: IntDType) -> IntTensor<Self> {
        bit_count(input, out_dtype)
    }

    fn float_bit_count(input: FloatTensor<Self>, out_dtype: IntDType) -> IntTensor<Self> {
        bit_count(input, out_dtype)
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
    ) -> FloatTensor<Self> {
        scatter_nd(input, indices, updates, reduction, out_of_bounds)
    }

    fn int_scatter_nd(
        input: IntTensor<Self>,
        indices: IntTensor<Self>,
        updates: IntTensor<Self>,
        reduction: Reduction,
        out_of_bounds: OutOfBounds,
    ) -> IntTensor<Self> {
        scatter_nd(input, indices, updates, reduction, out_of_bounds)
    }

    fn bool_scatter_nd(
        input: BoolTensor<Self>,
        indices: IntTensor<Self>,
        updates: BoolTensor<Self>,
        reduction: Reduction,
        out_of_bounds: OutOfBounds,
    ) -> BoolTensor<Self> {
        scatter_nd(input, indices, updates, reduction, out_of_bounds)
    }
}

/// The kernel's element type for an Int dtype.
fn int_elem(dtype: IntDType) -> ElemType {
    elem(DType::from(dtype))
}

/// The kernel's element type for a tensor dtype: bools (whatever Burn stores them as) become
/// the unsigned integer of their width, since only ScatterND's `Assign` moves them, bit for bit.
fn elem(dtype: DType) -> ElemType {
    match dtype {
        DType::F64 => ElemType::Float(FloatKind::F64),
        DType::F32 => ElemType::Float(FloatKind::F32),
        DType::Flex32 => ElemType::Float(FloatKind::Flex32),
        DType::F16 => ElemType::Float(FloatKind::F16),
        DType::BF16 => ElemType::Float(FloatKind::BF16),
        DType::I64 => ElemType::Int(IntKind::I64),
        DType::I32 => ElemType::Int(IntKind::I32),
        DType::I16 => ElemType::Int(IntKind::I16),
        DType::I8 => ElemType::Int(IntKind::I8),
        DType::U64 => ElemType::UInt(UIntKind::U64),
        DType::U32 => ElemType::UInt(UIntKind::U32),
        DType::U16 => ElemType::UInt(UIntKind::U16),
        DType::U8 => ElemType::UInt(UIntKind::U8),
        DType::Bool(_) | DType::QFloat(_) => StorageWidth::from_bytes(dtype.size())
            .unwrap_or_else(|| panic!("{dtype:?} has no fixed element width"))
            .unsigned(),
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

/// Panics for a launcher error: the tensor extension traits check everything a launcher checks,
/// so reaching this is a bug in this crate.
fn launch_failed(operator: &str, device: &CubeDevice, err: KernelError) -> ! {
    panic!(
        "{operator} on {device:?}: {err}; the tensor extension traits check their arguments \
         before launching, so this is a bug in burn-dml-ops"
    )
}

fn bit_count(input: CubeTensor, out_dtype: IntDType) -> CubeTensor {
    let input = into_contiguous(input);
    let output = empty_device_dtype(
        input.client.clone(),
        input.device.clone(),
        input.shape(),
        DType::from(out_dtype),
    );
    launch_bit_count(
        &input.client,
        input.handle.clone(),
        storage_width(&input, "BitCount"),
        output.handle.clone(),
        int_elem(out_dtype),
        input.shape().num_elements(),
    )
    .unwrap_or_else(|err| launch_failed("BitCount", &input.device, err));
    output
}

fn nonzero_coordinates(
    input: CubeTensor,
    predicate: NonZeroPredicate,
    width: usize,
    fill: Option<i64>,
    out_dtype: IntDType,
) -> (CubeTensor, CubeTensor) {
    let input = into_contiguous(input);
    let shape = input.shape();
    let len = shape.num_elements();
    let dims = &shape[shape.num_dims() - width..];
    let empty = |shape: Shape| {
        empty_device_dtype(
            input.client.clone(),
            input.device.clone(),
            shape,
            DType::from(out_dtype),
        )
    };
    let count = empty([1].into());
    let coordinates = empty([len, width].into());
    launch_nonzero_coordinates(
        &input.client,
        input.handle.clone(),
        storage_width(&input, "NonZeroCoordinates"),
        predicate,
        len,
        dims,
        count.handle.clone(),
        coordinates.handle.clone(),
        int_elem(out_dtype),
        fill,
    )
    .unwrap_or_else(|err| launch_failed("NonZeroCoordinates", &input.device, err));
    (count, coordinates)
}

/// Environment variable that forces the strategy of ScatterND reductions, for measuring them:
/// `lists` or `atomic` (ignored where the runtime lacks the atomic operation).
const STRATEGY_VARIABLE: &str = "BURN_DML_OPS_SCATTER_STRATEGY";

/// The strategy for `reduction` on `data`: [`scatter_strategy`]'s choice unless
/// [`STRATEGY_VARIABLE`] asks for another that works.
fn pick_strategy(
    client: &cubecl::prelude::Client,
    data: ElemType,
    reduction: ScatterReduction,
) -> ScatterStrategy {
    let auto = scatter_strategy(client, data, reduction);
    match (auto, std::env::var(STRATEGY_VARIABLE).as_deref()) {
        (ScatterStrategy::Store, _) => auto,
        (_, Ok("lists")) => ScatterStrategy::Lists,
        (_, Ok("atomic")) => ScatterStrategy::Atomic,
        _ => auto,
    }
}

fn scatter_nd(
    input: CubeTensor,
    indices: CubeTensor,
    updates: CubeTensor,
    reduction: Reduction,
    out_of_bounds: OutOfBounds,
) -> CubeTensor {
    let input = into_contiguous(input);
    let indices = into_contiguous(indices);
    let updates = into_contiguous(updates);
    let shape = input.shape();
    let len = shape.num_elements();
    // In place when nobody else holds the input's buffer, otherwise one copy.
    let output = if input.can_mut() {
        input
    } else {
        let output = empty_device_dtype(
            input.client.clone(),
            input.device.clone(),
            shape.clone(),
            input.dtype,
        );
        launch_copy(
            &input.client,
            input.handle.clone(),
            output.handle.clone(),
            elem(input.dtype),
            len,
        )
        .unwrap_or_else(|err| launch_failed("ScatterND", &input.device, err));
        output
    };
    let index_shape = indices.shape();
    let k = index_shape[index_shape.num_dims() - 1];
    let layout = ScatterNdLayout {
        dims: &shape[..k],
        rows: index_shape.num_elements() / k,
        slice: shape[k..].iter().product(),
    };
    let reduction = match reduction {
        Reduction::Assign => ScatterReduction::Assign,
        Reduction::Add => ScatterReduction::Reduce(ReduceOp::Add),
        Reduction::Mul => ScatterReduction::Reduce(ReduceOp::Mul),
        Reduction::Min => ScatterReduction::Reduce(ReduceOp::Min),
        Reduction::Max => ScatterReduction::Reduce(ReduceOp::Max),
    };
    let out_of_range = match out_of_bounds {
        OutOfBounds::Clamp => OutOfRange::Clamp,
        OutOfBounds::Skip | OutOfBounds::Error => OutOfRange::Skip,
    };
    let data_elem = elem(output.dtype);
    let mut strategy = pick_strategy(&output.client, data_elem, reduction);
    let launch = |strategy| {
        launch_scatter_nd(
            &output.client,
            output.handle.clone(),
            data_elem,
            indices.handle.clone(),
            elem(indices.dtype),
            updates.handle.clone(),
            layout,
            reduction,
            out_of_range,
            strategy,
        )
    };
    if let Err(err) = launch(strategy) {
        if strategy != ScatterStrategy::Atomic {
            launch_failed("ScatterND", &output.device, err);
        }
        // A forced atomic strategy the runtime lacks: the lists work everywhere.
        strategy = ScatterStrategy::Lists;
        launch(strategy).unwrap_or_else(|err| launch_failed("ScatterND", &output.device, err));
    }
    output
}
