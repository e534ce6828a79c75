//! The host-side layout of a compaction: how many tiles, how long the mask, and the address
//! type wide enough for every index its kernels form.

use cubecl::prelude::*;

use super::count::{ElementRead, elements_per_vector};
use super::plan::{CompactionPlan, CubeScan};
use super::tile::TileShape;

/// The tile geometry of a compaction, and the address type of its kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Geometry {
    pub shape: TileShape,
    pub tiles: usize,
    /// Mask words: `words` per unit of every tile (at least one).
    pub mask_len: usize,
    /// Wide enough for every index the kernels form ([`Geometry::new`]).
    pub address: AddressType,
}

impl Geometry {
    /// The runs the count kernel counts and the scan offsets: one per tile with planes, one per
    /// unit of every tile without.
    pub fn runs(&self) -> usize {
        if self.shape.planes {
            self.tiles
        } else {
            self.tiles * self.shape.cube_size
        }
    }

    /// The geometry of `len` elements with `width` coordinates each, held in `scalars` scalars
    /// read in vectors of `vector` (elements as `read.element_bits` says), laid out by `plan`.
    pub fn new(
        len: usize,
        width: usize,
        (scalars, vector): (usize, usize),
        read: ElementRead,
        plan: CompactionPlan,
    ) -> Self {
        let lanes = elements_per_vector(vector, read.element_bits);
        let tiles = (scalars / vector).div_ceil(plan.tile_vectors());
        let words = plan.per_unit.div_ceil(32 / lanes);
        let mask_len = (tiles * words * plan.cube_size).max(1);
        // The kernels form indices past the input's end too: a last, partial tile still
        // spans a whole tile of vectors (the count) and of elements (the write).
        let padded = tiles * plan.tile_vectors() * vector.max(lanes);
        let largest = [len, scalars, len.saturating_mul(width), mask_len, padded]
            .into_iter()
            .max()
            .unwrap_or(0);
        Self {
            shape: TileShape {
                cube_size: plan.cube_size,
                per_unit: plan.per_unit,
                lanes,
                words,
                planes: plan.scan == CubeScan::Planes,
            },
            tiles,
            mask_len,
            address: AddressType::from_len(largest),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const READ_F32: ElementRead = ElementRead {
        ignore_sign: true,
        element_bits: 0,
    };

    /// The address type covers every index the kernels form, not only the buffers' lengths:
    /// just under 2^32 elements, the last tile's padding runs past 2^32.
    #[test]
    fn the_address_type_covers_the_last_tiles_padding() {
        let plan = CompactionPlan::new(CubeScan::Planes);
        let len = (u32::MAX - 3) as usize;
        let geometry = Geometry::new(len, 1, (len, 4), READ_F32, plan);
        assert!(geometry.tiles * plan.tile_vectors() * 4 > u32::MAX as usize);
        assert_eq!(geometry.address, AddressType::U64);
        // A whole number of tiles below 2^32 keeps 32-bit addresses.
        let len = 1 << 24;
        assert_eq!(
            Geometry::new(len, 1, (len, 4), READ_F32, plan).address,
            AddressType::U32
        );
        // Coordinates wider than one column count too.
        let len = 1 << 31;
        assert_eq!(
            Geometry::new(len, 3, (len, 4), READ_F32, plan).address,
            AddressType::U64
        );
    }
}
