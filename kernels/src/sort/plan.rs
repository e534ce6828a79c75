//! What a sort is asked to do and how it runs: the order, the shape, the buffers and the plan.
//! Shared by the launcher and the sort and select steps, and importing none of them.

use cubecl::ir::ElemType;
use cubecl::prelude::*;
use cubecl::server::Handle;

use crate::launch::has_planes;

/// Units of the one-cube sort.
pub(super) const CUBE_UNITS: usize = 128;

/// The longest axis one cube sorts: 128 units of 32 elements.
pub const CUBE_SORT_MAX: usize = CUBE_UNITS * 32;

/// The elements a cube of the one-cube sort packs short sequences into under a plan made by
/// [`SortPlan::for_client`]: 8 per unit, where the cube's passes cost about what one sequence's
/// do (see the [module](super)'s cost model).
pub const CUBE_PACK: usize = 1024;

/// The longest axis a plan made by [`SortPlan::for_client`] selects one cube per sequence: where
/// the cost model (see the [module](super)) puts one cube's passes over a row and the launches
/// of the select over tiles even on a GPU.
pub const ROW_SELECT_MAX: usize = 1 << 18;

/// DirectML's `DML_AXIS_DIRECTION`: which end of the order comes first.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SortOrder {
    /// Smallest first (`INCREASING`).
    #[default]
    Ascending,
    /// Largest first (`DECREASING`).
    Descending,
}

/// How the sort runs: whether its cube scans use plane (subgroup) operations or shared memory,
/// up to which axis length one cube sorts a whole sequence in shared memory in one launch
/// instead of the radix passes over device memory, and up to which `k` a top-k of a longer axis
/// selects its `k` first (radix select) and sorts only those. Every plan orders ties the same
/// way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SortPlan {
    /// Whether the cube scans use plane operations (the runtime must have them).
    pub planes: bool,
    /// The longest axis sorted by one cube, at most [`CUBE_SORT_MAX`]; 0 never does. Shorter
    /// still where the runtime's shared memory cannot hold it (64-bit keys need more).
    pub cube_len: usize,
    /// The largest `k` that a top-k of an axis longer than `cube_len` finds by radix select
    /// before sorting; 0 never does.
    pub select_k: usize,
    /// The most elements a cube of the one-cube sort holds when it takes several whole
    /// sequences, each at most half of it (a power of two of them, one more 4-bit pass per 16
    /// of them, where every cube of one would leave most units idle); 0 takes one per cube.
    pub cube_pack: usize,
    /// The longest axis whose radix select runs one cube per sequence, in one launch, instead of
    /// two launches per digit over tiles and three more for the candidates; 0 never does.
    pub row_select_len: usize,
}

impl SortPlan {
    /// Plane scans where `client` reports plane operations (GPUs), shared memory elsewhere
    /// (lavapipe: cubecl-wgpu turns planes off on CPU adapters; OpenGL); one cube sorts every
    /// axis its shared memory holds, and a top-k of a longer axis selects first up to the `k`
    /// one cube sorts.
    pub fn for_client(client: &Client) -> Self {
        Self {
            planes: has_planes(client),
            cube_len: CUBE_SORT_MAX,
            select_k: CUBE_SORT_MAX,
            cube_pack: CUBE_PACK,
            row_select_len: ROW_SELECT_MAX,
        }
    }
}

/// The shape of a sort along one axis of a contiguous `[outer, axis_len, inner]` input, keeping
/// the first `k` of each of the `outer * inner` sequences: the output is `[outer, k, inner]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SortShape {
    /// The product of the dimensions before the axis.
    pub outer: usize,
    /// The axis's length.
    pub axis_len: usize,
    /// The product of the dimensions after the axis.
    pub inner: usize,
    /// How many of each sequence to keep, at most `axis_len`.
    pub k: usize,
}

/// The input of [`launch_top_k`](super::launch_top_k): `outer * axis_len * inner` contiguous
/// elements.
#[derive(Clone, Debug)]
pub struct SortInput {
    /// The values, read as 32-bit words, so the handle must start on a 4-byte boundary.
    pub values: Handle,
    /// The values' type: any float of 16, 32 or 64 bits, any integer of 8 to 64 bits.
    pub elem: ElemType,
}

/// Where [`launch_top_k`](super::launch_top_k) writes: `outer * k * inner` elements each,
/// written as 32-bit words (both handles must start on a 4-byte boundary; the bytes of the last
/// word past the last element are overwritten).
#[derive(Clone, Debug)]
pub struct SortOutput {
    /// The values, in the input's type.
    pub values: Handle,
    /// The positions along the axis.
    pub indices: Handle,
    /// The positions' integer type, of 8 to 64 bits; it must hold `axis_len - 1`.
    pub indices_elem: ElemType,
}
