//! The first launch of a sort: each element's order-preserving key, and its position along the
//! axis, laid out segment by segment; for the radix passes, also the first pass's digit counts.

use cubecl::prelude::*;

use super::radix::{write_tile_counts, zeroed_bins};

/// How an element's bits order: as an IEEE float, a two's-complement integer or an unsigned
/// one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KeyKind {
    /// IEEE floats: `-0.0` is `+0.0`, every NaN is one value above `+inf`.
    Float,
    /// Two's-complement integers.
    Signed,
    /// Unsigned integers.
    Unsigned,
}

/// What the key kernel needs to know about a dtype: its width and how its bits order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KeyFormat {
    /// How the bits order.
    pub kind: KeyKind,
    /// The element's width: 8, 16, 32 or 64 bits.
    pub bits: u32,
    /// The bits of `+inf` for a float of 32 bits or fewer (`f16`, `bf16` and `f32` differ only
    /// there); for `f64` the high word of `+inf`. Unused for integers.
    pub infinity: u32,
}

impl KeyFormat {
    /// 32-bit words per key: two for 64-bit elements, one otherwise.
    pub const fn words(&self) -> usize {
        if self.bits == 64 { 2 } else { 1 }
    }

    /// The bits of the key's low word that carry the key.
    pub const fn low_mask(&self) -> u32 {
        if self.bits >= 32 {
            u32::MAX
        } else {
            (1u32 << self.bits) - 1
        }
    }
}

/// The bits of element `element` of a buffer of `bits`-bit elements (8, 16 or 32) read as 32-bit
/// words, lowest bits first.
#[cube]
pub(crate) fn load_field(input: &[u32], element: usize, #[comptime] bits: u32) -> u32 {
    if comptime!(bits == 32) {
        input[element]
    } else {
        let per_word = comptime!((32 / bits) as usize);
        let shift = ((element % per_word) as u32) * bits;
        (input[element / per_word] >> shift) & comptime!((1u32 << bits) - 1)
    }
}

/// The order-preserving key of the `bits`-bit value `x` (32 bits or fewer): unsigned order of
/// the key is the value's order, with `-0.0` and `+0.0` one key and every NaN one key above
/// `+inf`.
#[cube]
fn key_of(x: u32, #[comptime] format: KeyFormat) -> u32 {
    let infinity = comptime!(format.infinity);
    let mask = comptime!(format.low_mask());
    let sign = comptime!(1u32 << (format.bits - 1));
    let mut key = x;
    if comptime!(format.kind == KeyKind::Signed) {
        key = x ^ sign;
    } else if comptime!(format.kind == KeyKind::Float) {
        let magnitude = x & comptime!(format.low_mask() ^ (1u32 << (format.bits - 1)));
        // Every NaN becomes the largest positive pattern, `-0.0` becomes `+0.0`.
        let canonical = select(
            magnitude > infinity,
            comptime!(format.low_mask() ^ (1u32 << (format.bits - 1))),
            select(magnitude == 0, 0u32, x),
        );
        key = select((canonical & sign) != 0, !canonical & mask, canonical | sign);
    }
    key
}

/// The order-preserving key of a 64-bit value as `(low, high)` words (see [`key_of`]).
#[cube]
fn key_of_wide(low: u32, high: u32, #[comptime] format: KeyFormat) -> (u32, u32) {
    let sign = 0x8000_0000u32;
    let mut key_low = low;
    let mut key_high = high;
    if comptime!(format.kind == KeyKind::Signed) {
        key_high = high ^ sign;
    } else if comptime!(format.kind == KeyKind::Float) {
        let magnitude = high & 0x7FFF_FFFFu32;
        let infinity = comptime!(format.infinity);
        let nan = magnitude > infinity || (magnitude == infinity && low != 0);
        let zero = magnitude == 0 && low == 0;
        let canonical_low = select(nan, u32::MAX, select(zero, 0u32, low));
        let canonical_high = select(nan, 0x7FFF_FFFFu32, select(zero, 0u32, high));
        let negative = (canonical_high & sign) != 0;
        key_low = select(negative, !canonical_low, canonical_low);
        key_high = select(negative, !canonical_high, canonical_high | sign);
    }
    (key_low, key_high)
}

/// The key of element `source` of the input (read as 32-bit words), XORed with `flip`: the low
/// word, and the high word of a 64-bit key (0 otherwise).
#[cube]
fn key_at(input: &[u32], source: usize, flip: u32, #[comptime] format: KeyFormat) -> (u32, u32) {
    if comptime!(format.bits == 64) {
        let (low, high) = key_of_wide(input[2 * source], input[2 * source + 1], format);
        (low ^ flip, high ^ flip)
    } else {
        let x = load_field(input, source, comptime!(format.bits));
        (key_of(x, format) ^ flip, 0u32)
    }
}

/// Where element `p` of segment `segment` of a contiguous `[outer, axis_len, inner]` input lies
/// (segment `s` is outer index `s / inner`, inner index `s % inner`).
#[cube]
fn source_of(segment: usize, p: usize, axis_len: usize, inner: usize) -> usize {
    ((segment / inner) * axis_len + p) * inner + segment % inner
}

/// Unit `g < len` takes element `p = g % axis_len` of segment `s = g / axis_len` of a
/// contiguous `[outer, axis_len, inner]` input, and writes its key, XORed with `flip`
/// (descending order), to `keys[g]` (the low word; the high word of a 64-bit key to `keys[len +
/// g]`) and, with `with_positions`, `p` to `positions[g]`. The input is read as 32-bit words.
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn sort_keys(
    input: &[u32],
    keys: &mut [u32],
    positions: &mut [u32],
    len: usize,
    axis_len: usize,
    inner: usize,
    flip: u32,
    #[comptime] format: KeyFormat,
    #[comptime] with_positions: bool,
) {
    let g = ABSOLUTE_POS;
    if g >= len {
        terminate!();
    }
    let segment = g / axis_len;
    let p = g % axis_len;
    let (low, high) = key_at(input, source_of(segment, p, axis_len, inner), flip, format);
    keys[g] = low;
    if comptime!(format.bits == 64) {
        keys[len + g] = high;
    }
    if comptime!(with_positions) {
        positions[g] = p as u32;
    }
}

/// The keys and positions of [`sort_keys`](fn@sort_keys) for the radix passes, one cube per tile of
/// `cube_size * per_unit` elements of a segment, `tiles` in all, which also counts each tile's
/// first digit (the low 8 bits of the key) into the first pass's count table, as
/// [`sort_count_digits`](fn@crate::sort::sort_count_digits) would: one launch fewer.
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn sort_keys_counted(
    input: &[u32],
    keys: &mut [u32],
    positions: &mut [u32],
    counts: &mut [u32],
    len: usize,
    axis_len: usize,
    inner: usize,
    tiles_per_segment: usize,
    tiles: usize,
    flip: u32,
    #[comptime] format: KeyFormat,
    #[comptime] cube_size: usize,
    #[comptime] per_unit: usize,
) {
    if CUBE_POS >= tiles {
        terminate!();
    }
    let bins = zeroed_bins(cube_size);
    let unit = UNIT_POS as usize;
    let segment = CUBE_POS / tiles_per_segment;
    let tile = CUBE_POS % tiles_per_segment;
    let first = tile * comptime!(cube_size * per_unit);
    #[unroll]
    for e in 0..per_unit {
        let p = first + comptime!(e * cube_size) + unit;
        if p < axis_len {
            let g = segment * axis_len + p;
            let (low, high) = key_at(input, source_of(segment, p, axis_len, inner), flip, format);
            keys[g] = low;
            if comptime!(format.bits == 64) {
                keys[len + g] = high;
            }
            positions[g] = p as u32;
            bins[(low & 255u32) as usize].fetch_add(1u32);
        }
    }
    sync_cube();
    write_tile_counts(&bins, counts, segment, tile, tiles_per_segment, cube_size);
}
