//! The write of step 3 where the runtime has plane operations (GPUs): each plane walks its run
//! of the tile in steps of neighbouring vectors and places them with plane scans, so that
//! neighbouring units store neighbouring rows.

use cubecl::prelude::*;

use super::scan::{plane_geometry, planes_before};
use super::tile::{TileLayout, TileShape, tile_bits};
use super::write::{element_row, store_row, unravel, write_step_rows};

/// The write where the runtime has planes: each plane takes a contiguous run of the tile in
/// [`PlaneSteps`], reads the units' bits from the mask and finds their rows with plane scans,
/// two steps per scan. A step's rows are one contiguous range of the output, so neighbouring
/// units store to neighbouring rows. The tile's density (from its offsets, the same in the
/// whole cube, read before the mask, so the mask is read once) picks the step:
/// - dense tiles (more than a quarter of the elements set): one vector per unit and step; a
///   full plane writes them with ballots, one element per unit at a time, so every store is
///   coalesced ([`PlaneSteps::write_ballots`]); a partial plane stores a run of at most `lanes`
///   rows per unit, close together;
/// - sparse tiles: up to 8 elements per unit and step (2 vectors of 4 lanes for f32), half the
///   plane scans, which dominate the kernel when few rows are written;
/// - very sparse tiles (at most one element in 16 set): up to 32 elements per unit and step (8
///   vectors for f32), a quarter of the sparse tiles' scans: 16 vectors per unit take one.
///
/// Two barriers per tile: one for the planes' geometry, one for the planes' totals.
#[cube]
pub(super) fn write_tile_planes<O: Int>(
    mask: &[u32],
    tile_offsets: &[u32],
    coordinates: &mut [O],
    values: &[O],
    dims: &Sequence<u32>,
    layout: &TileLayout,
    #[comptime] shape: TileShape,
    #[comptime] gather: bool,
) {
    let cube_size = comptime!(shape.cube_size);
    let per_unit = comptime!(shape.per_unit);
    let lanes = comptime!(shape.lanes);
    let tile = layout.tile;
    let geometry = plane_geometry(cube_size);
    let steps = PlaneSteps {
        units: geometry.units as usize,
        lane: geometry.lane as usize,
        // The plane's run of `units * per_unit` vectors, from the tile's first.
        run: geometry.first as usize * per_unit,
        first_vector: tile * cube_size * per_unit,
        layout: TileLayout {
            tile,
            tiles: layout.tiles,
            vectors: layout.vectors,
            rows: layout.rows,
        },
    };
    // The tile's density (from its offsets, the same in the whole cube) picks the step before
    // any mask word is read, so each tile reads its mask once.
    let group = comptime!((8 / lanes).clamp(1, per_unit));
    let wide_group = comptime!((32 / lanes).clamp(1, per_unit));
    let mut tile_offset = 0u32;
    let mut sparse = false;
    let mut very_sparse = false;
    if tile < layout.tiles {
        tile_offset = tile_offsets[tile];
        let in_tile = tile_offsets[tile + 1] - tile_offset;
        sparse = in_tile as usize * 4 <= comptime!(cube_size * per_unit * lanes);
        very_sparse = in_tile as usize * 16 <= comptime!(cube_size * per_unit * lanes);
    }
    let mut very_sparse_bits = Array::<u32>::new(comptime!(per_unit.div_ceil(wide_group)));
    let mut sparse_bits = Array::<u32>::new(comptime!(per_unit.div_ceil(group)));
    let mut dense_bits = Array::<u32>::new(per_unit);
    let mut total = 0u32;
    if very_sparse {
        total += steps.load(&mut very_sparse_bits, mask, wide_group, shape);
    } else if sparse {
        total += steps.load(&mut sparse_bits, mask, group, shape);
    } else {
        total += steps.load(&mut dense_bits, mask, 1usize, shape);
    }
    // Rows before this plane's first: the tile's offset, then the planes before this one.
    let row = (tile_offset + planes_before(plane_sum(total), cube_size)) as usize;
    if very_sparse {
        steps.write::<O>(
            &very_sparse_bits,
            coordinates,
            values,
            row,
            dims,
            wide_group,
            shape,
            gather,
        );
    } else if sparse {
        steps.write::<O>(
            &sparse_bits,
            coordinates,
            values,
            row,
            dims,
            group,
            shape,
            gather,
        );
    } else if geometry.units == PLANE_DIM {
        // A full plane (the same answer in every unit of the plane) numbers its units as the
        // hardware does, which the ballots need.
        steps.write_ballots::<O>(&dense_bits, coordinates, values, row, dims, shape, gather);
    } else {
        steps.write::<O>(
            &dense_bits,
            coordinates,
            values,
            row,
            dims,
            1usize,
            shape,
            gather,
        );
    }
}

/// How a plane walks its run of the tile in steps: each step gives each active unit `group`
/// consecutive vectors, neighbouring units neighbouring groups, so that a step's rows are one
/// contiguous range of the output.
#[derive(CubeType, Clone, Copy)]
struct PlaneSteps {
    /// Active units in the plane.
    units: usize,
    /// The unit's position among them.
    lane: usize,
    /// The plane's first vector, from the tile's first.
    run: usize,
    /// The tile's first vector.
    first_vector: usize,
    /// Where the cube stands.
    layout: TileLayout,
}

#[cube]
impl PlaneSteps {
    /// The unit's first vector in step `step`, from the tile's first.
    fn vector(
        &self,
        #[comptime] step: usize,
        #[comptime] group: usize,
        #[comptime] per_unit: usize,
    ) -> usize {
        let in_step = comptime!(group.min(per_unit - step * group));
        self.run + comptime!(step * group) * self.units + self.lane * in_step
    }

    /// Loads the unit's bits in each step of `group` vectors (`lanes` bits per vector, in
    /// element order) from the mask into `bits`, and returns how many are set.
    fn load(
        &self,
        bits: &mut Array<u32>,
        mask: &[u32],
        #[comptime] group: usize,
        #[comptime] shape: TileShape,
    ) -> u32 {
        let per_unit = comptime!(shape.per_unit);
        let lanes = comptime!(shape.lanes);
        let mut total = 0u32;
        #[unroll]
        for step in 0..comptime!(per_unit.div_ceil(group)) {
            let in_step = comptime!(group.min(per_unit - step * group));
            let q = self.vector(step, group, per_unit);
            let mut b = 0u32;
            #[unroll]
            for j in 0..in_step {
                let layout = &self.layout;
                if layout.tile < layout.tiles && self.first_vector + q + j < layout.vectors {
                    b |=
                        tile_bits(mask, layout.tile, q + j, shape) << comptime!((j * lanes) as u32);
                }
            }
            bits[step] = b;
            total += b.count_ones();
        }
        total
    }

    /// Writes the rows of `bits` (from [`PlaneSteps::load`] with the same `group`) from row
    /// `row`, the plane's first, on. Two steps' counts per plane scan, in 16-bit fields: a
    /// step holds at most 32 bits, so a field sums at most `32 * PLANE_DIM <= 4096` and never
    /// carries into the next.
    // The buffers and the comptime layout are arguments: `self` holds only the plane's place.
    #[allow(clippy::too_many_arguments)]
    fn write<O: Int>(
        &self,
        bits: &Array<u32>,
        coordinates: &mut [O],
        values: &[O],
        row: usize,
        dims: &Sequence<u32>,
        #[comptime] group: usize,
        #[comptime] shape: TileShape,
        #[comptime] gather: bool,
    ) {
        let per_unit = comptime!(shape.per_unit);
        let lanes = comptime!(shape.lanes);
        let rows = self.layout.rows;
        let steps = comptime!(per_unit.div_ceil(group));
        let mut row = row;
        #[unroll]
        for pair in 0..comptime!(steps.div_ceil(2)) {
            let step = comptime!(2 * pair);
            let mut packed = bits[step].count_ones();
            if comptime!(step + 1 < steps) {
                packed |= bits[step + 1].count_ones() << 16;
            }
            let before = plane_exclusive_sum(packed);
            let in_rows = plane_sum(packed);
            let q = self.vector(step, group, per_unit);
            write_step_rows::<O>(
                coordinates,
                values,
                bits[step],
                (self.first_vector + q) * lanes,
                row + (before & 0xFFFF) as usize,
                rows,
                dims,
                gather,
            );
            row += (in_rows & 0xFFFF) as usize;
            if comptime!(step + 1 < steps) {
                let q = self.vector(step + 1, group, per_unit);
                write_step_rows::<O>(
                    coordinates,
                    values,
                    bits[step + 1],
                    (self.first_vector + q) * lanes,
                    row + (before >> 16) as usize,
                    rows,
                    dims,
                    gather,
                );
                row += (in_rows >> 16) as usize;
            }
        }
    }

    /// The dense write of a full plane: [`PlaneSteps::write`] with one vector per step, but with
    /// one element per unit at a time, so that every store is coalesced. A step's `units *
    /// lanes` elements go in `lanes` rounds of one element per unit (element `c * PLANE_DIM +
    /// UNIT_POS_PLANE` of the step in round `c`): each unit takes its element's bit from the
    /// unit that loaded it (a plane shuffle), one plane ballot of the bits numbers the set
    /// elements, and the units holding one store to consecutive rows. No loop runs per set bit
    /// and no scan per step: the ballot's count moves every unit's row alike.
    ///
    /// Needs a full plane (`units == PLANE_DIM`, so a unit's position is its hardware lane) and
    /// `bits` loaded with a group of one vector. Each round's shuffle and ballot follow the
    /// previous round's store, which only some units take: the plane must have reconverged by
    /// then. CubeCL's CUDA target passes `__activemask()` to both, so this holds only where the
    /// compiler reconverges after the store's branch; an untested assumption on CUDA.
    // The buffers and the comptime layout are arguments: `self` holds only the plane's place.
    #[allow(clippy::too_many_arguments)]
    fn write_ballots<O: Int>(
        &self,
        bits: &Array<u32>,
        coordinates: &mut [O],
        values: &[O],
        row: usize,
        dims: &Sequence<u32>,
        #[comptime] shape: TileShape,
        #[comptime] gather: bool,
    ) {
        let width = comptime!(dims.len());
        let per_unit = comptime!(shape.per_unit);
        let lanes = comptime!(shape.lanes);
        let rows = self.layout.rows;
        let lane = UNIT_POS_PLANE;
        let below = lanes_below(lane);
        let mut row = row;
        #[unroll]
        for step in 0..per_unit {
            // The step's first element: unit 0's vector in this step.
            let first = (self.first_vector + self.run + comptime!(step) * self.units) * lanes;
            #[unroll]
            for round in 0..lanes {
                let element = comptime!(round as u32) * PLANE_DIM + lane;
                let owner_bits = plane_shuffle(bits[step], element / comptime!(lanes as u32));
                let set = ((owner_bits >> (element % comptime!(lanes as u32))) & 1u32) == 1u32;
                let rank = BallotRank::new(plane_ballot(set), &below);
                let at = row + rank.before as usize;
                if set && at < rows {
                    let flat = first + element as usize;
                    if comptime!(width == 1) {
                        coordinates[at] = element_row::<O>(values, flat, gather);
                    } else {
                        let coords = unravel(u32::cast_from(flat), dims, width);
                        store_row::<O>(coordinates, at, &coords, width);
                    }
                }
                row += rank.total as usize;
            }
        }
    }
}

/// Where a lane stands in a plane ballot (bit `l` of word `l / 32` set for each lane `l` that
/// voted true).
#[derive(CubeType, Clone, Copy)]
struct BallotRank {
    /// The lanes below this one that voted true.
    before: u32,
    /// The lanes that voted true.
    total: u32,
}

#[cube]
impl BallotRank {
    /// The rank in `ballot` of the lane whose [`lanes_below`] is `below`.
    fn new(ballot: Vector<u32, Const<4>>, below: &Array<u32>) -> BallotRank {
        let mut before = 0u32;
        let mut total = 0u32;
        #[unroll]
        for w in 0..4usize {
            let votes = ballot.extract(w);
            before += (votes & below[w]).count_ones();
            total += votes.count_ones();
        }
        BallotRank { before, total }
    }
}

/// The ballot bits of the lanes below `lane`, word by word (bit `l` of word `l / 32` stands for
/// lane `l`): computed once per unit, used by every [`BallotRank`] it takes.
#[cube]
fn lanes_below(lane: u32) -> Array<u32> {
    let word = lane / 32;
    let partial = (1u32 << (lane % 32)) - 1;
    let mut below = Array::<u32>::new(4usize);
    #[unroll]
    for w in 0..4usize {
        let index = comptime!(w as u32);
        below[w] = select(
            index < word,
            0xFFFF_FFFFu32,
            select(index == word, partial, 0u32),
        );
    }
    below
}
