//! What the count and write kernels share: the comptime shape of a tile and how its flags sit
//! in the mask.
//!
//! A tile is `cube_size * per_unit` consecutive vectors of `lanes` elements. The count kernel
//! reads each tile once and leaves one bit per element in the tile's *mask*: for the unit in
//! slot `s`, the `per_unit * lanes` flags of its `per_unit` vectors (its `k`-th vector's lane
//! `j` is flag `k * lanes + j`) fill `words` 32-bit words, and word `m` of slot `s` in tile `t`
//! sits at `mask[(t * words + m) * cube_size + s]`. Which vectors are a unit's follows the write
//! kernel that reads the mask:
//! - with planes (GPUs), vector `s` of every row of `cube_size` vectors, so neighbouring units
//!   read neighbouring vectors (see [`tile_bits`]);
//! - without (CPU drivers), the run of `per_unit` consecutive vectors from `s * per_unit`, the
//!   run the write kernel gives the unit: its flags are its words in element order, 32 to a load.

use cubecl::prelude::*;

/// The comptime shape of a tile, which the count and write kernels share.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TileShape {
    /// Units per cube; one cube per tile.
    pub cube_size: usize,
    /// Vectors per unit.
    pub per_unit: usize,
    /// Elements per vector.
    pub lanes: usize,
    /// Mask words per unit: `per_unit * lanes` flags, whole vectors in each word.
    pub words: usize,
    /// Whether the kernels use plane operations (the GPU layouts).
    pub planes: bool,
}

impl TileShape {
    /// Vectors per tile.
    pub const fn vectors(&self) -> usize {
        self.cube_size * self.per_unit
    }

    /// Elements per tile.
    pub const fn elements(&self) -> usize {
        self.vectors() * self.lanes
    }
}

/// Where a write kernel's cube stands: its tile, the number of tiles, of input vectors and of
/// output rows.
#[derive(CubeType, Clone, Copy)]
pub(super) struct TileLayout {
    pub tile: usize,
    pub tiles: usize,
    pub vectors: usize,
    pub rows: usize,
}

/// The non-zero bits of vector `q` of tile `tile` (`q` counts from the tile's first vector),
/// read from the mask the count kernel wrote in the plane layout.
#[cube]
pub(super) fn tile_bits(mask: &[u32], tile: usize, q: usize, #[comptime] shape: TileShape) -> u32 {
    let row = q / shape.cube_size;
    let slot = q % shape.cube_size;
    let bit = row * shape.lanes;
    let word = mask[(tile * shape.words + bit / 32) * shape.cube_size + slot];
    (word >> (bit % 32) as u32) & comptime!(((1u64 << shape.lanes) - 1) as u32)
}
