//! The `#[cube]` kernels of the compaction. All of them are launched with cubes of
//! `cube_size` units in one dimension.
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
//!
//! The write kernels read the mask, never the input again, so the input's bytes cross the memory
//! bus once.

use cubecl::prelude::*;

use super::scan::{cube_inclusive_sum, plane_geometry, planes_before, scan_rank};

/// The lanes of `value` that are non-zero, as bits `0..lanes` of a `u32`. With `ignore_sign`
/// (float inputs read as unsigned bits) the sign bit is dropped first, so `-0.0` is zero and NaN
/// is not.
#[cube]
fn non_zero_bits<I: Int, N: Size>(value: Vector<I, N>, #[comptime] ignore_sign: bool) -> u32 {
    let zero = Vector::<I, N>::new(I::from_int(0));
    let flags = if comptime!(ignore_sign) {
        Vector::<u32, N>::cast_from((value << Vector::<I, N>::new(I::from_int(1))).not_equal(&zero))
    } else {
        Vector::<u32, N>::cast_from(value.not_equal(&zero))
    };
    let mut bits = 0u32;
    #[unroll]
    for lane in 0..value.vector_size() {
        bits |= flags.extract(lane) << comptime!(lane as u32);
    }
    bits
}

/// Elements per input vector of `vector` lanes: one per lane for a typed read
/// (`element_bits == 0`), `32 / element_bits` per 32-bit lane for 8- and 16-bit elements read
/// as words, one per two lanes for 64-bit elements read as words.
pub(crate) fn elements_per_vector(vector: usize, element_bits: usize) -> usize {
    match element_bits {
        0 => vector,
        64 => vector / 2,
        bits => vector * (32 / bits),
    }
}

/// The elements of `value` that are non-zero, as bits `0..elements_per_vector` of a `u32`.
/// `element_bits` 0 reads each lane as one element of its own type ([`non_zero_bits`]); 8 or 16
/// reads each 32-bit lane as `32 / element_bits` elements, lowest bits first (little-endian
/// storage); 64 reads each pair of 32-bit lanes as one element, low word first. With
/// `ignore_sign` each element's top bit is dropped.
#[cube]
fn vector_bits<I: Int, N: Size>(
    value: Vector<I, N>,
    #[comptime] ignore_sign: bool,
    #[comptime] element_bits: usize,
) -> u32 {
    let mut bits = 0u32;
    let vector = value.vector_size();
    if comptime!(element_bits == 0) {
        bits = non_zero_bits::<I, N>(value, ignore_sign);
    } else if comptime!(element_bits == 64) {
        let high_mask = comptime!(if ignore_sign {
            0x7FFF_FFFFu32
        } else {
            u32::MAX
        });
        #[unroll]
        for e in 0..comptime!(vector / 2) {
            let low = u32::cast_from(value.extract(comptime!(2 * e)));
            let high = u32::cast_from(value.extract(comptime!(2 * e + 1)));
            bits |= select((low | (high & high_mask)) != 0, 1u32, 0u32) << comptime!(e as u32);
        }
    } else {
        let per_lane = comptime!(32 / element_bits);
        let field = comptime!(((1u64 << (element_bits - usize::from(ignore_sign))) - 1) as u32);
        #[unroll]
        for lane in 0..vector {
            let word = u32::cast_from(value.extract(lane));
            #[unroll]
            for s in 0..per_lane {
                let element = (word >> comptime!((s * element_bits) as u32)) & field;
                bits |= select(element != 0, 1u32, 0u32) << comptime!((lane * per_lane + s) as u32);
            }
        }
    }
    bits
}

/// The bits of vector `index` (of `lanes` elements) that stand for elements before `len`: all
/// of them but in the last, partly filled vector of an input of 8- or 16-bit elements read as
/// words, whose last word also holds bytes past the input.
#[cube]
fn valid_bits(index: usize, len: usize, #[comptime] lanes: usize) -> u32 {
    let first = index * lanes;
    let mut valid = 0u32;
    if first < len {
        let left = len - first;
        valid = comptime!(((1u64 << lanes) - 1) as u32);
        if left < lanes {
            valid = (1u32 << left as u32) - 1;
        }
    }
    valid
}

/// The non-zero bits of vector `q` of tile `tile` (`q` counts from the tile's first vector),
/// read from the mask the count kernel wrote.
#[cube]
fn tile_bits(
    mask: &[u32],
    tile: usize,
    q: usize,
    #[comptime] lanes: usize,
    #[comptime] words: usize,
    #[comptime] cube_size: usize,
) -> u32 {
    let row = q / cube_size;
    let slot = q % cube_size;
    let bit = row * lanes;
    let word = mask[(tile * words + bit / 32) * cube_size + slot];
    (word >> (bit % 32) as u32) & comptime!(((1u64 << lanes) - 1) as u32)
}

/// The coordinates of flat index `flat` in the dimensions `dims` (`width` of them): one
/// division per axis but the first.
#[cube]
fn unravel(flat: u32, dims: &Sequence<u32>, #[comptime] width: usize) -> Array<u32> {
    let mut coords = Array::<u32>::new(width);
    let mut rest = flat;
    #[unroll]
    for d in 0..width {
        let axis = comptime!(width - 1 - d);
        if comptime!(axis == 0) {
            coords[axis] = rest;
        } else {
            let size = dims[axis];
            coords[axis] = rest % size;
            rest /= size;
        }
    }
    coords
}

/// Moves `coords` to the next flat index without dividing: adds one to the last axis and
/// carries on wrap.
#[cube]
fn step_to_next(coords: &mut Array<u32>, dims: &Sequence<u32>, #[comptime] width: usize) {
    let mut carry = 1u32;
    #[unroll]
    for d in 0..width {
        let axis = comptime!(width - 1 - d);
        let next = coords[axis] + carry;
        let wrap = next == dims[axis];
        coords[axis] = select(wrap, 0u32, next);
        carry = select(wrap, carry, 0u32);
    }
}

/// Stores the `width` coordinates `coords` as row `row` of `coordinates`.
#[cube]
fn store_row<O: Int>(
    coordinates: &mut [O],
    row: usize,
    coords: &Array<u32>,
    #[comptime] width: usize,
) {
    let base = row * width;
    #[unroll]
    for d in 0..width {
        coordinates[base + d] = O::cast_from(coords[d]);
    }
}

/// Writes the coordinates of the set bits of `run` (`words` words; bit `b` of word `m` is
/// element `first + 32 * m + b`) into rows `row`, `row + 1`, … of `coordinates`. Every store
/// is guarded by `rows` (the number of rows the buffer holds), so no scan result can move a
/// store outside it.
///
/// The loop visits set bits only: CPU drivers such as lavapipe run both sides of a branch under
/// a mask, so a loop over every element would cost a (scalarised) store per element whatever
/// the density, while this one runs as often as the densest run of the SIMD group. `first` is
/// unravelled once; each further element steps from the previous one with carries.
#[allow(clippy::too_many_arguments)]
#[cube]
fn write_run_rows<O: Int>(
    coordinates: &mut [O],
    run: &Array<u32>,
    first: usize,
    row: usize,
    rows: usize,
    dims: &Sequence<u32>,
    #[comptime] width: usize,
    #[comptime] words: usize,
) {
    let mut coords = unravel(u32::cast_from(first), dims, width);
    let mut at = 0u32;
    let mut next = row;
    #[unroll]
    for m in 0..words {
        let mut remaining = run[m];
        while remaining != 0 {
            let position = comptime!((m * 32) as u32) + remaining.trailing_zeros();
            if next < rows {
                if comptime!(width == 1) {
                    coordinates[next] = O::cast_from(first + position as usize);
                } else {
                    while at < position {
                        step_to_next(&mut coords, dims, width);
                        at += 1;
                    }
                    store_row::<O>(coordinates, next, &coords, width);
                }
            }
            next += 1;
            remaining &= remaining - 1;
        }
    }
}

/// Writes `fill` into every padding row (at or past the number of non-zero elements,
/// `tile_offsets[tiles]`) whose index falls in tile `tile`'s range of `tile_elements`
/// elements. The cube's units write consecutive elements, so the stores are contiguous.
#[allow(clippy::too_many_arguments)]
#[cube]
fn fill_tile_padding<O: Int>(
    coordinates: &mut [O],
    tile_offsets: &[u32],
    fill: O,
    tile: usize,
    tiles: usize,
    rows: usize,
    #[comptime] tile_elements: usize,
    #[comptime] width: usize,
    #[comptime] cube_size: usize,
) {
    let total = tile_offsets[tiles] as usize;
    let mut first = tile * tile_elements;
    let mut end = first + tile_elements;
    if first < total {
        first = total;
    }
    if end > rows {
        end = rows;
    }
    if first < end {
        let stop = end * width;
        let mut position = first * width + UNIT_POS as usize;
        while position < stop {
            coordinates[position] = fill;
            position += cube_size;
        }
    }
}

/// Vector `index` of `input`, or zeros at or past `vectors`.
#[cube]
fn load_or_zero<I: Int, N: Size>(
    input: &[Vector<I, N>],
    index: usize,
    vectors: usize,
) -> Vector<I, N> {
    let mut value = Vector::<I, N>::new(I::from_int(0));
    if index < vectors {
        value = input[index];
    }
    value
}

/// Step 1: `tile_counts[t]` = number of non-zero elements in tile `t`, and tile `t`'s part of
/// the mask (see the module documentation). `vectors` counts input vectors and `len` elements;
/// `element_bits` says how a vector holds them (see `vector_bits`): typed, or 32-bit words
/// holding 8-, 16- or 64-bit elements for runtimes that cannot bind those types, where the
/// last word of an 8- or 16-bit input may hold bytes past element `len - 1`, never counted.
#[allow(clippy::too_many_arguments)]
#[cube(launch_unchecked, address_type = "dynamic")]
pub fn nonzero_tile_counts<I: Int, N: Size>(
    input: &[Vector<I, N>],
    tile_counts: &mut [u32],
    mask: &mut [u32],
    vectors: usize,
    tiles: usize,
    len: usize,
    #[comptime] ignore_sign: bool,
    #[comptime] element_bits: usize,
    #[comptime] cube_size: usize,
    #[comptime] planes: bool,
    #[comptime] per_unit: usize,
    #[comptime] words: usize,
    #[define(I)] _input_type: ElemType,
) {
    let tile = CUBE_POS;
    let vector = N::value();
    let lanes = comptime!(elements_per_vector(vector, element_bits));
    let slot = UNIT_POS as usize;
    // The unit's vectors (see the module documentation): a row apart with planes, consecutive
    // without.
    let stride = comptime!(if planes { cube_size } else { 1 });
    let first = if comptime!(planes) {
        slot
    } else {
        slot * per_unit
    };
    let base = tile * cube_size * per_unit + first;
    // With planes (GPUs) every load is issued before any bit is tested, so a unit has
    // `per_unit` loads in flight; every tile but the last is full, and its loads need no guard
    // (one branch per cube). Without (CPU drivers, which run a SIMD group's loads lane by lane
    // and gain nothing from loads in flight), each vector is tested as soon as it is loaded,
    // which holds one vector per lane where the other way holds `per_unit`: at 2^24 f32 on
    // lavapipe the pass took 20 ms instead of 25.
    // The vectors held with planes (one unused slot without).
    let mut values = Array::<Vector<I, N>>::new(comptime!(if planes { per_unit } else { 1 }));
    if comptime!(planes) {
        if (tile + 1) * cube_size * per_unit <= vectors {
            #[unroll]
            for k in 0..per_unit {
                values[k] = input[base + k * stride];
            }
        } else {
            #[unroll]
            for k in 0..per_unit {
                values[k] = load_or_zero::<I, N>(input, base + k * stride, vectors);
            }
        }
    }
    let mut count = 0u32;
    if tile < tiles {
        #[unroll]
        for m in 0..words {
            let mut word = 0u32;
            #[unroll]
            for r in 0..comptime!(32 / lanes) {
                let k = comptime!(m * (32 / lanes) + r);
                if comptime!(k < per_unit) {
                    let value = if comptime!(planes) {
                        values[k]
                    } else {
                        load_or_zero::<I, N>(input, base + k * stride, vectors)
                    };
                    let mut bits = vector_bits::<I, N>(value, ignore_sign, element_bits);
                    if comptime!(element_bits == 8 || element_bits == 16) {
                        bits &= valid_bits(base + k * stride, len, lanes);
                    }
                    word |= bits << comptime!((r * lanes) as u32);
                }
            }
            count += word.count_ones();
            mask[(tile * words + m) * cube_size + slot] = word;
        }
    }
    let rank = scan_rank(cube_size, planes) as usize;
    let total = cube_inclusive_sum(count, cube_size, planes);
    if tile < tiles && rank == cube_size - 1 {
        tile_counts[tile] = total;
    }
}

/// Tiles each unit of the staged tile scan holds per pass: a pass stages `cube_size` times as
/// many counts in shared memory (8 KiB at 256 units, under WebGPU's 16 KiB).
const STAGED_PER_UNIT: usize = 8;

// `#[cube]` code has ranges but no iterator adapters.
#[allow(clippy::needless_range_loop)]
/// Step 2, one cube: `tile_offsets[t]` = sum of `tile_counts[..t]`, `tile_offsets[tiles]` and
/// `count[0]` = the sum of all of them.
///
/// With `planes` (GPUs) the cube stages `cube_size * 8` counts at a time in shared memory with
/// coalesced loads, every load of a pass in flight at once, scans them there and stores the
/// offsets coalesced too (see `scan_tiles_staged`); `chunk` is unused then. Without (CPU
/// drivers, where a unit's sequential loop is cheap and barriers are not), each unit scans a
/// contiguous chunk of `chunk` tiles straight from memory.
#[cube(launch_unchecked, address_type = "dynamic")]
pub fn nonzero_scan_tiles<O: Int>(
    tile_counts: &[u32],
    tile_offsets: &mut [u32],
    count: &mut [O],
    tiles: usize,
    chunk: usize,
    #[comptime] cube_size: usize,
    #[comptime] planes: bool,
    #[define(O)] _output_type: ElemType,
) {
    if comptime!(planes) {
        scan_tiles_staged::<O>(tile_counts, tile_offsets, count, tiles, cube_size);
    } else {
        scan_tiles_by_chunks::<O>(tile_counts, tile_offsets, count, tiles, chunk, cube_size);
    }
}

/// The tile scan with plane operations, in passes of `cube_size * STAGED_PER_UNIT` tiles.
///
/// A pass loads its counts coalesced (unit `u` loads tiles `u`, `u + cube_size`, ...; all
/// `STAGED_PER_UNIT` loads issued before the barrier) into shared memory; then the unit of scan
/// rank `r` adds up the `STAGED_PER_UNIT` consecutive counts at `r * STAGED_PER_UNIT`, one cube
/// scan of those sums gives each run its offset, the unit rewrites its run as exclusive offsets
/// (plus the passes before), and the cube stores the pass back coalesced. The per-unit
/// sequential loops read shared memory, not global memory: the sequential scan reading device
/// memory, one dependent load after another, took 0.07 ms at 16384 tiles on an H100.
#[allow(clippy::needless_range_loop)]
#[cube]
fn scan_tiles_staged<O: Int>(
    tile_counts: &[u32],
    tile_offsets: &mut [u32],
    count: &mut [O],
    tiles: usize,
    #[comptime] cube_size: usize,
) {
    let per_unit = comptime!(STAGED_PER_UNIT);
    let span = comptime!(cube_size * STAGED_PER_UNIT);
    let rank = scan_rank(cube_size, true) as usize;
    let unit = UNIT_POS as usize;
    let first = rank * per_unit;
    let mut staged = Shared::<[u32]>::new_slice(span);
    let mut pass_total = Shared::<[u32]>::new_slice(1usize);
    let mut carry = 0u32;
    let passes = (tiles + comptime!(span - 1)) / span;
    for pass in 0..passes {
        let base = pass * span;
        #[unroll]
        for i in 0..per_unit {
            let at = comptime!(i * cube_size) + unit;
            let mut value = 0u32;
            if base + at < tiles {
                value = tile_counts[base + at];
            }
            staged[at] = value;
        }
        sync_cube();
        let mut local = 0u32;
        #[unroll]
        for i in 0..per_unit {
            local += staged[first + i];
        }
        let inclusive = cube_inclusive_sum(local, cube_size, true);
        let mut running = carry + inclusive - local;
        #[unroll]
        for i in 0..per_unit {
            let value = staged[first + i];
            staged[first + i] = running;
            running += value;
        }
        if rank == comptime!(cube_size - 1) {
            pass_total[0] = running;
        }
        sync_cube();
        carry = pass_total[0];
        #[unroll]
        for i in 0..per_unit {
            let at = comptime!(i * cube_size) + unit;
            if base + at < tiles {
                tile_offsets[base + at] = staged[at];
            }
        }
        // The next pass overwrites `staged` and `pass_total` only after every unit is done
        // reading them.
        sync_cube();
    }
    if unit == 0 {
        tile_offsets[tiles] = carry;
        count[0] = O::cast_from(carry);
    }
}

/// The tile scan without plane operations: each unit scans a contiguous chunk of `chunk` tiles
/// straight from memory, around one cube scan of the chunks' totals.
#[allow(clippy::needless_range_loop)]
#[cube]
fn scan_tiles_by_chunks<O: Int>(
    tile_counts: &[u32],
    tile_offsets: &mut [u32],
    count: &mut [O],
    tiles: usize,
    chunk: usize,
    #[comptime] cube_size: usize,
) {
    let position = scan_rank(cube_size, false) as usize;
    let mut start = position * chunk;
    let mut end = start + chunk;
    if end > tiles {
        end = tiles;
    }
    if start > end {
        start = end;
    }
    let mut local = 0u32;
    for t in start..end {
        local += tile_counts[t];
    }
    let inclusive = cube_inclusive_sum(local, cube_size, false);
    let mut running = inclusive - local;
    for t in start..end {
        tile_offsets[t] = running;
        running += tile_counts[t];
    }
    if position == cube_size - 1 {
        tile_offsets[tiles] = inclusive;
        count[0] = O::cast_from(inclusive);
    }
}

/// Step 3: the coordinates of tile `CUBE_POS`'s non-zero elements, from the mask, and with
/// `has_fill` its share of the padding rows (every row at or past the total whose index falls
/// in the tile). `planes` picks the layout: with plane operations each plane writes contiguous
/// rows of neighbouring vectors (GPUs); without, each unit writes the rows of its own run of
/// consecutive vectors after one shared-memory scan (lavapipe).
///
/// `dims` holds the sizes of the last `width` dimensions of the input; row `r` of the output is
/// `coordinates[r * width..(r + 1) * width]` and `rows` is the number of rows it holds.
#[allow(clippy::too_many_arguments)]
#[cube(launch_unchecked, address_type = "dynamic")]
pub fn nonzero_write_coordinates<O: Int>(
    mask: &[u32],
    tile_offsets: &[u32],
    coordinates: &mut [O],
    dims: Sequence<u32>,
    fill: InputScalar,
    vectors: usize,
    tiles: usize,
    rows: usize,
    #[comptime] lanes: usize,
    #[comptime] words: usize,
    #[comptime] has_fill: bool,
    #[comptime] cube_size: usize,
    #[comptime] per_unit: usize,
    #[comptime] planes: bool,
    #[define(O)] _output_type: ElemType,
) {
    let width = comptime!(dims.len());
    let tile = CUBE_POS;
    let layout = TileLayout {
        tile,
        tiles,
        vectors,
        rows,
    };
    if comptime!(planes) {
        write_tile_planes::<O>(
            mask,
            tile_offsets,
            coordinates,
            &dims,
            &layout,
            width,
            lanes,
            words,
            cube_size,
            per_unit,
        );
    } else {
        write_tile_runs::<O>(
            mask,
            tile_offsets,
            coordinates,
            &dims,
            &layout,
            width,
            lanes,
            words,
            cube_size,
            per_unit,
        );
    }
    if comptime!(has_fill) && tile < tiles {
        let tile_elements = comptime!(cube_size * per_unit * lanes);
        let fill = fill.get::<O>();
        fill_tile_padding::<O>(
            coordinates,
            tile_offsets,
            fill,
            tile,
            tiles,
            rows,
            tile_elements,
            width,
            cube_size,
        );
    }
}

/// Where a write kernel's cube stands: its tile, the number of tiles, of input vectors and of
/// output rows.
#[derive(CubeType, Clone, Copy)]
struct TileLayout {
    tile: usize,
    tiles: usize,
    vectors: usize,
    rows: usize,
}

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
/// On an H100 (WGSL) one vector per step wrote 2^28 f32 at 50% in 0.67 ms with the loop per
/// set bit (the partial planes' path) and two vectors in 0.99 ms; at 1% two vectors per step
/// took 0.17 ms and one 0.25 ms; the ballot write then took the 50% case to 0.40 ms. Two
/// barriers per tile: one for the planes' geometry, one for the planes' totals. A step's first
/// element is unravelled once (`width - 1` divisions); each further set bit steps from it with
/// carries.
#[allow(clippy::too_many_arguments)]
#[cube]
fn write_tile_planes<O: Int>(
    mask: &[u32],
    tile_offsets: &[u32],
    coordinates: &mut [O],
    dims: &Sequence<u32>,
    layout: &TileLayout,
    #[comptime] width: usize,
    #[comptime] lanes: usize,
    #[comptime] words: usize,
    #[comptime] cube_size: usize,
    #[comptime] per_unit: usize,
) {
    let tile = layout.tile;
    let geometry = plane_geometry(cube_size);
    let steps = PlaneSteps {
        units: geometry.units as usize,
        lane: geometry.lane as usize,
        // The plane's run of `units * per_unit` vectors, from the tile's first.
        run: geometry.first as usize * per_unit,
        first_vector: tile * cube_size * per_unit,
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
        total += steps.load(
            &mut very_sparse_bits,
            mask,
            layout,
            wide_group,
            lanes,
            words,
            cube_size,
            per_unit,
        );
    } else if sparse {
        total += steps.load(
            &mut sparse_bits,
            mask,
            layout,
            group,
            lanes,
            words,
            cube_size,
            per_unit,
        );
    } else {
        total += steps.load(
            &mut dense_bits,
            mask,
            layout,
            1usize,
            lanes,
            words,
            cube_size,
            per_unit,
        );
    }
    // Rows before this plane's first: the tile's offset, then the planes before this one.
    let row = (tile_offset + planes_before(plane_sum(total), cube_size)) as usize;
    if very_sparse {
        steps.write::<O>(
            &very_sparse_bits,
            coordinates,
            row,
            layout,
            dims,
            wide_group,
            width,
            lanes,
            per_unit,
        );
    } else if sparse {
        steps.write::<O>(
            &sparse_bits,
            coordinates,
            row,
            layout,
            dims,
            group,
            width,
            lanes,
            per_unit,
        );
    } else if geometry.units == PLANE_DIM {
        // A full plane (the same answer in every unit of the plane) numbers its units as the
        // hardware does, which the ballots need.
        steps.write_ballots::<O>(
            &dense_bits,
            coordinates,
            row,
            layout,
            dims,
            width,
            lanes,
            per_unit,
        );
    } else {
        steps.write::<O>(
            &dense_bits,
            coordinates,
            row,
            layout,
            dims,
            1usize,
            width,
            lanes,
            per_unit,
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
    #[allow(clippy::too_many_arguments)]
    fn load(
        &self,
        bits: &mut Array<u32>,
        mask: &[u32],
        layout: &TileLayout,
        #[comptime] group: usize,
        #[comptime] lanes: usize,
        #[comptime] words: usize,
        #[comptime] cube_size: usize,
        #[comptime] per_unit: usize,
    ) -> u32 {
        let mut total = 0u32;
        #[unroll]
        for step in 0..comptime!(per_unit.div_ceil(group)) {
            let in_step = comptime!(group.min(per_unit - step * group));
            let q = self.vector(step, group, per_unit);
            let mut b = 0u32;
            #[unroll]
            for j in 0..in_step {
                if layout.tile < layout.tiles && self.first_vector + q + j < layout.vectors {
                    b |= tile_bits(mask, layout.tile, q + j, lanes, words, cube_size)
                        << comptime!((j * lanes) as u32);
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
    #[allow(clippy::too_many_arguments)]
    fn write<O: Int>(
        &self,
        bits: &Array<u32>,
        coordinates: &mut [O],
        row: usize,
        layout: &TileLayout,
        dims: &Sequence<u32>,
        #[comptime] group: usize,
        #[comptime] width: usize,
        #[comptime] lanes: usize,
        #[comptime] per_unit: usize,
    ) {
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
                bits[step],
                (self.first_vector + q) * lanes,
                row + (before & 0xFFFF) as usize,
                layout.rows,
                dims,
                width,
            );
            row += (in_rows & 0xFFFF) as usize;
            if comptime!(step + 1 < steps) {
                let q = self.vector(step + 1, group, per_unit);
                write_step_rows::<O>(
                    coordinates,
                    bits[step + 1],
                    (self.first_vector + q) * lanes,
                    row + (before >> 16) as usize,
                    layout.rows,
                    dims,
                    width,
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
    /// `bits` loaded with a group of one vector.
    #[allow(clippy::too_many_arguments)]
    fn write_ballots<O: Int>(
        &self,
        bits: &Array<u32>,
        coordinates: &mut [O],
        row: usize,
        layout: &TileLayout,
        dims: &Sequence<u32>,
        #[comptime] width: usize,
        #[comptime] lanes: usize,
        #[comptime] per_unit: usize,
    ) {
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
                if set && at < layout.rows {
                    let flat = first + element as usize;
                    if comptime!(width == 1) {
                        coordinates[at] = O::cast_from(flat);
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

/// The rows of one step's set `bits` (bit `b` is element `first + b`) from row `row` on.
#[cube]
fn write_step_rows<O: Int>(
    coordinates: &mut [O],
    bits: u32,
    first: usize,
    row: usize,
    rows: usize,
    dims: &Sequence<u32>,
    #[comptime] width: usize,
) {
    if bits != 0 {
        let mut run = Array::<u32>::new(1usize);
        run[0] = bits;
        write_run_rows::<O>(coordinates, &run, first, row, rows, dims, width, 1usize);
    }
}

/// The write without planes: each unit takes its run of `per_unit` consecutive vectors of the
/// tile, whose flags the count kernel left as the unit's mask words in element order (see the
/// module documentation), so a unit loads `words` words; a cube-wide scan of the unit totals,
/// plus `tile_offsets[tile]`, gives the unit its first row, and the unit writes the coordinates
/// of its run's set bits in order, one loop iteration per set bit. One cube scan per tile, which
/// suits runtimes where barriers cost more than scattered stores (lavapipe). Words past the
/// input's last vector hold no set bit: the count kernel reads those vectors as zero.
#[allow(clippy::too_many_arguments)]
#[cube]
fn write_tile_runs<O: Int>(
    mask: &[u32],
    tile_offsets: &[u32],
    coordinates: &mut [O],
    dims: &Sequence<u32>,
    layout: &TileLayout,
    #[comptime] width: usize,
    #[comptime] lanes: usize,
    #[comptime] words: usize,
    #[comptime] cube_size: usize,
    #[comptime] per_unit: usize,
) {
    let tile = layout.tile;
    let slot = UNIT_POS as usize;
    let mut run = Array::<u32>::new(words);
    let mut total = 0u32;
    #[unroll]
    for m in 0..words {
        let mut word = 0u32;
        if tile < layout.tiles {
            word = mask[(tile * words + m) * cube_size + slot];
        }
        run[m] = word;
        total += word.count_ones();
    }
    let exclusive = cube_inclusive_sum(total, cube_size, false) - total;
    if tile < layout.tiles {
        let row = (tile_offsets[tile] + exclusive) as usize;
        let first_vector = (tile * cube_size + slot) * per_unit;
        write_run_rows::<O>(
            coordinates,
            &run,
            first_vector * lanes,
            row,
            layout.rows,
            dims,
            width,
            words,
        );
    }
}
