//! The padding rows where the runtime has no plane operations (CPU drivers): one launch of
//! vector stores after the write, whose own padding stores run one scalar at a time there.

use cubecl::prelude::*;

/// Sets the elements of vectors `first..first + units` of `rows` at and past
/// `count[0] * width` (the padding rows of `width` elements each) to `fill`, keeping those
/// before it: a vector that straddles the boundary is read and written back.
#[cube(launch_unchecked, address_type = "dynamic")]
pub fn nonzero_fill_padding<T: Int, N: Size, C: Int>(
    rows: &mut [Vector<T, N>],
    count: &[C],
    fill: InputScalar,
    width: usize,
    first: usize,
    units: usize,
    #[define(T)] _row_type: ElemType,
    #[define(C)] _count_type: ElemType,
) {
    if ABSOLUTE_POS >= units {
        terminate!();
    }
    let index = first + ABSOLUTE_POS;
    let written = usize::cast_from(count[0]) * width;
    let lanes = rows.vector_size();
    let start = index * lanes;
    if start + lanes <= written {
        terminate!();
    }
    let fill = fill.get::<T>();
    let mut value = Vector::<T, N>::new(fill);
    if start < written {
        let old = rows[index];
        #[unroll]
        for lane in 0..lanes {
            value.insert(
                lane,
                select(start + lane < written, old.extract(lane), fill),
            );
        }
    }
    rows[index] = value;
}
