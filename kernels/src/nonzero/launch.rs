//! Host-side launch of the compaction over raw CubeCL handles.

use cubecl::ir::ElemType;
use cubecl::ir::features::Plane;
use cubecl::prelude::*;
use cubecl::server::Handle;

use super::kernel::{
    nonzero_fill_padding, nonzero_scan_tiles, nonzero_tile_counts, nonzero_write_coordinates,
};
use crate::launch::{elementwise_geometry, require_binding, require_len, vector_size_for};
use crate::{KernelError, StorageWidth};

/// Units per cube in every kernel of the compaction (a power of two).
const CUBE_SIZE: usize = 256;
/// Vectors each unit handles in the tile kernels, so a tile is `CUBE_SIZE * PER_UNIT` vectors.
/// Larger tiles amortise the barriers of the cube-wide scan (on lavapipe at 2^24 elements and
/// 10% density: 4 → 94 ms, 8 → 65 ms, 16 → 53 ms, 32 → 49 ms); the write kernel keeps a unit's
/// `PER_UNIT` vectors in registers, which bounds it on GPUs.
const PER_UNIT: usize = 16;

/// Which bits make an element non-zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NonZeroPredicate {
    /// Any set bit: integers (`v != 0`) and booleans.
    AnyBit,
    /// Any set bit but the sign bit: IEEE floats, so that `-0.0` is zero and NaN is not.
    AnyBitButSign,
}

/// How the compaction's kernels scan across a cube.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CubeScan {
    /// A raking scan in shared memory with three barriers; needs nothing from the runtime.
    Shared,
    /// A plane (subgroup) scan per plane, then the plane totals through shared memory with one
    /// barrier; needs plane operations.
    Planes,
}

impl CubeScan {
    /// [`CubeScan::Planes`] where `client` reports plane operations, [`CubeScan::Shared`]
    /// elsewhere (lavapipe: cubecl-wgpu turns planes off on CPU adapters).
    pub fn for_client(client: &Client) -> Self {
        if client.properties().features.plane.contains(Plane::Ops) {
            Self::Planes
        } else {
            Self::Shared
        }
    }
}

/// Writes the coordinates of the non-zero elements of `input` into `coordinates` and their
/// number into `count[0]`, without reading anything back to the host.
///
/// - `input` holds `len` contiguous elements of `input_width`, read as unsigned bits and tested
///   with `predicate`.
/// - `dims` are the sizes of the last `dims.len()` dimensions of the input (the coordinate width
///   `N`); every dimension before them must have size 1, so `dims` multiply to `len`.
/// - `count` holds one `output_elem`; `coordinates` holds `len * N` of them, row-major
///   `[len, N]`. Row `i < count` gets the `i`-th non-zero element's coordinates in ascending
///   element order; the other rows are left as they were, or set to `fill` when given.
/// - `scan` picks the cube-wide scan ([`CubeScan::for_client`] chooses for the runtime);
///   [`CubeScan::Planes`] needs plane operations.
///
/// # Errors
///
/// [`KernelError`] when `output_elem` is not an integer, a buffer type cannot be bound, a handle
/// is too small, `dims` do not multiply to `len`, or `len` does not fit in `u32`. Nothing is
/// launched then.
#[allow(clippy::too_many_arguments)]
pub fn launch_nonzero_coordinates(
    client: &Client,
    input: Handle,
    input_width: StorageWidth,
    predicate: NonZeroPredicate,
    len: usize,
    dims: &[usize],
    count: Handle,
    coordinates: Handle,
    output_elem: ElemType,
    fill: Option<i64>,
    scan: CubeScan,
) -> Result<(), KernelError> {
    if !matches!(output_elem, ElemType::Int(_) | ElemType::UInt(_)) {
        return Err(KernelError::NotAnInteger { elem: output_elem });
    }
    let width = dims.len();
    let dims_product = dims.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d));
    if dims_product != Some(len) {
        return Err(KernelError::ShapeMismatch {
            detail: format!("the coordinate dims {dims:?} do not multiply to {len} elements"),
        });
    }
    if u32::try_from(len).is_err() {
        return Err(KernelError::TooLarge {
            detail: format!("{len} elements do not fit the compaction's 32-bit tile offsets"),
        });
    }
    let input_elem = input_width.unsigned();
    require_binding(client, input_elem, "input")?;
    require_binding(client, output_elem, "output")?;
    require_len(&input, len, input_width.bytes(), "input")?;
    require_len(&count, 1, output_elem.size(), "count")?;
    require_len(&coordinates, len * width, output_elem.size(), "coordinates")?;

    let mut vector = vector_size_for(client, &[input_width.bytes()]);
    while vector > 1 && !len.is_multiple_of(vector) {
        vector /= 2;
    }
    let vectors = len / vector;
    let tiles = vectors.div_ceil(CUBE_SIZE * PER_UNIT);
    let address = AddressType::from_len(len.max(len * width));
    // Zero-sized bindings are not portable: every scratch buffer holds at least one element.
    let tile_counts = client.empty(tiles.max(1) * size_of::<u32>());
    let tile_offsets = client.empty(tiles.max(1) * size_of::<u32>());
    let dims_u32: Vec<u32> = dims.iter().map(|&d| d as u32).collect();
    let dims_handle = client.create_from_slice(u32::as_bytes(if dims_u32.is_empty() {
        &[1]
    } else {
        &dims_u32
    }));
    let tile_cubes = cubecl::calculate_cube_count_elemwise(
        client,
        tiles * CUBE_SIZE,
        CubeDim::new_1d(CUBE_SIZE as u32),
    );
    let cube_dim = CubeDim::new_1d(CUBE_SIZE as u32);
    let ignore_sign = predicate == NonZeroPredicate::AnyBitButSign;
    let planes = scan == CubeScan::Planes;

    // SAFETY: every index the kernels touch is guarded by `tiles`, `vectors` and `elements`,
    // which the checks above keep within the buffers: `input` holds `vectors * vector` elements,
    // `coordinates` `len * width`, the scratch buffers `tiles` (or one) elements each, and the
    // count one. Row offsets come from the scan of the same predicate, so they stay below the
    // number of non-zero elements, which is at most `len`.
    unsafe {
        if tiles > 0 {
            nonzero_tile_counts::launch_unchecked(
                client,
                tile_cubes.clone(),
                cube_dim,
                address,
                vector,
                BufferArg::from_raw_parts(input.clone(), len),
                BufferArg::from_raw_parts(tile_counts.clone(), tiles),
                vectors,
                tiles,
                ignore_sign,
                CUBE_SIZE,
                planes,
                PER_UNIT,
                input_elem,
            );
        }
        nonzero_scan_tiles::launch_unchecked(
            client,
            CubeCount::Static(1, 1, 1),
            cube_dim,
            address,
            BufferArg::from_raw_parts(tile_counts, tiles.max(1)),
            BufferArg::from_raw_parts(tile_offsets.clone(), tiles.max(1)),
            BufferArg::from_raw_parts(count.clone(), 1),
            tiles,
            tiles.div_ceil(CUBE_SIZE),
            CUBE_SIZE,
            planes,
            output_elem,
        );
        if tiles > 0 && width > 0 {
            nonzero_write_coordinates::launch_unchecked(
                client,
                tile_cubes,
                cube_dim,
                address,
                vector,
                BufferArg::from_raw_parts(input, len),
                BufferArg::from_raw_parts(tile_offsets, tiles),
                BufferArg::from_raw_parts(dims_handle, width),
                BufferArg::from_raw_parts(coordinates.clone(), len * width),
                vectors,
                tiles,
                width,
                ignore_sign,
                CUBE_SIZE,
                planes,
                PER_UNIT,
                [input_elem, output_elem],
            );
        }
        let elements = len * width;
        if let Some(fill) = fill
            && elements > 0
        {
            let (cubes, dim) = elementwise_geometry(client, elements);
            nonzero_fill_padding::launch_unchecked(
                client,
                cubes,
                dim,
                address,
                BufferArg::from_raw_parts(coordinates, elements),
                BufferArg::from_raw_parts(count, 1),
                InputScalar::new(fill, output_elem),
                elements,
                width,
                output_elem,
            );
        }
    }
    Ok(())
}
