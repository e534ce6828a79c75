//! The zero padding of a compress of elements where the runtime has no plane operations (CPU
//! drivers): one launch of vector stores after the compaction's write, which there stores one
//! scalar at a time.

use cubecl::prelude::*;

/// Zeros the elements at and past `count[0]` of vectors `first..first + units` of `output`,
/// keeping the elements before it: a vector that straddles the count is read and written back.
#[cube(launch_unchecked, address_type = "dynamic")]
pub fn compress_pad_zeros<T: Numeric, N: Size, C: Int>(
    output: &mut [Vector<T, N>],
    count: &[C],
    first: usize,
    units: usize,
    #[define(T)] _data_type: ElemType,
    #[define(C)] _count_type: ElemType,
) {
    if ABSOLUTE_POS >= units {
        terminate!();
    }
    let index = first + ABSOLUTE_POS;
    let total = usize::cast_from(count[0]);
    let lanes = output.vector_size();
    let start = index * lanes;
    if start + lanes <= total {
        terminate!();
    }
    let zero = T::from_int(0);
    let mut value = Vector::<T, N>::new(zero);
    if start < total {
        let old = output[index];
        #[unroll]
        for lane in 0..lanes {
            value.insert(lane, select(start + lane < total, old.extract(lane), zero));
        }
    }
    output[index] = value;
}
