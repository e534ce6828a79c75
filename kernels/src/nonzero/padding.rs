//! The padding rows where the runtime has no plane operations (CPU drivers): one launch of
//! vector stores after the write, whose own padding stores run one scalar at a time there.

use cubecl::prelude::*;

/// Sets the elements of vectors `first..first + vectors` of `rows` at and past
/// `count[0] * width` (the padding rows of `width` elements each) to `fill`, keeping those
/// before it: a vector that straddles the boundary is read and written back. Unit `u` takes the
/// `per_unit` consecutive vectors from `first + u * per_unit`; a unit wholly before the boundary
/// stops after one test.
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn nonzero_fill_padding<T: Int, N: Size, C: Int>(
    rows: &mut [Vector<T, N>],
    count: &[C],
    fill: InputScalar,
    width: usize,
    first: usize,
    vectors: usize,
    #[comptime] per_unit: usize,
    #[define(T)] _row_type: ElemType,
    #[define(C)] _count_type: ElemType,
) {
    let start = ABSOLUTE_POS * per_unit;
    if start >= vectors {
        terminate!();
    }
    let lanes = rows.vector_size();
    let written = usize::cast_from(count[0]) * width;
    if (first + start + per_unit) * lanes <= written {
        terminate!();
    }
    let fill = fill.get::<T>();
    #[unroll]
    for k in 0..per_unit {
        if start + k < vectors {
            let index = first + start + k;
            let at = index * lanes;
            if at >= written {
                rows[index] = Vector::<T, N>::new(fill);
            } else if at + lanes > written {
                let old = rows[index];
                let mut value = Vector::<T, N>::new(fill);
                #[unroll]
                for lane in 0..lanes {
                    value.insert(lane, select(at + lane < written, old.extract(lane), fill));
                }
                rows[index] = value;
            }
        }
    }
}
