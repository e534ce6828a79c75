//! What the methods past stores and atomics share, at the bottom of the launchers: the checked
//! launch ([`ScatterLaunch`]), the float formats the deterministic kernels round to, the vectors
//! a group of columns moves in, buffers zeroed on the device ([`zeroed_prefix`]), units listed
//! on the device and the launches over them ([`Listed`]), and the bounds of walks on CPU drivers
//! ([`Walks`]).

use crate::capture::launch_unchecked;
use cubecl::ir::{ElemType, FloatKind};
use cubecl::prelude::*;
use cubecl::server::Handle;

use super::indices::BoundIndices;
use super::strategy::DataBinding;
use crate::launch::{elementwise_geometry, has_planes, vector_size_for};
use crate::scatter_nd::{
    ReduceOp, SumFormat, WALK_CUBE, WordKind, scatter_nd_clear, scatter_nd_listed_dispatch,
};

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
        | DataBinding::Packed {
            kind: WordKind::F16,
            ..
        } => Some(SumFormat::F16),
        DataBinding::Typed(ElemType::Float(FloatKind::BF16))
        | DataBinding::Packed {
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

/// The lanes of the vectors a group of columns moves in (see `scatter_nd/columns.rs`) for data
/// of `data_elem` (`None`: 16-bit floats packed two to a 32-bit lane), `slice` elements a row:
/// the most, up to four, that the runtime favours and whose vectors tile the slice.
pub(super) fn group_vector(client: &Client, data_elem: Option<ElemType>, slice: usize) -> usize {
    let (bytes, per_lane) = match data_elem {
        Some(elem) => (elem.size(), 1),
        None => (4, 2),
    };
    let widest = vector_size_for(client, &[bytes]).min(4);
    [4, 2, 1]
        .into_iter()
        .find(|&lanes| lanes <= widest && slice.is_multiple_of(lanes * per_lane))
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
    // SAFETY: `handle` holds `len` u32; as the caller's.
    unsafe { clear_words(client, &handle, zeroed.min(len), address) };
    handle
}

/// Zeroes the first `len` u32 of `handle` on the device (nothing where `len` is 0).
///
/// # Safety
///
/// `handle` holds at least `len` u32, and `address` fits a launch over `len` units.
unsafe fn clear_words(client: &Client, handle: &Handle, len: usize, address: AddressType) {
    if len == 0 {
        return;
    }
    let (cubes, dim) = elementwise_geometry(client, len);
    // SAFETY: as the caller's; the kernel guards its units against `len`.
    unsafe {
        launch_unchecked!(scatter_nd_clear(
            client,
            cubes,
            dim,
            address,
            BufferArg::from_raw_parts(handle.clone(), len),
            len,
        ));
    }
}

/// Words a region of a shared scratch buffer is padded to (256 bytes), so that the region can
/// be bound on its own at an offset every wgpu adapter accepts.
pub(super) const REGION_WORDS: usize = 64;

/// Units listed on the device, their count and the list (a slot per possible unit) in one
/// buffer (a counted list: the count in word 0), for a launch over them that never waits for
/// the count on the host: sized on the device (by
/// [`scatter_nd_listed_dispatch()`], a unit per listed unit: what CPU drivers need, whose
/// walks are bounded per unit; CUDA reads such a size back first, a sync), or a fixed grid of
/// at most [`LISTED_GRID`] units, each taking listed positions a grid apart (GPUs).
pub(super) struct Listed {
    list: Handle,
    capacity: usize,
    dispatch: Option<Handle>,
}

/// The most units of a fixed grid over listed units: about as many as a large GPU keeps
/// resident, so that a short list costs one light wave and a long one keeps every unit busy.
pub const LISTED_GRID: usize = 1 << 18;

impl Listed {
    /// Room for `capacity` units in `shared` from word `at` on (a multiple of
    /// [`REGION_WORDS`], so that the list binds on its own), where several lists share one
    /// buffer; launched over by a grid sized `on_device` or fixed.
    ///
    /// # Safety
    ///
    /// `shared` holds at least `at + capacity + 1` u32; `address` fits the launch.
    pub unsafe fn within(
        client: &Client,
        shared: &Handle,
        at: usize,
        capacity: usize,
        on_device: bool,
        address: AddressType,
    ) -> Self {
        let list = shared.clone().offset_start((at * size_of::<u32>()) as u64);
        // SAFETY: the list holds its count, as the caller's `address` allows a unit.
        unsafe { clear_words(client, &list, 1, address) };
        Self {
            list,
            capacity,
            // A buffer of its own: wgpu refuses a dispatch that reads its count from a buffer
            // the kernel also binds, and small allocations share pooled buffers.
            dispatch: on_device.then(|| {
                client.memory_dedicated_allocation((), |()| client.empty(3 * size_of::<u32>()))
            }),
        }
    }

    /// The count alone (the list's first word).
    fn count_arg(&self) -> BufferArg {
        // SAFETY: `list` holds at least one u32, allocated above.
        unsafe { BufferArg::from_raw_parts(self.list.clone(), 1) }
    }

    /// The counted list: the count, then `capacity` slots.
    pub fn list_arg(&self) -> BufferArg {
        // SAFETY: `list` holds `capacity + 1` u32, allocated above.
        unsafe { BufferArg::from_raw_parts(self.list.clone(), self.capacity + 1) }
    }

    /// Sizes the launch over the listed units on the device, once the kernels that list them
    /// have run (nothing for a fixed grid).
    ///
    /// # Safety
    ///
    /// `address` fits the launch.
    pub unsafe fn size(&self, client: &Client, address: AddressType) {
        let Some(dispatch) = &self.dispatch else {
            return;
        };
        let (cubes, dim) = elementwise_geometry(client, 1);
        // SAFETY: the count holds one u32 and the dispatch three; one unit writes them.
        unsafe {
            launch_unchecked!(scatter_nd_listed_dispatch(
                client,
                cubes,
                dim,
                address,
                self.count_arg(),
                BufferArg::from_raw_parts(dispatch.clone(), 3),
            ));
        }
    }

    /// The geometry of a launch over the listed units: sized on the device, [`WALK_CUBE`]
    /// units a cube, or the fixed grid.
    pub fn geometry(&self, client: &Client) -> (CubeCount, CubeDim) {
        match &self.dispatch {
            Some(dispatch) => (
                CubeCount::Dynamic(dispatch.clone().binding()),
                CubeDim::new_1d(WALK_CUBE),
            ),
            None => elementwise_geometry(client, self.capacity.clamp(1, LISTED_GRID)),
        }
    }
}

/// The walks' bounds: at most `span` rows per launch (all of them on runtimes with plane
/// operations; CPU drivers stop a shader's loops after 65,535 iterations in all, so there
/// `cpu_span`), and the list of walks that go on past the first launch: a walk longer than
/// `span` has more than `span` rows, so at most `rows / span` targets have one, each with
/// `per_row` units (columns, or groups of them): `capacity` of them. Their count starts at
/// zero wherever one can go on. Count and list are one counted list (the count in word 0).
pub(super) struct Walks {
    pub span: usize,
    pub capacity: usize,
    list: Handle,
}

impl Walks {
    /// # Safety
    ///
    /// `address` fits the launch.
    pub unsafe fn new(
        client: &Client,
        rows: usize,
        per_row: usize,
        cpu_span: usize,
        address: AddressType,
    ) -> Self {
        let span = if has_planes(client) { rows } else { cpu_span };
        let capacity = (rows / span * per_row).max(1);
        // The count is only read where walks resume (`span < rows`).
        let zeroed = usize::from(span < rows);
        Self {
            span,
            capacity,
            // SAFETY: at most one unit, as the caller's `address` allows.
            list: unsafe { zeroed_prefix(client, capacity + 1, zeroed, address) },
        }
    }

    /// The geometry of a launch over every unit, or with `resume` over the listed ones, in
    /// small cubes ([`WALK_CUBE`] units) so that a few long walks spread over a CPU driver's
    /// threads (one per cube).
    pub fn geometry(&self, client: &Client, units: usize, resume: bool) -> (CubeCount, CubeDim) {
        if resume {
            let dim = CubeDim::new_1d(WALK_CUBE);
            (
                crate::launch::cube_count_for(client, self.capacity, dim),
                dim,
            )
        } else {
            elementwise_geometry(client, units)
        }
    }

    /// The counted list: the count, then `capacity` slots.
    pub fn list_arg(&self) -> BufferArg {
        // SAFETY: `list` holds `capacity + 1` u32, allocated above.
        unsafe { BufferArg::from_raw_parts(self.list.clone(), self.capacity + 1) }
    }
}
