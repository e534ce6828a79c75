//! Row stores that both layouts of step 3 share: unravelling a flat index into coordinates,
//! what one row holds, and the loop over a run's set bits.

use cubecl::prelude::*;

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
pub(super) fn write_run_rows<O: Int>(
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
