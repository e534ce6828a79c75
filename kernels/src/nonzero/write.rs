//! Step 3 of the compaction: the coordinates of the set bits of each tile's mask, and the
//! padding rows. Both layouts loop over set bits only: CPU drivers run a branch's body under a
//! mask whatever the density. A run's first flat index is unravelled into the last `width`
//! dimensions once, and each further element steps from the previous one with carries.

use cubecl::prelude::*;

use super::tile::{TileLayout, TileShape};
use super::write_planes::write_tile_planes;

/// Step 3: the coordinates of tile `CUBE_POS`'s non-zero elements, from the mask, and with
/// `has_fill` its share of the padding rows (every row at or past the total whose index falls
/// in the tile). `shape.planes` picks the layout: with plane operations each plane writes
/// contiguous rows of neighbouring vectors (GPUs); without, each unit writes the rows of its own
/// run of consecutive vectors from the offset the scan gave that run (CPU drivers).
///
/// `dims` holds the sizes of the last `width` dimensions of the input; row `r` of the output is
/// `coordinates[r * width..(r + 1) * width]` and `rows` is the number of rows it holds.
#[cube(launch_unchecked, address_type = "dynamic")]
pub fn nonzero_write_coordinates<O: Int>(
    mask: &[u32],
    tile_offsets: &[u32],
    coordinates: &mut [O],
    values: &[O],
    dims: Sequence<u32>,
    fill: InputScalar,
    vectors: usize,
    tiles: usize,
    rows: usize,
    #[comptime] shape: TileShape,
    #[comptime] has_fill: bool,
    #[comptime] gather: bool,
    #[define(O)] _output_type: ElemType,
) {
    let width = comptime!(dims.len());
    let layout = TileLayout {
        tile: CUBE_POS,
        tiles,
        vectors,
        rows,
    };
    if comptime!(shape.planes) {
        write_tile_planes::<O>(
            mask,
            tile_offsets,
            coordinates,
            values,
            &dims,
            &layout,
            shape,
            gather,
        );
    } else {
        write_tile_runs::<O>(
            mask,
            tile_offsets,
            coordinates,
            values,
            &dims,
            &layout,
            shape,
            gather,
        );
    }
    if comptime!(has_fill) && layout.tile < tiles {
        let fill = fill.get::<O>();
        fill_tile_padding::<O>(coordinates, tile_offsets, fill, &layout, width, shape);
    }
}

/// The coordinates of flat index `flat` in the dimensions `dims` (`width` of them): one
/// division per axis but the first.
#[cube]
pub(super) fn unravel(flat: u32, dims: &Sequence<u32>, #[comptime] width: usize) -> Array<u32> {
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

/// What the row of element `flat` holds when the rows are one column wide: the element's
/// index, or with `gather` the element itself from `values` (a compress). The check keeps the
/// load inside `values` whatever the mask holds.
#[cube]
pub(super) fn element_row<O: Int>(values: &[O], flat: usize, #[comptime] gather: bool) -> O {
    let mut value = O::cast_from(flat);
    if comptime!(gather) {
        value = O::from_int(0);
        if flat < values.len() {
            value = values[flat];
        }
    }
    value
}

/// Stores the `width` coordinates `coords` as row `row` of `coordinates`.
#[cube]
pub(super) fn store_row<O: Int>(
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
#[cube]
fn write_run_rows<O: Int>(
    coordinates: &mut [O],
    values: &[O],
    run: &Array<u32>,
    first: usize,
    row: usize,
    rows: usize,
    dims: &Sequence<u32>,
    #[comptime] words: usize,
    #[comptime] gather: bool,
) {
    let width = comptime!(dims.len());
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
                    coordinates[next] = element_row::<O>(values, first + position as usize, gather);
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
/// the scan's last entry: `tile_offsets[tiles]`, or `tile_offsets[tiles * cube_size]` without
/// planes) whose index falls in the range of the cube's tile. The cube's units write
/// consecutive elements, so the stores are contiguous.
#[cube]
fn fill_tile_padding<O: Int>(
    coordinates: &mut [O],
    tile_offsets: &[u32],
    fill: O,
    layout: &TileLayout,
    #[comptime] width: usize,
    #[comptime] shape: TileShape,
) {
    let runs = if comptime!(shape.planes) {
        layout.tiles
    } else {
        layout.tiles * comptime!(shape.cube_size)
    };
    let total = tile_offsets[runs] as usize;
    let mut first = layout.tile * comptime!(shape.elements());
    let mut end = first + comptime!(shape.elements());
    if first < total {
        first = total;
    }
    if end > layout.rows {
        end = layout.rows;
    }
    if first < end {
        let stop = end * width;
        let mut position = first * width + UNIT_POS as usize;
        while position < stop {
            coordinates[position] = fill;
            position += comptime!(shape.cube_size);
        }
    }
}

/// The rows of one step's set `bits` (bit `b` is element `first + b`) from row `row` on.
#[cube]
pub(super) fn write_step_rows<O: Int>(
    coordinates: &mut [O],
    values: &[O],
    bits: u32,
    first: usize,
    row: usize,
    rows: usize,
    dims: &Sequence<u32>,
    #[comptime] gather: bool,
) {
    if bits != 0 {
        let mut run = Array::<u32>::new(1usize);
        run[0] = bits;
        write_run_rows::<O>(
            coordinates,
            values,
            &run,
            first,
            row,
            rows,
            dims,
            1usize,
            gather,
        );
    }
}

/// The write without planes: each unit takes its run of `per_unit` consecutive vectors of the
/// tile, whose flags the count kernel left as the unit's mask words in element order (see
/// [`TileShape`]), so a unit loads `words` words; the scan gave every run its own first row
/// (`tile_offsets[tile * cube_size + slot]`), and the unit writes the coordinates of its run's
/// set bits in order, one loop iteration per set bit. No barrier: CPU drivers (lavapipe) run a
/// barrier by switching between the cube's SIMD groups, which costs more than the longer scan
/// of one offset per unit. Words past the input's last vector hold no set bit: the count kernel
/// reads those vectors as zero.
#[cube]
fn write_tile_runs<O: Int>(
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
    let words = comptime!(shape.words);
    let tile = layout.tile;
    let slot = UNIT_POS as usize;
    if tile < layout.tiles {
        let mut run = Array::<u32>::new(words);
        #[unroll]
        for m in 0..words {
            run[m] = mask[(tile * words + m) * cube_size + slot];
        }
        let row = tile_offsets[tile * cube_size + slot] as usize;
        let first_vector = (tile * cube_size + slot) * comptime!(shape.per_unit);
        write_run_rows::<O>(
            coordinates,
            values,
            &run,
            first_vector * comptime!(shape.lanes),
            row,
            layout.rows,
            dims,
            words,
            gather,
        );
    }
}
