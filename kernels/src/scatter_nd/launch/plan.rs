//! What the methods past stores and atomics share, at the bottom of the launchers: the checked
//! launch ([`ScatterLaunch`]), the float formats the deterministic kernels round to, the vectors
//! a group of columns moves in and buffers zeroed on the device ([`zeroed_prefix`]).

use crate::capture::launch_unchecked;
use cubecl::ir::{ElemType, FloatKind};
use cubecl::prelude::*;
use cubecl::server::Handle;

use super::indices::BoundIndices;
use super::strategy::DataBinding;
use crate::launch::{elementwise_geometry, vector_size_for};
use crate::scatter_nd::{ReduceOp, SumFormat, WordKind, scatter_nd_clear};

/// What the methods past stores and atomics launch over: the checked buffers and sizes of a
/// scatter.
pub(super) struct ScatterLaunch<'a> {
    pub output: Handle,
    pub updates: Handle,
    pub indices: BoundIndices,
    pub dims: &'a [usize],
    pub rows: usize,
    pub slice: usize,
    pub targets: usize,
    pub output_len: usize,
    pub units: usize,
    pub index_len: usize,
    pub address: AddressType,
}

/// The format of 16- and 32-bit float data held as `binding` (typed, or `f16`/`bf16` packed),
/// which the deterministic sums and products round to; `None` for other data.
pub(super) fn float_format(binding: DataBinding) -> Option<SumFormat> {
    match binding {
        DataBinding::Typed(ElemType::Float(FloatKind::F16))
        | DataBinding::Words {
            kind: WordKind::F16,
            ..
        } => Some(SumFormat::F16),
        DataBinding::Typed(ElemType::Float(FloatKind::BF16))
        | DataBinding::Words {
            kind: WordKind::BF16,
            ..
        } => Some(SumFormat::BF16),
        DataBinding::Typed(ElemType::Float(FloatKind::F32)) => Some(SumFormat::F32),
        _ => None,
    }
}

/// The format of the exact sum a deterministic float `Add` on data held as `binding` takes
/// (`None`: not a 16- or 32-bit float `Add`).
pub(super) fn exact_sum_format(binding: DataBinding, op: Option<ReduceOp>) -> Option<SumFormat> {
    float_format(binding).filter(|_| op == Some(ReduceOp::Add))
}

/// The lanes of the vectors a group of columns moves in (see `scatter_nd/latest.rs`) for data
/// of `data_elem`, `slice` elements a row: the most, up to four, that the runtime favours and
/// whose vectors tile the slice.
pub(super) fn group_vector(client: &Client, data_elem: ElemType, slice: usize) -> usize {
    let widest = vector_size_for(client, &[data_elem.size()]).min(4);
    [4, 2, 1]
        .into_iter()
        .find(|&lanes| lanes <= widest && slice.is_multiple_of(lanes))
        .unwrap_or(1)
}

/// A new buffer of `len` u32 whose first `zeroed` (at most `len`) are zeroed on the device (no
/// upload from the host).
///
/// # Safety
///
/// `address` fits a launch over `zeroed` units.
pub(super) unsafe fn zeroed_prefix(
    client: &Client,
    len: usize,
    zeroed: usize,
    address: AddressType,
) -> Handle {
    let handle = client.empty(len * size_of::<u32>());
    let zeroed = zeroed.min(len);
    if zeroed > 0 {
        let (cubes, dim) = elementwise_geometry(client, zeroed);
        // SAFETY: `handle` holds `len` u32; the kernel guards its units against `zeroed`; as
        // the caller's `address`.
        unsafe {
            launch_unchecked!(scatter_nd_clear(
                client,
                cubes,
                dim,
                address,
                BufferArg::from_raw_parts(handle.clone(), zeroed),
                zeroed,
            ));
        }
    }
    handle
}
