//! Deterministic float `Mul` of 16- and 32-bit floats by a fixed tree
//! ([`ScatterStrategy::Deterministic`](super::ScatterStrategy)): each target element's terms,
//! its value then its updates in index order, multiply in a tree fixed by their count alone,
//! carried with a 64-bit significand and an exponent of their own, and the root is rounded once.
//! Where that rounding cannot be told from the tree's error bound (the exact product lies that
//! close to a midpoint), the element takes the index-order walk of `ordered.rs`, so the result
//! is never less accurate than index order, and the same on every runtime.
//!
//! The tree, on the rows sorted by target: chunks of [`PRODUCT_CHUNK`] rows, each folded left
//! to right by one unit (the first chunk after the target's value), then levels that fold
//! [`PRODUCT_FAN`] consecutive nodes left to right, until one node is left. Each product keeps
//! the top 64 bits of the exact one (truncated, flagged when bits fall off), so the computed
//! root is below the exact product by less than `2 * n` of its last units for `n`
//! multiplications; with the bound `4 * n` (`n` the tree's capacity) the rounding is certain
//! unless a midpoint lies in between. Integer arithmetic only, so no runtime's flushing of
//! subnormals changes a bit; the host reference (`exact_product` in the main crate) computes the
//! same.
//!
//! The launches: [`scatter_nd_segment_starts()`] finds each sorted row's target's first row;
//! [`scatter_nd_product_leaves()`], over every row and group of columns, multiplies sole
//! updates and lists the chunks; [`scatter_nd_product_chunks()`] and
//! [`scatter_nd_product_level()`] run over what the previous launch listed (sized on the
//! device), so that unique rows cost one light pass and the tree's work scales with the chunks.

use cubecl::prelude::*;

use super::columns::{Columns, GROUP_COLUMNS, columns, load_columns, load_fields, store_fields};
use super::exact::{SumFormat, round_product, widen};
use super::indices::SKIPPED;
use super::kernel::list_pending;
use super::ordered::unit_position;

/// Rows one unit folds into a leaf node of the tree.
pub const PRODUCT_CHUNK: usize = 32;

/// Nodes of one level that a node of the next one folds.
pub const PRODUCT_FAN: usize = 8;

/// A node's flags: a NaN term.
const NAN: u32 = 1;
/// An infinite term.
const INFINITY: u32 = 2;
/// A zero term.
const ZERO: u32 = 4;
/// The product is negative.
const NEGATIVE: u32 = 8;
/// A product dropped bits.
const INEXACT: u32 = 16;
/// An exponent left `±EXPONENT_LIMIT`, beyond every rounding the node could reach: index order
/// decides.
const OUT_OF_RANGE: u32 = 32;
/// The largest exponent magnitude a node carries.
const EXPONENT_LIMIT: i32 = 1 << 29;
/// Words of a node in the tree's scratch: significand high and low, exponent, flags.
const NODE_WORDS: usize = 4;

/// A product in the tree: `hi:lo` (bit 63 set) times `2^(exponent - 63)`, or a special value
/// by its flags (then `hi:lo` is one and the exponent zero, so every product stays exact).
#[derive(CubeType, Clone)]
struct Node {
    hi: u32,
    lo: u32,
    exponent: i32,
    flags: u32,
}

/// The nodes of a group's columns.
#[derive(CubeType)]
struct Nodes {
    hi: Array<u32>,
    lo: Array<u32>,
    exponent: Array<i32>,
    flags: Array<u32>,
}

/// A group's nodes, each the exact product `1`, where a fold starts.
#[cube]
fn ones() -> Nodes {
    let mut nodes = Nodes {
        hi: Array::<u32>::new(GROUP_COLUMNS),
        lo: Array::<u32>::new(GROUP_COLUMNS),
        exponent: Array::<i32>::new(GROUP_COLUMNS),
        flags: Array::<u32>::new(GROUP_COLUMNS),
    };
    #[unroll]
    for j in 0..GROUP_COLUMNS {
        nodes.hi[j] = 0x8000_0000u32;
        nodes.lo[j] = 0u32;
        nodes.exponent[j] = 0i32;
        nodes.flags[j] = 0u32;
    }
    nodes
}

#[cube]
fn node_of(nodes: &Nodes, j: usize) -> Node {
    Node {
        hi: nodes.hi[j],
        lo: nodes.lo[j],
        exponent: nodes.exponent[j],
        flags: nodes.flags[j],
    }
}

#[cube]
fn set_node(nodes: &mut Nodes, j: usize, node: Node) {
    nodes.hi[j] = node.hi;
    nodes.lo[j] = node.lo;
    nodes.exponent[j] = node.exponent;
    nodes.flags[j] = node.flags;
}

/// Multiplies column `j` of `nodes` by `factor`.
#[cube]
fn multiply_into(nodes: &mut Nodes, j: usize, factor: Node) {
    let product = multiply(node_of(&*nodes, j), factor);
    set_node(nodes, j, product);
}

/// The node of one term of `f32` bits (every `f16` and `bf16` is one): exact.
#[cube]
fn leaf(term: u32) -> Node {
    let field = (term >> 23u32) & 0xFFu32;
    let fraction = term & 0x7F_FFFFu32;
    let significand = fraction | select(field != 0u32, 0x80_0000u32, 0u32);
    let special = field == 0xFFu32;
    let kind = select(
        special,
        select(fraction != 0u32, NAN, INFINITY),
        select(significand == 0u32, ZERO, 0u32),
    );
    let ordinary = kind == 0u32;
    // The significand's leading one moves to bit 31 (8 or more places); the term is
    // `significand * 2^(max(field, 1) - 150)`.
    let shift = select(ordinary, significand.leading_zeros(), 8u32);
    let scale = select(field > 1u32, field, 1u32);
    Node {
        hi: select(ordinary, significand << shift, 0x8000_0000u32),
        lo: 0u32,
        exponent: select(
            ordinary,
            i32::cast_from(scale) - 119i32 - i32::cast_from(shift),
            0i32,
        ),
        flags: kind | select((term >> 31u32) != 0u32, NEGATIVE, 0u32),
    }
}

/// `a + b + carry` and its carry out (0 or 1).
#[cube]
fn add_carry(a: u32, b: u32, carry: u32) -> (u32, u32) {
    let sum = a + b;
    let total = sum + carry;
    (total, u32::cast_from(sum < a) + u32::cast_from(total < sum))
}

/// `a * b`: the top 64 bits of the exact product of the significands, the rest dropped
/// (flagged `INEXACT` when not zero), the exponents added, the flags combined.
#[cube]
fn multiply(a: Node, b: Node) -> Node {
    // The 128-bit product from four 32 x 32 -> 64 products, in words r0..r3.
    let (ll, lh) = (a.lo * b.lo, a.lo.mul_hi(b.lo));
    let (cl, ch) = (a.lo * b.hi, a.lo.mul_hi(b.hi));
    let (dl, dh) = (a.hi * b.lo, a.hi.mul_hi(b.lo));
    let (hl, hh) = (a.hi * b.hi, a.hi.mul_hi(b.hi));
    let (r1, c1) = add_carry(lh, cl, 0u32);
    let (r1, c2) = add_carry(r1, dl, 0u32);
    let (r2, c3) = add_carry(ch, dh, c1);
    let (r2, c4) = add_carry(r2, hl, c2);
    let r3 = hh + c3 + c4;
    // Both significands are at least 2^63, so the product's top bit is 127 or 126.
    let top = (r3 >> 31u32) != 0u32;
    let hi = select(top, r3, (r3 << 1u32) | (r2 >> 31u32));
    let lo = select(top, r2, (r2 << 1u32) | (r1 >> 31u32));
    let dropped = select(top, r1, r1 << 1u32) | ll;
    let exponent = a.exponent + b.exponent + select(top, 1i32, 0i32);
    let magnitude = select(exponent < 0i32, 0i32 - exponent, exponent);
    let out = magnitude > EXPONENT_LIMIT;
    let flags = ((a.flags | b.flags) & !NEGATIVE)
        | ((a.flags ^ b.flags) & NEGATIVE)
        | select(dropped != 0u32, INEXACT, 0u32)
        | select(out, OUT_OF_RANGE, 0u32);
    Node {
        hi,
        lo,
        exponent: select(out, 0i32, exponent),
        flags,
    }
}

/// Whether the 64-bit `a_hi:a_lo` is below `b_hi:b_lo`.
#[cube]
fn below(a_hi: u32, a_lo: u32, b_hi: u32, b_lo: u32) -> bool {
    a_hi < b_hi || (a_hi == b_hi && a_lo < b_lo)
}

/// The root `node` of a tree of at most `bound` multiplications rounded to nearest even in
/// `format`, as that format's bits, and whether the rounding is uncertain (then the bits are
/// meaningless and index order decides): a NaN term, or an infinity with a zero, gives the
/// positive quiet NaN; an infinity or a zero a value of the product's sign.
#[cube]
fn round_node(node: Node, bound: u32, #[comptime] format: SumFormat) -> (u32, bool) {
    let mantissa_bits = comptime!(format.mantissa_bits());
    let exponent_bits = comptime!(format.exponent_bits());
    let infinity = comptime!(((1u32 << exponent_bits) - 1) << mantissa_bits);
    let min_exponent = comptime!(2i32 - (1i32 << (exponent_bits - 1)));
    let max_exponent = comptime!((1i32 << (exponent_bits - 1)) - 1);
    let flags = node.flags;
    let sign = select(
        (flags & NEGATIVE) != 0u32,
        comptime!(1u32 << (exponent_bits + mantissa_bits)),
        0u32,
    );
    let nan = (flags & NAN) != 0u32 || (flags & (INFINITY | ZERO)) == (INFINITY | ZERO);
    let mut bits = sign;
    let mut uncertain = false;
    if nan {
        bits = infinity | comptime!(1u32 << (mantissa_bits - 1));
    } else if (flags & INFINITY) != 0u32 {
        bits = sign | infinity;
    } else if (flags & ZERO) != 0u32 {
        // A zero of the product's sign.
    } else if (flags & OUT_OF_RANGE) != 0u32 {
        uncertain = true;
    } else {
        if node.exponent > max_exponent {
            bits = sign | infinity;
        } else {
            let inexact = (flags & INEXACT) != 0u32;
            // Four units of the significand's last bit per multiplication bound how far below
            // the exact product the computed one lies.
            let (bound_hi, bound_lo) = (bound >> 30u32, bound << 2u32);
            // The bits below the result's last one: 63 - mantissa_bits for a normal result,
            // one more per binade below the normal range; the high word keeps `dropped - 32`.
            let subnormal = select(
                node.exponent < min_exponent,
                min_exponent - node.exponent,
                0i32,
            );
            let dropped = comptime!(31i32 - mantissa_bits as i32) + subnormal;
            if dropped > 33i32 {
                // Below a quarter of the smallest subnormal, and its error with it: zero.
            } else if dropped == 33i32 {
                // Below half the smallest subnormal: zero, unless the error reaches the half.
                let (rest_lo, carry) = add_carry(!node.lo, 1u32, 0u32);
                let rest_hi = !node.hi + carry;
                uncertain = inexact && below(rest_hi, rest_lo, bound_hi, bound_lo);
            } else {
                let shift = u32::cast_from(dropped);
                // `shift` is 8..=32: two shifts, so that 32 never shifts a word by 32.
                let kept = (node.hi >> (shift - 1u32)) >> 1u32;
                let rest_hi = node.hi & (((1u32 << (shift - 1u32)) << 1u32) - 1u32);
                let half_hi = 1u32 << (shift - 1u32);
                let above = below(half_hi, 0u32, rest_hi, node.lo);
                let tie = rest_hi == half_hi && node.lo == 0u32;
                // Under the half: uncertain if the error can reach it (`gap` is half - rest).
                let gap_lo = 0u32 - node.lo;
                let gap_hi = half_hi - rest_hi - u32::cast_from(node.lo != 0u32);
                let under = !above && !tie;
                uncertain = inexact && under && below(gap_hi, gap_lo, bound_hi, bound_lo);
                let odd = (kept & 1u32) != 0u32;
                // Inexact, the exact product is above the computed one: a tie rounds up.
                let round_up = above || (tie && (inexact || odd));
                let field = select(
                    node.exponent > min_exponent,
                    u32::cast_from(node.exponent - min_exponent),
                    0u32,
                );
                let rounded = (field << mantissa_bits) + kept + u32::cast_from(round_up);
                bits = sign | select(rounded < infinity, rounded, infinity);
            }
        }
    }
    (bits, uncertain)
}

/// The node of column `j` of scratch node `node` (in units of a group's columns).
#[cube]
fn load_node(nodes: &[u32], node: usize, j: usize) -> Node {
    let at = (node * GROUP_COLUMNS + j) * NODE_WORDS;
    Node {
        hi: nodes[at],
        lo: nodes[at + 1usize],
        exponent: i32::reinterpret(nodes[at + 2usize]),
        flags: nodes[at + 3usize],
    }
}

#[cube]
fn store_node(nodes: &mut [u32], node: usize, j: usize, value: Node) {
    let at = (node * GROUP_COLUMNS + j) * NODE_WORDS;
    nodes[at] = value.hi;
    nodes[at + 1usize] = value.lo;
    nodes[at + 2usize] = u32::reinterpret(value.exponent);
    nodes[at + 3usize] = value.flags;
}

/// The scratch slot of the chunk at sorted position `position` of the target whose rows start
/// at `start`: two per span of [`PRODUCT_CHUNK`] positions, since a chunk starts there for at
/// most two targets with more than one chunk (one that starts at or before the span, one that
/// starts inside it).
#[cube]
fn slot(position: usize, start: usize) -> usize {
    let offset = start % PRODUCT_CHUNK;
    let inside = position == start && offset != 0usize;
    2usize * (position / PRODUCT_CHUNK) + select(inside, 1usize, 0usize)
}

/// The target of sorted position `position`, or [`SKIPPED`] past the rows.
#[cube]
fn key_at(order: &[u32], targets: &[u32], position: usize, rows: usize) -> u32 {
    let mut key = u32::new(SKIPPED as i64);
    if position < rows {
        key = targets[order[position] as usize];
    }
    key
}

/// Rounds the group's root nodes `acc` (a tree of at most `bound` multiplications) into the
/// target elements from `base` on, except where the rounding is uncertain, whose columns the
/// returned mask lists and whose elements keep their value for the index-order walk.
#[cube]
fn finish(
    output: &mut [Atomic<u32>],
    acc: &Nodes,
    cols: &Columns,
    base: usize,
    bound: u32,
    #[comptime] format: SumFormat,
) -> u32 {
    let old = load_fields(&*output, base, cols.count, format);
    let mut bits = Array::<u32>::new(GROUP_COLUMNS);
    let mut mask = 0u32;
    #[unroll]
    for j in 0..GROUP_COLUMNS {
        let (rounded, uncertain) = round_node(node_of(acc, j), bound, format);
        bits[j] = select(uncertain, old[j], rounded);
        mask |= select(uncertain && j < cols.count, comptime!(1u32 << j), 0u32);
    }
    store_fields(output, base, cols.count, &old, &bits, format);
    mask
}

/// Leaves the columns of `mask` to the index-order walk: their mask at `unit` (the unit of the
/// target's first sorted row and the group) and the unit in the list the walk's launch reads.
#[cube]
fn leave_uncertain(
    masks: &mut [u32],
    uncertain_count: &mut [Atomic<u32>],
    uncertain: &mut [u32],
    unit: usize,
    mask: u32,
) {
    if mask != 0u32 {
        masks[unit] = mask;
        list_pending(uncertain_count, uncertain, unit);
    }
}

/// This launch's unit, one of those listed in `list` (`count` of them, see `unit_position`),
/// and where it works: its columns (`Columns::row` its sorted position), its target and the
/// target's first sorted position; whether the launch has a unit there.
#[cube]
fn listed_chunk(
    count: &mut [Atomic<u32>],
    list: &mut [u32],
    order: &[u32],
    targets: &[u32],
    starts: &[u32],
    sizes: (usize, usize, usize),
) -> (usize, Columns, u32, usize, bool) {
    let (units, slice, groups) = sizes;
    let (unit, listed) = unit_position(count, list, units, true);
    // Arithmetic only: any unit's columns lie in the slice.
    let cols = columns(unit, slice, groups);
    let mut key = u32::new(SKIPPED as i64);
    let mut start = 0usize;
    if listed {
        key = targets[order[cols.row] as usize];
        start = starts[cols.row] as usize;
    }
    (unit, cols, key, start, listed)
}

/// One unit per sorted position: the first sorted position of its target's rows (its target
/// by `targets[order[position]]`), by binary search over the sorted keys.
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn scatter_nd_segment_starts(starts: &mut [u32], order: &[u32], targets: &[u32], rows: usize) {
    let position = ABSOLUTE_POS;
    if position >= rows {
        terminate!();
    }
    let key = targets[order[position] as usize];
    let mut low = 0usize;
    let mut high = position;
    if position > 0usize && targets[order[position - 1usize] as usize] != key {
        low = position;
    }
    while low < high {
        let middle = low + (high - low) / 2usize;
        if targets[order[middle] as usize] < key {
            low = middle + 1usize;
        } else {
            high = middle;
        }
    }
    starts[position] = low as u32;
}

/// Leaves, one unit per sorted position and group of columns (`units = rows * groups`): a
/// target's sole update multiplies its value here (`round_product`: the exact product of two
/// values rounded once, as the tree gives it); the unit at the first row of each chunk of a
/// target with more rows is listed (`chunk_count`, `chunks`) for
/// [`scatter_nd_product_chunks()`]. So on CPU drivers, which run every instruction of a kernel
/// for each group of lanes whichever way its branches go, the tree's kernels run only for the
/// chunks. Data and updates are 32-bit words of `format` (see `columns.rs`), updates read in
/// vectors of `N` lanes.
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn scatter_nd_product_leaves<N: Size>(
    output: &mut [Atomic<u32>],
    updates: &[Vector<u32, N>],
    order: &[u32],
    targets: &[u32],
    starts: &[u32],
    chunk_count: &mut [Atomic<u32>],
    chunks: &mut [u32],
    slice: usize,
    groups: usize,
    units: usize,
    rows: usize,
    #[comptime] format: SumFormat,
) {
    let unit = ABSOLUTE_POS;
    if unit >= units {
        terminate!();
    }
    let cols = columns(unit, slice, groups);
    let position = cols.row;
    let key = targets[order[position] as usize];
    let start = starts[position] as usize;
    let offset = (position - start) % PRODUCT_CHUNK;
    if key == SKIPPED || offset != 0usize {
        terminate!();
    }
    if position != start || key_at(order, targets, position + 1usize, rows) == key {
        list_pending(chunk_count, chunks, unit);
        terminate!();
    }
    let base = key as usize * slice + cols.first;
    let data = load_fields(&*output, base, cols.count, format);
    let row = order[position] as usize;
    let packed = comptime!(Some(format));
    let terms = load_columns::<u32, N>(updates, row * slice + cols.first, cols.count, packed);
    let mut bits = Array::<u32>::new(GROUP_COLUMNS);
    #[unroll]
    for j in 0..GROUP_COLUMNS {
        bits[j] = round_product(u32::reinterpret(widen(data[j], format)), terms[j], format);
    }
    store_fields(output, base, cols.count, &data, &bits, format);
}

/// Chunks, one unit per chunk and group of columns listed by
/// [`scatter_nd_product_leaves()`] (a launch sized on the device): the unit folds the chunk's
/// updates (after the target's value, for the first chunk), in order. A target with one chunk
/// is rounded here (the uncertain columns go to `masks` and `uncertain`, see
/// `leave_uncertain`); the other targets' chunks go to `nodes` and are listed (`node_count`,
/// `node_list`) for [`scatter_nd_product_level()`].
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn scatter_nd_product_chunks<N: Size>(
    output: &mut [Atomic<u32>],
    updates: &[Vector<u32, N>],
    order: &[u32],
    targets: &[u32],
    starts: &[u32],
    chunk_count: &mut [Atomic<u32>],
    chunks: &mut [u32],
    nodes: &mut [u32],
    node_count: &mut [Atomic<u32>],
    node_list: &mut [u32],
    masks: &mut [u32],
    uncertain_count: &mut [Atomic<u32>],
    uncertain: &mut [u32],
    slice: usize,
    groups: usize,
    units: usize,
    rows: usize,
    #[comptime] format: SumFormat,
) {
    let (unit, cols, key, start, listed) = listed_chunk(
        chunk_count,
        chunks,
        order,
        targets,
        starts,
        (units, slice, groups),
    );
    if !listed {
        terminate!();
    }
    let position = cols.row;
    let base = key as usize * slice + cols.first;
    let packed = comptime!(Some(format));
    let mut acc = ones();
    if position == start {
        let data = load_fields(&*output, base, cols.count, format);
        #[unroll]
        for j in 0..GROUP_COLUMNS {
            // One times the leaf is the leaf, bit for bit.
            set_node(&mut acc, j, leaf(u32::reinterpret(widen(data[j], format))));
        }
    }
    let end = position + PRODUCT_CHUNK;
    let mut at = position;
    let mut key_here = key;
    while at < end && key_here == key {
        let row = order[at] as usize;
        let terms = load_columns::<u32, N>(updates, row * slice + cols.first, cols.count, packed);
        #[unroll]
        for j in 0..GROUP_COLUMNS {
            multiply_into(&mut acc, j, leaf(terms[j]));
        }
        at += 1usize;
        key_here = key_at(order, targets, at, rows);
    }
    if position == start && key_here != key {
        let mask = finish(output, &acc, &cols, base, PRODUCT_CHUNK as u32, format);
        leave_uncertain(masks, uncertain_count, uncertain, unit, mask);
    } else {
        let node = slot(position, start) * groups + unit % groups;
        #[unroll]
        for j in 0..GROUP_COLUMNS {
            store_node(nodes, node, j, node_of(&acc, j));
        }
        list_pending(node_count, node_list, unit);
    }
}

/// One level of the tree, one unit per node listed by [`scatter_nd_product_chunks()`] (a
/// chunk of a target with several, and a group of columns; a launch sized on the device): the
/// node of each `width * PRODUCT_FAN` chunks folds the next `PRODUCT_FAN - 1` nodes of `width`
/// chunks, left to right. A target's root is rounded at the level that makes it (a tree of at
/// most `bound` multiplications), as [`scatter_nd_product_chunks()`] rounds a single chunk.
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn scatter_nd_product_level(
    output: &mut [Atomic<u32>],
    order: &[u32],
    targets: &[u32],
    starts: &[u32],
    nodes: &mut [u32],
    node_count: &mut [Atomic<u32>],
    node_list: &mut [u32],
    masks: &mut [u32],
    uncertain_count: &mut [Atomic<u32>],
    uncertain: &mut [u32],
    slice: usize,
    groups: usize,
    units: usize,
    rows: usize,
    width: usize,
    bound: u32,
    #[comptime] format: SumFormat,
) {
    let (unit, cols, key, start, listed) = listed_chunk(
        node_count,
        node_list,
        order,
        targets,
        starts,
        (units, slice, groups),
    );
    if !listed {
        terminate!();
    }
    let position = cols.row;
    let chunk = (position - start) / PRODUCT_CHUNK;
    let reach = width * PRODUCT_FAN;
    let next = position + width * PRODUCT_CHUNK;
    let offset = chunk % reach;
    if offset != 0usize || key_at(order, targets, next, rows) != key {
        terminate!();
    }
    let group = unit % groups;
    let node = slot(position, start) * groups + group;
    let mut acc = ones();
    #[unroll]
    for j in 0..GROUP_COLUMNS {
        set_node(&mut acc, j, load_node(&*nodes, node, j));
    }
    let mut child = next;
    let mut k = 1usize;
    while k < PRODUCT_FAN && key_at(order, targets, child, rows) == key {
        let other = slot(child, start) * groups + group;
        #[unroll]
        for j in 0..GROUP_COLUMNS {
            multiply_into(&mut acc, j, load_node(&*nodes, other, j));
        }
        child += width * PRODUCT_CHUNK;
        k += 1usize;
    }
    let root =
        chunk == 0usize && key_at(order, targets, position + reach * PRODUCT_CHUNK, rows) != key;
    if root {
        let base = key as usize * slice + cols.first;
        let mask = finish(output, &acc, &cols, base, bound, format);
        leave_uncertain(masks, uncertain_count, uncertain, unit, mask);
    } else {
        #[unroll]
        for j in 0..GROUP_COLUMNS {
            store_node(nodes, node, j, node_of(&acc, j));
        }
    }
}
