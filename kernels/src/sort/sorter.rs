//! Host side of the radix sort: its scratch buffers and launches, and the last two launches
//! that write a top-k's values and indices from sorted positions.

use cubecl::ir::UIntKind;
use cubecl::prelude::*;
use cubecl::server::Handle;

use super::counters::COUNTER_WORDS;
use super::keys::{KeyFormat, sort_keys};
use super::output::{sort_gather_values, sort_write_indices};
use super::plan::{CUBE_SORT_MAX, CUBE_UNITS, SortOutput, SortPlan};
use super::radix::{DIGIT_BITS, DIGITS, sort_count_digits, sort_scan_blocks, sort_scatter_digits};
use super::short::sort_segments_in_cube;
use crate::capture::launch_unchecked;
use crate::launch::elementwise_geometry;
use crate::nonzero::nonzero_scan_tiles;

/// Units per cube of the radix passes.
pub(super) const TILE: usize = 128;

/// Elements each unit of a radix pass holds: a tile is `TILE * RUN` elements.
const RUN: usize = 8;

/// Count-table entries each unit of the table's block scan adds up.
const SCAN_PER_UNIT: usize = 16;

/// Shared memory of the one-cube sort of `capacity` elements with `key_words`-word keys: the keys
/// and positions, the counters' scan (a word per unit and counter word), and under 256 words
/// more (the scan's run offsets, the digit totals, the plane ranks).
fn cube_sort_bytes(capacity: usize, key_words: usize) -> usize {
    (capacity * (key_words + 1) + COUNTER_WORDS * CUBE_UNITS + 256) * size_of::<u32>()
}

/// Elements per unit of the one-cube sort of `axis_len` elements under `plan`, if one cube
/// sorts it: the smallest power of two that covers the axis.
pub(super) fn cube_sort_run(
    client: &Client,
    plan: SortPlan,
    axis_len: usize,
    key_words: usize,
) -> Option<usize> {
    let per_unit = axis_len.div_ceil(CUBE_UNITS).max(1).next_power_of_two();
    let capacity = CUBE_UNITS * per_unit;
    let shared = crate::capture::properties(client)
        .hardware
        .max_shared_memory_size;
    (axis_len <= plan.cube_len.min(CUBE_SORT_MAX) && cube_sort_bytes(capacity, key_words) <= shared)
        .then_some(per_unit)
}

/// 32-bit words that hold `len` elements of `bits` bits.
fn words_of(len: usize, bits: u32) -> usize {
    (len * bits as usize).div_ceil(32)
}

/// One cube of `TILE` units per tile, `tiles` in all.
pub(super) fn tile_cubes(client: &Client, tiles: usize) -> CubeCount {
    crate::launch::cube_count(client, tiles)
}

/// A scratch buffer of `n` words (at least one).
pub(super) fn scratch_words(client: &Client, n: usize) -> Handle {
    client.empty(n.max(1) * size_of::<u32>())
}

/// Runs the element-wise key launch: keys of the `len` elements of a contiguous `[outer,
/// axis_len, inner]` input, segment by segment, XORed with `flip`, and their positions when
/// `positions` is given.
pub(super) fn launch_keys(
    client: &Client,
    address: AddressType,
    input: &Handle,
    (len, axis_len, inner): (usize, usize, usize),
    format: KeyFormat,
    flip: u32,
    (keys, positions): (&Handle, Option<&Handle>),
) {
    let (cubes, dim) = elementwise_geometry(client, len);
    let input_words = words_of(len, format.bits);
    let with_positions = positions.is_some();
    let (positions, positions_len) = match positions {
        Some(handle) => (handle.clone(), len),
        None => (scratch_words(client, 1), 1),
    };
    // SAFETY: unit `g < len` reads the input words of element `g` of a contiguous input of
    // `len` elements (checked by the caller), and writes `keys` below `len * words()` and, when
    // it was given one of `len` words, `positions` below `len`.
    unsafe {
        launch_unchecked!(sort_keys(
            client,
            cubes,
            dim,
            address,
            BufferArg::from_raw_parts(input.clone(), input_words),
            BufferArg::from_raw_parts(keys.clone(), len * format.words()),
            BufferArg::from_raw_parts(positions, positions_len),
            len,
            axis_len,
            inner,
            flip,
            format,
            with_positions,
        ));
    }
}

/// The blocks, block totals and offsets of the exclusive scan of a table of `table_len` words
/// in place: [`sort_scan_blocks`] scans each block of `TILE * SCAN_PER_UNIT` entries, and the
/// compaction's one-cube scan turns the blocks' totals into their offsets.
pub(super) struct TableScan {
    table_len: usize,
    blocks: usize,
    block_totals: Handle,
    /// The offset of each block, to add to its entries' offsets within it.
    block_offsets: Handle,
    total: Handle,
}

impl TableScan {
    /// Entries per block.
    pub(super) const BLOCK: usize = TILE * SCAN_PER_UNIT;

    pub(super) fn new(client: &Client, table_len: usize) -> Self {
        let blocks = table_len.div_ceil(Self::BLOCK);
        Self {
            table_len,
            blocks,
            block_totals: scratch_words(client, blocks),
            block_offsets: scratch_words(client, blocks + 1),
            total: scratch_words(client, 1),
        }
    }

    /// Scans `table` (of the length the scan was made for).
    pub(super) fn run(&self, client: &Client, address: AddressType, table: &Handle, planes: bool) {
        // SAFETY: the block scan touches entries below `table_len` and block totals below
        // `blocks`; the offsets' scan reads `blocks` totals and writes `blocks + 1` offsets and
        // one total, the sizes they were made with.
        unsafe {
            launch_unchecked!(sort_scan_blocks(
                client,
                crate::launch::cube_count(client, self.blocks),
                CubeDim::new_1d(TILE as u32),
                address,
                BufferArg::from_raw_parts(table.clone(), self.table_len),
                BufferArg::from_raw_parts(self.block_totals.clone(), self.blocks),
                self.table_len,
                self.blocks,
                TILE,
                SCAN_PER_UNIT,
                planes,
            ));
            launch_unchecked!(nonzero_scan_tiles(
                client,
                CubeCount::Static(1, 1, 1),
                CubeDim::new_1d(TILE as u32),
                address,
                BufferArg::from_raw_parts(self.block_totals.clone(), self.blocks),
                BufferArg::from_raw_parts(self.block_offsets.clone(), self.blocks + 1),
                BufferArg::from_raw_parts(self.total.clone(), 1),
                self.blocks,
                self.blocks.div_ceil(TILE),
                TILE,
                planes,
                cubecl::ir::ElemType::UInt(UIntKind::U32),
            ));
        }
    }

    /// The block offsets as a launch argument.
    pub(super) fn offsets_arg(&self) -> BufferArg {
        // SAFETY: the buffer was made with `blocks + 1` words.
        unsafe { BufferArg::from_raw_parts(self.block_offsets.clone(), self.blocks + 1) }
    }
}

/// The scratch and geometry of one radix sort of `len` keys in segments of `axis_len`.
pub(super) struct RadixSort<'a> {
    client: &'a Client,
    format: KeyFormat,
    planes: bool,
    len: usize,
    /// The length of each sequence.
    pub(super) axis_len: usize,
    tiles_per_segment: usize,
    tiles: usize,
    /// Key words (planes `len` apart) and positions, twice: each pass moves one to the other.
    /// The one-cube sort reads the first keys only, and the second is then one word.
    pub(super) keys: [Handle; 2],
    pub(super) positions: [Handle; 2],
    table_len: usize,
    /// Elements per unit where one cube sorts each sequence, under the plan the sort was made
    /// for.
    cube_run: Option<usize>,
    /// The low bits of a one-word key that are sorted (the key's width unless the caller knows
    /// that every key's higher bits are equal); two-word keys sort all 64.
    low_bits: u32,
    address: AddressType,
}

impl<'a> RadixSort<'a> {
    /// The keys of `len` elements of `input` in sequences of `axis_len` (from the caller's
    /// shape), XORed with `flip` and sorted by their `low_bits` low bits (see the field) by the
    /// one-cube sort or the radix passes; returns the sort and which positions buffer holds the
    /// result.
    pub(super) fn run(
        client: &'a Client,
        input: &Handle,
        (len, axis_len, inner): (usize, usize, usize),
        format: KeyFormat,
        (flip, low_bits): (u32, u32),
        plan: SortPlan,
    ) -> (Self, usize) {
        let mut sort = Self::new(client, len, axis_len, format, plan);
        if format.words() == 1 {
            sort.low_bits = low_bits.clamp(1, format.bits);
        }
        launch_keys(
            client,
            sort.address,
            input,
            (len, axis_len, inner),
            format,
            flip,
            (&sort.keys[0], Some(&sort.positions[0])),
        );
        let sorted = sort.order();
        (sort, sorted)
    }

    /// Scratch for `len` keys in sequences of `axis_len`, sorted as `plan` says; the caller
    /// fills the first key and position buffers.
    pub(super) fn new(
        client: &'a Client,
        len: usize,
        axis_len: usize,
        format: KeyFormat,
        plan: SortPlan,
    ) -> Self {
        let cube_run = cube_sort_run(client, plan, axis_len, format.words());
        let segments = len / axis_len;
        let tiles_per_segment = axis_len.div_ceil(TILE * RUN);
        let tiles = segments * tiles_per_segment;
        let table_len = tiles * DIGITS;
        let key_words = len * format.words();
        // Every index a unit forms: keys and positions, the table, and the tiles' units.
        let reach = (key_words + 2 * len)
            .max(table_len + TableScan::BLOCK)
            .max((tiles + 1) * TILE * RUN * 2);
        Self {
            client,
            format,
            planes: plan.planes,
            len,
            axis_len,
            tiles_per_segment,
            tiles,
            keys: [
                scratch_words(client, key_words),
                scratch_words(client, if cube_run.is_some() { 1 } else { key_words }),
            ],
            positions: [scratch_words(client, len), scratch_words(client, len)],
            table_len,
            cube_run,
            low_bits: format.bits.min(32),
            address: AddressType::from_len(reach),
        }
    }

    /// Sorts the first buffers' keys and positions, by one cube per sequence where the plan
    /// and the runtime's shared memory allow, by the radix passes otherwise; returns which
    /// positions buffer holds the result.
    pub(super) fn order(&self) -> usize {
        match self.cube_run {
            Some(per_unit) => self.in_cube(per_unit),
            None => self.passes(),
        }
    }

    /// The whole sort of each segment in one cube, `per_unit` elements to a unit: the sorted
    /// positions go to the second buffer.
    fn in_cube(&self, per_unit: usize) -> usize {
        let segments = self.len / self.axis_len;
        let key_words = self.len * self.format.words();
        let passes = if self.format.words() == 2 {
            16
        } else {
            self.low_bits.div_ceil(DIGIT_BITS)
        };
        // SAFETY: cube `s < segments` reads keys and positions of segment `s` (below `len` and
        // `key_words`) and writes positions below `len`; its shared memory holds `128 *
        // per_unit >= axis_len` elements, every index below `axis_len`.
        unsafe {
            launch_unchecked!(sort_segments_in_cube(
                self.client,
                crate::launch::cube_count(self.client, segments),
                CubeDim::new_1d(CUBE_UNITS as u32),
                self.address,
                BufferArg::from_raw_parts(self.keys[0].clone(), key_words),
                BufferArg::from_raw_parts(self.positions[0].clone(), self.len),
                BufferArg::from_raw_parts(self.positions[1].clone(), self.len),
                self.len,
                self.axis_len,
                segments,
                passes,
                self.format.words(),
                per_unit,
                CUBE_UNITS,
                self.planes,
            ));
        }
        1
    }

    /// Every radix pass, low digits first; returns which of the two buffers ends up sorted.
    fn passes(&self) -> usize {
        let counts = scratch_words(self.client, self.table_len);
        let scan = TableScan::new(self.client, self.table_len);
        let mut from = 0;
        for word in 0..self.format.words() {
            let bits = if self.format.words() == 2 {
                32
            } else {
                self.low_bits
            };
            for shift in (0..bits).step_by(DIGIT_BITS as usize) {
                self.pass(&counts, &scan, from, (word * self.len, shift));
                from = 1 - from;
            }
        }
        from
    }

    /// One pass: count the digit at `shift` of the key word at `word_offset` into `counts`,
    /// scan it, move every element from buffer `from` to the other.
    fn pass(
        &self,
        counts: &Handle,
        scan: &TableScan,
        from: usize,
        (word_offset, shift): (usize, u32),
    ) {
        let key_words = self.len * self.format.words();
        // SAFETY (both launches): units read keys below `word_offset + len <= key_words` and
        // positions below `len`, at `segment * axis_len + position` for an existing element; the
        // count table is written below `table_len` (`segment < len / axis_len`, `tile <
        // tiles_per_segment`, 16 digits); the scatter stores below `len` only (checked in the
        // kernel) and reads block offsets below the scan's blocks.
        unsafe {
            launch_unchecked!(sort_count_digits(
                self.client,
                tile_cubes(self.client, self.tiles),
                CubeDim::new_1d(TILE as u32),
                self.address,
                BufferArg::from_raw_parts(self.keys[from].clone(), key_words),
                BufferArg::from_raw_parts(counts.clone(), self.table_len),
                self.axis_len,
                self.tiles_per_segment,
                self.tiles,
                word_offset,
                shift,
                TILE,
                RUN,
                self.planes,
            ));
        }
        scan.run(self.client, self.address, counts, self.planes);
        // SAFETY: as above.
        unsafe {
            launch_unchecked!(sort_scatter_digits(
                self.client,
                tile_cubes(self.client, self.tiles),
                CubeDim::new_1d(TILE as u32),
                self.address,
                BufferArg::from_raw_parts(self.keys[from].clone(), key_words),
                BufferArg::from_raw_parts(self.positions[from].clone(), self.len),
                BufferArg::from_raw_parts(counts.clone(), self.table_len),
                scan.offsets_arg(),
                BufferArg::from_raw_parts(self.keys[1 - from].clone(), key_words),
                BufferArg::from_raw_parts(self.positions[1 - from].clone(), self.len),
                self.len,
                self.axis_len,
                self.tiles_per_segment,
                self.tiles,
                word_offset,
                shift,
                TableScan::BLOCK,
                self.format.words(),
                TILE,
                RUN,
                self.planes,
            ));
        }
    }
}

/// Writes a top-k's values and indices: the first `k` of each sequence of `sorted` (positions
/// along the axis, `stride` of them per sequence), with the values gathered bit for bit from
/// the contiguous `[outer, axis_len, inner]` input of `len` elements of `bits` bits.
pub(super) fn write_outputs(
    client: &Client,
    input: &Handle,
    (len, axis_len, inner): (usize, usize, usize),
    (sorted, stride): (&Handle, usize),
    output: &SortOutput,
    k: usize,
    (bits, index_bits): (u32, u32),
) {
    let sequences = len / axis_len;
    let out_len = sequences * k;
    let listed = sequences * stride;
    let input_words = words_of(len, bits);
    let value_words = words_of(out_len, bits);
    let index_words = words_of(out_len, index_bits);
    let address = AddressType::from_len(2 * len.max(listed).max(out_len) + TILE);
    let (cubes, dim) = elementwise_geometry(client, value_words);
    // SAFETY: unit `w < value_words` writes value word `w` (the words of `out_len` elements,
    // which the caller checked the handle holds and CubeCL binds whole) and reads positions
    // below `listed` (`r < k <= stride`) and the input words of elements below `len` (each
    // position is clamped below `axis_len`).
    unsafe {
        launch_unchecked!(sort_gather_values(
            client,
            cubes,
            dim,
            address,
            BufferArg::from_raw_parts(input.clone(), input_words),
            BufferArg::from_raw_parts(sorted.clone(), listed),
            BufferArg::from_raw_parts(output.values.clone(), value_words),
            out_len,
            value_words,
            k,
            axis_len,
            stride,
            inner,
            bits,
        ));
    }
    let (cubes, dim) = elementwise_geometry(client, index_words);
    // SAFETY: as above, for the index words.
    unsafe {
        launch_unchecked!(sort_write_indices(
            client,
            cubes,
            dim,
            address,
            BufferArg::from_raw_parts(sorted.clone(), listed),
            BufferArg::from_raw_parts(output.indices.clone(), index_words),
            out_len,
            index_words,
            k,
            axis_len,
            stride,
            inner,
            index_bits,
        ));
    }
}
