//! Indices of a type the runtime cannot bind (8- and 16-bit integers on WGSL and OpenGL, 64-bit
//! ones on OpenGL): one pass reads them as 32-bit words and resolves each into a `u32`
//! coordinate of its dimension, already wrapped (negative values) and clamped (`Clamp`), or
//! [`SKIPPED`] when it stays out of range. The scatter and gather kernels then read those
//! coordinates as unsigned indices with the `Skip` policy: `SKIPPED` is out of range for every
//! dimension, since the launchers refuse `u32::MAX` or more target slices.

use cubecl::prelude::*;

use super::kernel::SKIPPED;

/// Resolves index `i` (`bits` wide, `signed` or not) of the `len` indices in `indices` against
/// its dimension, `dims[i % k]`, into `coordinates[i]`.
#[cube(launch_unchecked, address_type = "dynamic")]
pub fn scatter_nd_resolve_indices(
    indices: &[u32],
    dims: &[u32],
    coordinates: &mut [u32],
    len: usize,
    #[comptime] k: usize,
    #[comptime] bits: u32,
    #[comptime] signed: bool,
    #[comptime] clamp: bool,
) {
    let i = ABSOLUTE_POS;
    if i >= len {
        terminate!();
    }
    let dim = dims[i % k];
    let mut coord = 0u32;
    let mut in_range = false;
    let mut below = false;
    if comptime!(bits == 64) {
        // Low word first; the value is `hi * 2^32 + lo`, two's complement when signed.
        let lo = indices[2 * i];
        let hi = indices[2 * i + 1];
        if comptime!(signed) && (hi >> 31u32) == 1u32 {
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
        if comptime!(signed) && (value & sign) != 0u32 {
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
        if comptime!(clamp) && dim > 0u32 {
            coord = dim - 1u32;
            if below {
                coord = 0u32;
            }
        }
    }
    coordinates[i] = coord;
}
