//! Step 3 of the compaction: the coordinates of the set bits of each tile's mask, and the
//! padding rows. Both layouts loop over set bits only: CPU drivers run a branch's body under a
//! mask whatever the density. A run's first flat index is unravelled into the last `width`
//! dimensions once, and each further element steps from the previous one with carries.

use cubecl::prelude::*;

use super::rows::write_run_rows;
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
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
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
