//! The write of step 3 where the runtime has plane operations (GPUs): each plane walks its run
//! of the tile in steps of neighbouring vectors and places them with plane scans, so that
//! neighbouring units store neighbouring rows.

use cubecl::prelude::*;

use super::rows::{element_row, store_row, unravel, write_step_rows};
use super::scan::{plane_geometry, planes_before};
use super::tile::{TileLayout, TileShape, tile_bits};

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
/// Three barriers per tile: the tile's density read as a uniform value, the planes' geometry,
/// the planes' totals.
///
/// Every plane operation runs with the whole plane active: none follows a branch on a per-lane
/// value (loads are guarded by selects, not branches), and each write runs all of its plane
/// scans and ballots before its first store ([`PlaneSteps::write`]) or makes its stores
/// branch-free ([`PlaneSteps::write_ballots`]). CUDA passes `__activemask()` to plane
/// intrinsics and does not promise that lanes reconverge after a branch, so the kernel must not
/// rely on it.
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
    let mut in_tile = Shared::<[u32]>::new_slice(1usize);
    if tile < layout.tiles {
        tile_offset = tile_offsets[tile];
        if UNIT_POS == 0 {
            in_tile[0] = tile_offsets[tile + 1] - tile_offset;
        }
    }
    // Through workgroup memory, so WGSL's uniformity analysis knows the branches below (which
    // hold plane operations) are the same in the whole cube, as browsers require.
    let in_tile = workgroup_uniform_load(&in_tile[0]) as usize;
    let sparse = tile < layout.tiles && in_tile * 4 <= comptime!(cube_size * per_unit * lanes);
    let very_sparse =
        tile < layout.tiles && in_tile * 16 <= comptime!(cube_size * per_unit * lanes);
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
        let step = comptime!((wide_group, shape, gather));
        steps.write::<O>(&very_sparse_bits, coordinates, values, row, dims, step);
    } else if sparse {
        let step = comptime!((group, shape, gather));
        steps.write::<O>(&sparse_bits, coordinates, values, row, dims, step);
    } else if geometry.units == PLANE_DIM {
        // A full plane (the same answer in every unit of the plane) numbers its units as the
        // hardware does, which the ballots need.
        let step = comptime!((1usize, shape, gather));
        steps.write_ballots::<O>(&dense_bits, coordinates, values, row, dims, step);
    } else {
        let step = comptime!((1usize, shape, gather));
        steps.write::<O>(&dense_bits, coordinates, values, row, dims, step);
    }
}

/// What a plane's write stores, fixed at compile time: `group` vectors per unit and step, the
/// tile's shape, and whether rows hold gathered values (a compress) or coordinates.
type StepWrite = (usize, TileShape, bool);

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
    /// element order) from the mask into `bits`, and returns how many are set. Vectors past the
    /// input's last read vector 0 of the tile and count as zero: a select, not a branch, so the
    /// plane scans that follow run with the whole plane.
    fn load(
        &self,
        bits: &mut Array<u32>,
        mask: &[u32],
        #[comptime] group: usize,
        #[comptime] shape: TileShape,
    ) -> u32 {
        let per_unit = comptime!(shape.per_unit);
        let lanes = comptime!(shape.lanes);
        let layout = &self.layout;
        // The tile is the cube's: the same in every unit.
        let in_tiles = layout.tile < layout.tiles;
        let mut total = 0u32;
        #[unroll]
        for step in 0..comptime!(per_unit.div_ceil(group)) {
            let in_step = comptime!(group.min(per_unit - step * group));
            let q = self.vector(step, group, per_unit);
            let mut b = 0u32;
            if in_tiles {
                #[unroll]
                for j in 0..in_step {
                    let inside = self.first_vector + q + j < layout.vectors;
                    let vector_bits = tile_bits(mask, layout.tile, select(inside, q + j, 0), shape);
                    b |= select(inside, vector_bits, 0u32) << comptime!((j * lanes) as u32);
                }
            }
            bits[step] = b;
            total += b.count_ones();
        }
        total
    }

    /// Writes the rows of `bits` (from [`PlaneSteps::load`] with the same `group`) from row
    /// `row`, the plane's first, on. Every plane scan comes first, two steps' counts per scan
    /// in 16-bit fields (a step holds at most 32 bits, so a field sums at most
    /// `32 * PLANE_DIM <= 4096` and never carries into the next); then each step's stores,
    /// whose loops run per lane, with no plane operation after them.
    fn write<O: Int>(
        &self,
        bits: &Array<u32>,
        coordinates: &mut [O],
        values: &[O],
        row: usize,
        dims: &Sequence<u32>,
        #[comptime] step_write: StepWrite,
    ) {
        let group = comptime!(step_write.0);
        let per_unit = comptime!(step_write.1.per_unit);
        let lanes = comptime!(step_write.1.lanes);
        let steps = comptime!(per_unit.div_ceil(group));
        let rows = self.layout.rows;
        // Each step's first row for this unit.
        let mut starts = Array::<usize>::new(steps);
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
            starts[step] = row + (before & 0xFFFF) as usize;
            row += (in_rows & 0xFFFF) as usize;
            if comptime!(step + 1 < steps) {
                starts[step + 1] = row + (before >> 16) as usize;
                row += (in_rows >> 16) as usize;
            }
        }
        #[unroll]
        for step in 0..steps {
            let q = self.vector(step, group, per_unit);
            write_step_rows::<O>(
                coordinates,
                values,
                bits[step],
                (self.first_vector + q) * lanes,
                starts[step],
                rows,
                dims,
                comptime!(step_write.2),
            );
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
    /// The stores take no branch on a per-lane value, so every shuffle and ballot of the next
    /// round runs with the whole plane: a unit whose element is not set stores the round's last
    /// set element into its row, the same value to the same address as the unit that holds it.
    /// A round with no set element, or whose rows would pass the output's end (never, with the
    /// scan's offsets), stores nothing; both conditions are the same in the whole plane.
    ///
    /// Needs a full plane (`units == PLANE_DIM`, so a unit's position is its hardware lane) and
    /// `bits` loaded with a group of one vector.
    fn write_ballots<O: Int>(
        &self,
        bits: &Array<u32>,
        coordinates: &mut [O],
        values: &[O],
        row: usize,
        dims: &Sequence<u32>,
        #[comptime] step_write: StepWrite,
    ) {
        let width = comptime!(dims.len());
        let per_unit = comptime!(step_write.1.per_unit);
        let lanes = comptime!(step_write.1.lanes);
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
                let round_first = comptime!(round as u32) * PLANE_DIM;
                let element = round_first + lane;
                let owner_bits = plane_shuffle(bits[step], element / comptime!(lanes as u32));
                let set = ((owner_bits >> (element % comptime!(lanes as u32))) & 1u32) == 1u32;
                let rank = BallotRank::new(plane_ballot(set), &below);
                let total = rank.total as usize;
                if total > 0 && row + total <= rows {
                    let stored = select(set, element, round_first + rank.last);
                    let at = row + select(set, rank.before, rank.total - 1) as usize;
                    let flat = first + stored as usize;
                    if comptime!(width == 1) {
                        coordinates[at] = element_row::<O>(values, flat, comptime!(step_write.2));
                    } else {
                        let coords = unravel(u32::cast_from(flat), dims, width);
                        store_row::<O>(coordinates, at, &coords, width);
                    }
                }
                row += total;
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
    /// The highest lane that voted true (0 when none did).
    last: u32,
}

#[cube]
impl BallotRank {
    /// The rank in `ballot` of the lane whose [`lanes_below`] is `below`.
    fn new(ballot: Vector<u32, Const<4>>, below: &Array<u32>) -> BallotRank {
        let mut before = 0u32;
        let mut total = 0u32;
        let mut last = 0u32;
        #[unroll]
        for w in 0..4usize {
            let votes = ballot.extract(w);
            before += (votes & below[w]).count_ones();
            total += votes.count_ones();
            let highest = comptime!((w * 32 + 31) as u32) - votes.leading_zeros();
            last = select(votes != 0, highest, last);
        }
        BallotRank {
            before,
            total,
            last,
        }
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
