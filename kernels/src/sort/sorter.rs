//! Host side of the radix sort: its scratch buffers and launches, and the last two launches
//! that write a top-k's values and indices from sorted positions.

use cubecl::prelude::*;
use cubecl::server::Handle;

use super::counters::{COUNTER_WORDS, DIGIT_BITS};
use super::keys::{KeyFormat, sort_keys, sort_keys_counted};
use super::output::{sort_gather_values, sort_write_indices};
use super::plan::{CUBE_SORT_MAX, CUBE_UNITS, SortOutput, SortPlan};
use super::radix::{
    RADIX_BINS, RADIX_BITS, padded_len, sort_count_digits, sort_scan_digits, sort_scatter_digits,
    sort_scatter_last_digits,
};
use super::short::sort_segments_in_cube;
use crate::capture::launch_unchecked;
use crate::launch::elementwise_geometry;

/// Units per cube of the radix passes.
pub(super) const TILE: usize = 128;

/// Elements each unit of a radix pass holds: a tile is `TILE * RUN` elements, whose digits the
/// scatter holds in shared memory with its counters' scan, in WebGPU's 16 KiB.
const RUN: usize = 16;

/// Count-table entries each unit of a table scan adds up per pass.
const SCAN_PER_UNIT: usize = 16;

/// Shared memory of the one-cube sort of `capacity` elements with `key_words`-word keys: the keys
/// and positions (padded against bank conflicts), the counters' scan (a word per unit and
/// counter word), and under 256 words more (the scan's run offsets, the digit totals, the plane
/// ranks).
fn cube_sort_bytes(capacity: usize, key_words: usize) -> usize {
    (padded_len(capacity) * (key_words + 1) + COUNTER_WORDS * CUBE_UNITS + 256) * size_of::<u32>()
}

/// How the one-cube sort holds a batch of sequences: elements per unit, and sequences per cube.
#[derive(Clone, Copy, Debug)]
pub(super) struct CubeRun {
    per_unit: usize,
    rows: usize,
}

/// How one cube sorts `segments` sequences of `axis_len` elements under `plan`, if one cube
/// sorts them: as many whole sequences to a cube as `plan.cube_pack` elements hold (a power of
/// two of them, where `packable`: positions below 65,536), and elements per unit the smallest
/// power of two that covers them.
pub(super) fn cube_sort_run(
    client: &Client,
    plan: SortPlan,
    (segments, axis_len): (usize, usize),
    key_words: usize,
    packable: bool,
) -> Option<CubeRun> {
    let mut rows = 1;
    if packable && axis_len > 0 {
        while 2 * rows * axis_len <= plan.cube_pack.min(CUBE_SORT_MAX) && rows < segments {
            rows *= 2;
        }
    }
    let per_unit = (rows * axis_len)
        .div_ceil(CUBE_UNITS)
        .max(1)
        .next_power_of_two();
    let capacity = CUBE_UNITS * per_unit;
    let shared = crate::capture::properties(client)
        .hardware
        .max_shared_memory_size;
    (axis_len <= plan.cube_len.min(CUBE_SORT_MAX) && cube_sort_bytes(capacity, key_words) <= shared)
        .then_some(CubeRun { per_unit, rows })
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

/// Scans each of the `rows` rows of `row_len` entries of `table.0` into exclusive offsets, in
/// place, in one launch ([`sort_scan_digits`]), writing each row's total to `table.1` (at least
/// `rows` words) and, where given, zeroing the same entries of `table.2`.
pub(super) fn scan_rows(
    client: &Client,
    address: AddressType,
    (counts, totals, next): (&Handle, &Handle, Option<&Handle>),
    (rows, row_len): (usize, usize),
    planes: bool,
) {
    let table_len = rows * row_len;
    let rows_per_cube = (TILE * SCAN_PER_UNIT / row_len).max(1);
    let (next, next_len) = match next {
        Some(next) => (next.clone(), table_len),
        None => (scratch_words(client, 1), 1),
    };
    // SAFETY: cube `c` touches the entries of its rows (`c * rows_per_cube..`, below `rows`), below
    // `rows * row_len = table_len` in `counts` and, when it was given one of that length, in
    // `next` (zeroed only then), and their totals below `rows`.
    unsafe {
        launch_unchecked!(sort_scan_digits(
            client,
            crate::launch::cube_count(client, rows.div_ceil(rows_per_cube)),
            CubeDim::new_1d(TILE as u32),
            address,
            BufferArg::from_raw_parts(counts.clone(), table_len),
            BufferArg::from_raw_parts(totals.clone(), rows),
            BufferArg::from_raw_parts(next, next_len),
            rows,
            row_len,
            rows_per_cube,
            TILE,
            SCAN_PER_UNIT,
            planes,
            next_len > 1,
        ));
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
    /// Every (segment, digit)'s count of the current pass.
    totals: Handle,
    /// Two count tables of `table_len` words: a pass scans one while its scatter counts the
    /// next pass's digits into the other.
    counts: [Handle; 2],
    /// Key words (planes `len` apart) and positions, twice: each pass moves one to the other.
    /// The one-cube sort reads the first keys only, and the second is then one word.
    pub(super) keys: [Handle; 2],
    pub(super) positions: [Handle; 2],
    table_len: usize,
    /// Elements per unit where one cube sorts each sequence, under the plan the sort was made
    /// for.
    cube_run: Option<CubeRun>,
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
        let mut sort = Self::new(client, (len, axis_len), format, plan, true);
        if format.words() == 1 {
            sort.low_bits = low_bits.clamp(1, format.bits);
        }
        let sorted = match sort.cube_run {
            Some(run) => {
                launch_keys(
                    client,
                    sort.address,
                    input,
                    (len, axis_len, inner),
                    format,
                    flip,
                    (&sort.keys[0], Some(&sort.positions[0])),
                );
                sort.in_cube(run)
            }
            None => {
                sort.keys_counted(input, inner, flip);
                sort.passes(true)
            }
        };
        (sort, sorted)
    }

    /// Scratch for `len` keys in sequences of `axis_len`, sorted as `plan` says; the caller
    /// fills the first key and position buffers, `packable` where every position is below
    /// 65,536 (the one-cube sort may then take several sequences to a cube).
    pub(super) fn new(
        client: &'a Client,
        (len, axis_len): (usize, usize),
        format: KeyFormat,
        plan: SortPlan,
        packable: bool,
    ) -> Self {
        let segments = len / axis_len;
        let cube_run = cube_sort_run(client, plan, (segments, axis_len), format.words(), packable);
        let tiles_per_segment = axis_len.div_ceil(TILE * RUN);
        let tiles = segments * tiles_per_segment;
        let table_len = tiles * RADIX_BINS;
        let key_words = len * format.words();
        let passes = cube_run.is_none();
        // Every index a unit forms: keys and positions, the table, and the tiles' units.
        let reach = (key_words + 2 * len)
            .max(table_len + TILE * SCAN_PER_UNIT)
            .max((tiles + 1) * TILE * RUN * 2);
        Self {
            client,
            format,
            planes: plan.planes,
            len,
            axis_len,
            tiles_per_segment,
            tiles,
            totals: scratch_words(client, if passes { segments * RADIX_BINS } else { 1 }),
            counts: [(); 2].map(|_| scratch_words(client, if passes { table_len } else { 1 })),
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
            Some(run) => self.in_cube(run),
            None => self.passes(false),
        }
    }

    /// The keys launch of the radix passes: keys and positions of the `[outer, axis_len,
    /// inner]` input, XORed with `flip`, and the first pass's count table.
    fn keys_counted(&self, input: &Handle, inner: usize, flip: u32) {
        let format = self.format;
        // SAFETY: cube `t < tiles` reads the input words of the elements of its tile (below
        // `len`, checked by the caller) and writes their keys (below `len * words()`) and
        // positions (below `len`), and the count table below `table_len`.
        unsafe {
            launch_unchecked!(sort_keys_counted(
                self.client,
                tile_cubes(self.client, self.tiles),
                CubeDim::new_1d(TILE as u32),
                self.address,
                BufferArg::from_raw_parts(input.clone(), words_of(self.len, format.bits)),
                BufferArg::from_raw_parts(self.keys[0].clone(), self.len * format.words()),
                BufferArg::from_raw_parts(self.positions[0].clone(), self.len),
                BufferArg::from_raw_parts(self.counts[0].clone(), self.table_len),
                self.len,
                self.axis_len,
                inner,
                self.tiles_per_segment,
                self.tiles,
                flip,
                format,
                TILE,
                RUN,
            ));
        }
    }

    /// The whole sort of each segment in one cube, `per_unit` elements to a unit: the sorted
    /// positions go to the second buffer.
    fn in_cube(&self, run: CubeRun) -> usize {
        let segments = self.len / self.axis_len;
        let key_words = self.len * self.format.words();
        let key_passes = if self.format.words() == 2 {
            16
        } else {
            self.low_bits.div_ceil(DIGIT_BITS)
        };
        let row_passes = run.rows.trailing_zeros().div_ceil(DIGIT_BITS);
        // SAFETY: cube `c` reads keys and positions of its segments (`c * rows..`, below
        // `segments`: below `len` and `key_words`) and writes positions below `len`; its shared
        // memory holds `128 * per_unit >= rows * axis_len` elements, every index below that.
        unsafe {
            launch_unchecked!(sort_segments_in_cube(
                self.client,
                crate::launch::cube_count(self.client, segments.div_ceil(run.rows)),
                CubeDim::new_1d(CUBE_UNITS as u32),
                self.address,
                BufferArg::from_raw_parts(self.keys[0].clone(), key_words),
                BufferArg::from_raw_parts(self.positions[0].clone(), self.len),
                BufferArg::from_raw_parts(self.positions[1].clone(), self.len),
                self.len,
                self.axis_len,
                segments,
                run.rows,
                key_passes,
                row_passes,
                self.format.words(),
                run.per_unit,
                CUBE_UNITS,
                self.planes,
            ));
        }
        1
    }

    /// Every radix pass, low digits first, each 8-bit digit of the sorted bits as (key word's
    /// offset, shift); `counted` where the keys launch counted the first one. Returns which of
    /// the two buffers ends up sorted.
    fn passes(&self, counted: bool) -> usize {
        let bits = if self.format.words() == 2 {
            32
        } else {
            self.low_bits
        };
        let digits: Vec<(usize, u32)> = (0..self.format.words())
            .flat_map(|word| {
                (0..bits)
                    .step_by(RADIX_BITS as usize)
                    .map(move |shift| (word * self.len, shift))
            })
            .collect();
        if !counted {
            self.count(digits[0]);
        }
        let mut from = 0;
        for (pass, &digit) in digits.iter().enumerate() {
            let tables = (&self.counts[pass % 2], &self.counts[1 - pass % 2]);
            let next = digits.get(pass + 1).copied();
            self.scan(tables, next.is_some());
            self.scatter(from, tables, digit, next);
            from = 1 - from;
        }
        from
    }

    /// Counts the digit at `shift` of the key word at `word_offset` of the first keys into the
    /// first count table.
    fn count(&self, (word_offset, shift): (usize, u32)) {
        // SAFETY: units read keys below `word_offset + len <= key_words`, at `segment * axis_len
        // + position` for an existing element; the table is written below `table_len`
        // (`segment < len / axis_len`, `tile < tiles_per_segment`, 256 digits).
        unsafe {
            launch_unchecked!(sort_count_digits(
                self.client,
                tile_cubes(self.client, self.tiles),
                CubeDim::new_1d(TILE as u32),
                self.address,
                BufferArg::from_raw_parts(self.keys[0].clone(), self.len * self.format.words()),
                BufferArg::from_raw_parts(self.counts[0].clone(), self.table_len),
                self.axis_len,
                self.tiles_per_segment,
                self.tiles,
                word_offset,
                shift,
                TILE,
                RUN,
            ));
        }
    }

    /// Scans the count table `tables.0` into offsets and totals, and with `clear_next` zeroes
    /// `tables.1` for the scatter to count the next digits into.
    fn scan(&self, (counts, next): (&Handle, &Handle), clear_next: bool) {
        let rows = self.len / self.axis_len * RADIX_BINS;
        let next = clear_next.then_some(next);
        let table = (counts, &self.totals, next);
        scan_rows(
            self.client,
            self.address,
            table,
            (rows, self.tiles_per_segment),
            self.planes,
        );
    }

    /// Moves every element from buffer `from` to the other by the digit `(word_offset, shift)`,
    /// with the scanned table `tables.0`, and counts the `next` digit into `tables.1`.
    fn scatter(
        &self,
        from: usize,
        (counts, next_counts): (&Handle, &Handle),
        (word_offset, shift): (usize, u32),
        next: Option<(usize, u32)>,
    ) {
        let key_words = self.len * self.format.words();
        let rows = self.len / self.axis_len * RADIX_BINS;
        let cubes = || tile_cubes(self.client, self.tiles);
        let dim = CubeDim::new_1d(TILE as u32);
        // SAFETY: units read keys below `word_offset + len <= key_words` (and the next digit's
        // word below the same bound) and positions below `len`, at `segment * axis_len +
        // position` for an existing element; the tables are read and added to below
        // `table_len` (`segment < len / axis_len`, a tile below `tiles_per_segment`: places are
        // checked against the axis in the kernel) and the totals below `rows`; stores stay
        // below `len`.
        unsafe {
            let keys = || BufferArg::from_raw_parts(self.keys[from].clone(), key_words);
            let positions = || BufferArg::from_raw_parts(self.positions[from].clone(), self.len);
            let offsets = || BufferArg::from_raw_parts(counts.clone(), self.table_len);
            let totals = || BufferArg::from_raw_parts(self.totals.clone(), rows);
            let keys_out = || BufferArg::from_raw_parts(self.keys[1 - from].clone(), key_words);
            let positions_out =
                || BufferArg::from_raw_parts(self.positions[1 - from].clone(), self.len);
            match next {
                Some((next_word_offset, next_shift)) => launch_unchecked!(sort_scatter_digits(
                    self.client,
                    cubes(),
                    dim,
                    self.address,
                    keys(),
                    positions(),
                    offsets(),
                    totals(),
                    keys_out(),
                    positions_out(),
                    BufferArg::from_raw_parts(next_counts.clone(), self.table_len),
                    self.len,
                    self.axis_len,
                    self.tiles_per_segment,
                    self.tiles,
                    word_offset,
                    shift,
                    next_word_offset,
                    next_shift,
                    self.format.words(),
                    TILE,
                    RUN,
                    self.planes,
                )),
                None => launch_unchecked!(sort_scatter_last_digits(
                    self.client,
                    cubes(),
                    dim,
                    self.address,
                    keys(),
                    positions(),
                    offsets(),
                    totals(),
                    keys_out(),
                    positions_out(),
                    self.len,
                    self.axis_len,
                    self.tiles_per_segment,
                    self.tiles,
                    word_offset,
                    shift,
                    self.format.words(),
                    TILE,
                    RUN,
                    self.planes,
                )),
            }
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
