//! The index tuples of a launch: their buffer and policy, and how the kernels read them.

use crate::capture::launch_unchecked;
use cubecl::ir::{ElemType, UIntKind};
use cubecl::prelude::*;
use cubecl::server::Handle;

use crate::KernelError;
use crate::launch::{can_bind, elementwise_geometry, require_len, require_word_aligned};
use crate::scatter_nd::{IndexRead, scatter_nd_resolve_indices};

/// What happens to an index tuple that is still outside its dimension after negative values
/// were wrapped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum OutOfRange {
    /// The update row is dropped.
    #[default]
    Skip,
    /// Each coordinate is clamped to `[0, dim - 1]` (rows targeting a dimension of size 0 are
    /// still dropped: it has no valid index).
    Clamp,
}

/// The index tuples of a scatter or a gather: `layout.rows * k` integers, and what a tuple out
/// of range does.
#[derive(Clone, Debug)]
pub struct ScatterNdIndices {
    /// The buffer, `[rows, k]` row-major.
    pub handle: Handle,
    /// The integer type of the indices; signed ones count from the end when negative.
    pub elem: ElemType,
    /// What a tuple still out of range after that does: skipped or clamped.
    pub out_of_range: OutOfRange,
}

/// Index tuples as the kernels read them.
pub(super) struct BoundIndices {
    pub handle: Handle,
    pub elem: ElemType,
    pub read: IndexRead,
}

/// The indexed dimensions as the kernels take them: one launch argument each.
pub(super) fn dims_arg(dims: &[usize]) -> SequenceArg<u32> {
    // Fits: the launchers refuse `u32::MAX` or more target slices.
    dims.iter().map(|&d| d as u32).collect()
}

/// The index tuples as the kernels read them: as given where the runtime binds their type;
/// otherwise one launch resolves them into `u32` coordinates (wrapped, clamped, or out of range for
/// every dimension), which the kernels then read as unsigned indices with the `Skip` policy.
///
/// `dims` holds the indexed dimensions and `index_len` the number of indices, checked against
/// the handle by the caller (with [`check_indices`]).
pub(super) fn bound_indices(
    client: &Client,
    indices: ScatterNdIndices,
    dims: &[usize],
    index_len: usize,
) -> BoundIndices {
    let ScatterNdIndices {
        handle,
        elem,
        out_of_range,
    } = indices;
    let read = IndexRead {
        k: dims.len(),
        signed: matches!(elem, ElemType::Int(_)),
        wide: elem.size() > 4,
        clamp: out_of_range == OutOfRange::Clamp,
    };
    if can_bind(client, elem) {
        return BoundIndices { handle, elem, read };
    }
    let coordinates = client.empty(index_len.max(1) * size_of::<u32>());
    let words = (index_len * elem.size()).div_ceil(4);
    if index_len > 0 {
        let (cubes, dim) = elementwise_geometry(client, index_len);
        // SAFETY: the index handle holds `index_len` indices (checked by the caller), the words
        // that hold them, which CubeCL binds whole; unit `i < index_len` reads the word(s) of
        // index `i` and writes coordinate `i` of `index_len`.
        unsafe {
            launch_unchecked!(scatter_nd_resolve_indices(
                client,
                cubes,
                dim,
                AddressType::from_len(words.max(index_len)),
                BufferArg::from_raw_parts(handle, words),
                dims_arg(dims),
                BufferArg::from_raw_parts(coordinates.clone(), index_len),
                index_len,
                read,
                8 * elem.size() as u32,
            ));
        }
    }
    BoundIndices {
        handle: coordinates,
        elem: ElemType::UInt(UIntKind::U32),
        read: IndexRead {
            signed: false,
            wide: false,
            clamp: false,
            ..read
        },
    }
}

/// Returns an error unless the handle holds `index_len` indices that the kernels can read: bound
/// as their own type, or as 32-bit words (8-, 16- and 64-bit integers) from a word-aligned
/// handle.
pub(super) fn check_indices(
    client: &Client,
    indices: &ScatterNdIndices,
    index_len: usize,
) -> Result<(), KernelError> {
    let ScatterNdIndices { handle, elem, .. } = indices;
    let elem = *elem;
    require_len(handle, index_len, elem.size(), "indices")?;
    if can_bind(client, elem) {
        return Ok(());
    }
    if !matches!(elem.size(), 1 | 2 | 8) {
        return Err(KernelError::UnsupportedType {
            elem,
            role: "indices",
        });
    }
    require_word_aligned(handle, "indices")
}
