//! How the kernels read an index tuple: each coordinate resolved against its dimension (a
//! negative value counts from the end once; one still out of range is clamped or skips the
//! tuple), and the pass that resolves indices of a type the runtime cannot bind.

use cubecl::prelude::*;

/// Marks an update row whose index tuple was out of range and skipped. It cannot be a target:
/// the launchers refuse outputs of `u32::MAX` or more target slices, so every real target is
/// below it.
pub(super) const SKIPPED: u32 = 0xFFFF_FFFF;

/// How the kernels read index tuples; each combination compiles a kernel of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct IndexRead {
    /// Coordinates per tuple: the indexed dimensions.
    pub k: usize,
    /// Whether the indices are signed, so negative values count from the end.
    pub signed: bool,
    /// Whether the indices are 64 bits wide.
    pub wide: bool,
    /// Whether an out-of-range coordinate is clamped (otherwise its tuple is skipped).
    pub clamp: bool,
}

/// Resolves one index against a dimension of size `dim`: `(coordinate, in_range, below)`.
/// A negative value of a signed index counts from the end once; `below` says on which side an
/// out-of-range value lies (what `Clamp` needs).
#[cube]
fn resolve_index<I: Int>(raw: I, dim: u32, #[comptime] read: IndexRead) -> (u32, bool, bool) {
    let mut coord = 0u32;
    let mut in_range = false;
    let mut below = false;
    if comptime!(read.wide) {
        let size = u64::cast_from(dim);
        if comptime!(read.signed) {
            let value = i64::cast_from(raw);
            if value < 0 {
                // |value| without overflow, even for i64::MIN.
                let magnitude = u64::cast_from(-(value + 1)) + 1;
                if magnitude <= size {
                    coord = u32::cast_from(size - magnitude);
                    in_range = true;
                } else {
                    below = true;
                }
            } else if u64::cast_from(value) < size {
                coord = u32::cast_from(value);
                in_range = true;
            }
        } else {
            let value = u64::cast_from(raw);
            if value < size {
                coord = u32::cast_from(value);
                in_range = true;
            }
        }
    } else if comptime!(read.signed) {
        // Sign-extends 8- and 16-bit indices.
        let value = i32::cast_from(raw);
        if value < 0 {
            let magnitude = u32::cast_from(-(value + 1)) + 1;
            if magnitude <= dim {
                coord = dim - magnitude;
                in_range = true;
            } else {
                below = true;
            }
        } else if u32::cast_from(value) < dim {
            coord = u32::cast_from(value);
            in_range = true;
        }
    } else {
        let value = u32::cast_from(raw);
        if value < dim {
            coord = value;
            in_range = true;
        }
    }
    (coord, in_range, below)
}

/// The target slice of update row `row`: the row-major number of its index tuple over `dims`,
/// or [`SKIPPED`] when a coordinate is out of range and not clamped (or cannot be: a dimension
/// of size 0 has no valid index).
#[cube]
pub(super) fn target_slice<I: Int>(
    indices: &[I],
    dims: &Sequence<u32>,
    row: usize,
    #[comptime] read: IndexRead,
) -> u32 {
    let mut target = 0u32;
    let mut valid = true;
    #[unroll]
    for j in 0..read.k {
        let dim = dims[j];
        let (mut coord, in_range, below) = resolve_index::<I>(indices[row * read.k + j], dim, read);
        if !in_range {
            if comptime!(read.clamp) && dim > 0 {
                coord = dim - 1;
                if below {
                    coord = 0u32;
                }
            } else {
                valid = false;
            }
        }
        target = target * dim + coord;
    }
    if !valid {
        target = SKIPPED;
    }
    target
}

/// The output element that update element `position` (row `position / slice`, column
/// `position % slice`) targets, and whether it targets one at all.
#[cube]
pub(super) fn update_target<I: Int>(
    indices: &[I],
    dims: &Sequence<u32>,
    position: usize,
    slice: usize,
    #[comptime] read: IndexRead,
) -> (usize, bool) {
    let target = target_slice::<I>(indices, dims, position / slice, read);
    (
        target as usize * slice + position % slice,
        target != SKIPPED,
    )
}

/// Resolves index `i` of the `len` indices in `indices` (`bits` wide, read as 32-bit words) against
/// its dimension, `dims[i % k]`, into `coordinates[i]`: wrapped, clamped, or `u32::MAX` (skipped).
/// For indices of a type the runtime [cannot bind](crate#types-the-runtime-cannot-bind); the other
/// kernels then read the coordinates as unsigned indices with the `Skip` policy, and `u32::MAX` is
/// out of range for every dimension.
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn scatter_nd_resolve_indices(
    indices: &[u32],
    dims: Sequence<u32>,
    coordinates: &mut [u32],
    len: usize,
    #[comptime] read: IndexRead,
    #[comptime] bits: u32,
) {
    let i = ABSOLUTE_POS;
    if i >= len {
        terminate!();
    }
    let axis = i % read.k;
    let mut dim = 0u32;
    #[unroll]
    for j in 0..read.k {
        if axis == j {
            dim = dims[j];
        }
    }
    let mut coord = 0u32;
    let mut in_range = false;
    let mut below = false;
    if comptime!(bits == 64) {
        // Low word first; the value is `hi * 2^32 + lo`, two's complement when signed.
        let lo = indices[2 * i];
        let hi = indices[2 * i + 1];
        if comptime!(read.signed) && (hi >> 31u32) == 1u32 {
            // Negative: in range when -value <= dim, which needs hi all ones and lo != 0
            // (-value = 2^32 - lo < 2^32).
            let magnitude = 0u32 - lo;
            if hi == 0xFFFF_FFFFu32 && lo != 0u32 && magnitude <= dim {
                coord = dim - magnitude;
                in_range = true;
            } else {
                below = true;
            }
        } else if hi == 0u32 && lo < dim {
            coord = lo;
            in_range = true;
        }
    } else {
        let per_word = comptime!((32 / bits) as usize);
        let mask = comptime!(((1u64 << bits) - 1) as u32);
        let sign = comptime!(1u32 << (bits - 1));
        let shift = ((i % per_word) as u32) * bits;
        let value = (indices[i / per_word] >> shift) & mask;
        if comptime!(read.signed) && (value & sign) != 0u32 {
            // Negative: -value = 2^bits - value, at most 2^(bits - 1).
            let magnitude = mask - value + 1u32;
            if magnitude <= dim {
                coord = dim - magnitude;
                in_range = true;
            } else {
                below = true;
            }
        } else if value < dim {
            coord = value;
            in_range = true;
        }
    }
    if !in_range {
        coord = SKIPPED;
        if comptime!(read.clamp) && dim > 0u32 {
            coord = dim - 1u32;
            if below {
                coord = 0u32;
            }
        }
    }
    coordinates[i] = coord;
}
