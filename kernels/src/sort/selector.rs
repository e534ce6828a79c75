//! Host side of the radix select: the `k` candidates of each sequence, in position order, in a
//! [`RadixSort`]'s first buffers, ready for the stable sort that orders them.

use cubecl::prelude::*;
use cubecl::server::Handle;

use super::keys::KeyFormat;
use super::plan::SortPlan;
use super::rows::select_rows;
use super::select::{
    SELECT_BINS, STATE_WORDS, select_count_ties, select_gather, select_histogram,
    select_pick_digit, select_start,
};
use super::sorter::{RadixSort, TILE, launch_keys, scan_rows, scratch_words, tile_cubes};
use crate::capture::launch_unchecked;
use crate::launch::elementwise_geometry;

/// Elements each unit of the select's tiles holds: a tile is `TILE * SELECT_RUN` elements, so
/// a tile adds its 256 bins to its sequence's histogram once per 2,048 keys.
const SELECT_RUN: usize = 16;

/// Keys each unit of the one-cube-per-row select reads per pass over a chunk of the row.
const ROW_RUN: usize = 8;

/// The scratch and geometry of one radix select of `k` of each sequence of `axis_len` keys.
pub(super) struct RadixSelect<'a> {
    client: &'a Client,
    format: KeyFormat,
    plan: SortPlan,
    len: usize,
    axis_len: usize,
    segments: usize,
    tiles_per_segment: usize,
    tiles: usize,
    /// Every key (words `len` apart), each sequence's histogram and its state.
    keys: Handle,
    histogram: Handle,
    state: Handle,
    /// Every index the select's units form.
    reach: usize,
}

impl<'a> RadixSelect<'a> {
    /// The select of the `len` elements of `input` in sequences of `axis_len` (contiguous
    /// `[outer, axis_len, inner]`), keys XORed with `flip`, scans and the candidates' sort as
    /// `plan` says: its keys are made, nothing else.
    pub(super) fn new(
        client: &'a Client,
        input: &Handle,
        (len, axis_len, inner): (usize, usize, usize),
        format: KeyFormat,
        (flip, plan): (u32, SortPlan),
    ) -> Self {
        let segments = len / axis_len;
        let tiles_per_segment = axis_len.div_ceil(TILE * SELECT_RUN);
        let tiles = segments * tiles_per_segment;
        let key_words = len * format.words();
        // Every index a unit forms: the keys, the histograms, the tie table and its scan, and
        // the tiles' units.
        let reach = (key_words + len)
            .max(segments * SELECT_BINS)
            .max(2 * tiles + 2 * TILE * SELECT_RUN)
            .max((tiles + 1) * TILE * SELECT_RUN);
        let select = Self {
            client,
            format,
            plan,
            len,
            axis_len,
            segments,
            tiles_per_segment,
            tiles,
            keys: scratch_words(client, key_words),
            histogram: scratch_words(client, segments * SELECT_BINS),
            state: scratch_words(client, segments * STATE_WORDS),
            reach,
        };
        launch_keys(
            client,
            select.address(),
            input,
            (len, axis_len, inner),
            format,
            flip,
            (&select.keys, None),
        );
        select
    }

    /// The address type that covers every index the select's units form.
    fn address(&self) -> AddressType {
        AddressType::from_len(self.reach)
    }

    /// The `k` smallest keys of each sequence and their positions, in position order, written
    /// to the first buffers of a sort of `k`-long sequences: by one cube per sequence where the
    /// plan selects its rows whole, by launches over tiles otherwise.
    pub(super) fn candidates(&self, k: usize) -> RadixSort<'a> {
        if self.axis_len <= self.plan.row_select_len {
            return self.row_candidates(k);
        }
        self.find_kth(k);
        let table_len = 2 * self.tiles;
        let table = scratch_words(self.client, table_len);
        let totals = scratch_words(self.client, 2 * self.segments);
        let key_words = self.len * self.format.words();
        // SAFETY: units read keys below `key_words` at `segment * axis_len + p` for `p <
        // axis_len`, and the state of their segment (`segment < segments`); the table is written
        // below `2 * tiles`, each tile's two entries.
        unsafe {
            launch_unchecked!(select_count_ties(
                self.client,
                tile_cubes(self.client, self.tiles),
                CubeDim::new_1d(TILE as u32),
                self.address(),
                BufferArg::from_raw_parts(self.keys.clone(), key_words),
                BufferArg::from_raw_parts(self.state.clone(), self.segments * STATE_WORDS),
                BufferArg::from_raw_parts(table.clone(), table_len),
                self.len,
                self.axis_len,
                self.tiles_per_segment,
                self.tiles,
                self.format.words(),
                TILE,
                SELECT_RUN,
                self.plan.planes,
            ));
        }
        let rows = (2 * self.segments, self.tiles_per_segment);
        scan_rows(
            self.client,
            self.address(),
            (&table, &totals, None),
            rows,
            self.plan.planes,
        );
        let sort = self.candidate_sort(k);
        let candidates_len = self.segments * k;
        // SAFETY: as above for the keys, the state and the table (read below `2 * tiles`, and
        // block offsets below its blocks); candidates are stored below `segments * k` only
        // (`dest < k` is checked in the kernel), in buffers of `segments * k` key words (times
        // the key's words) and positions.
        unsafe {
            launch_unchecked!(select_gather(
                self.client,
                tile_cubes(self.client, self.tiles),
                CubeDim::new_1d(TILE as u32),
                AddressType::from_len(self.reach.max(3 * candidates_len)),
                BufferArg::from_raw_parts(self.keys.clone(), key_words),
                BufferArg::from_raw_parts(self.state.clone(), self.segments * STATE_WORDS),
                BufferArg::from_raw_parts(table.clone(), table_len),
                BufferArg::from_raw_parts(
                    sort.keys[0].clone(),
                    candidates_len * self.format.words()
                ),
                BufferArg::from_raw_parts(sort.positions[0].clone(), candidates_len),
                self.len,
                self.axis_len,
                self.tiles_per_segment,
                self.tiles,
                k,
                candidates_len,
                self.format.words(),
                TILE,
                SELECT_RUN,
                self.plan.planes,
            ));
        }
        sort
    }

    /// The sort of `k` candidates of each sequence, whose positions along the long axis may
    /// pass 65,536 (so one cube takes one sequence).
    fn candidate_sort(&self, k: usize) -> RadixSort<'a> {
        RadixSort::new(
            self.client,
            (self.segments * k, k),
            self.format,
            self.plan,
            false,
        )
    }

    /// [`candidates`](Self::candidates) by one cube per sequence, in one launch.
    fn row_candidates(&self, k: usize) -> RadixSort<'a> {
        let sort = self.candidate_sort(k);
        let candidates_len = self.segments * k;
        let key_words = self.len * self.format.words();
        // SAFETY: cube `s < segments` reads keys of segment `s` (below `key_words`, the high
        // words `len` further) and writes candidates below `segments * k` (`dest < k` is checked
        // in the kernel), in buffers of `segments * k` key words (times the key's words) and
        // positions.
        unsafe {
            launch_unchecked!(select_rows(
                self.client,
                crate::launch::cube_count(self.client, self.segments),
                CubeDim::new_1d(SELECT_BINS as u32),
                AddressType::from_len(self.reach.max(3 * candidates_len)),
                BufferArg::from_raw_parts(self.keys.clone(), key_words),
                BufferArg::from_raw_parts(
                    sort.keys[0].clone(),
                    candidates_len * self.format.words()
                ),
                BufferArg::from_raw_parts(sort.positions[0].clone(), candidates_len),
                self.len,
                self.axis_len,
                self.segments,
                k,
                candidates_len,
                self.format.words(),
                ROW_RUN,
                self.plan.planes,
            ));
        }
        sort
    }

    /// Leaves each sequence's `k`-th smallest key in its state, and how many keys equal to it
    /// belong to the `k`.
    fn find_kth(&self, k: usize) {
        let key_words = self.len * self.format.words();
        let bins = self.segments * SELECT_BINS;
        let state_len = self.segments * STATE_WORDS;
        let (cubes, dim) = elementwise_geometry(self.client, bins);
        // SAFETY: unit `g < segments * 256` clears histogram entry `g` and the four state words
        // of segment `g / 256`, the sizes they were made with.
        unsafe {
            launch_unchecked!(select_start(
                self.client,
                cubes,
                dim,
                self.address(),
                BufferArg::from_raw_parts(self.histogram.clone(), bins),
                BufferArg::from_raw_parts(self.state.clone(), state_len),
                self.segments,
                k as u32,
            ));
        }
        for (high_word, shift) in digits(self.format) {
            let (mask_low, mask_high) = masks(self.format, high_word, shift);
            // SAFETY: the histogram's units read keys below `key_words` (`segment * axis_len +
            // p`, `p < axis_len`, plus `len` for the high words), their segment's state and add
            // to its bins, below `segments * 256`; the pick's cube `s < segments` reads and
            // clears bins of segment `s` and updates its state.
            unsafe {
                launch_unchecked!(select_histogram(
                    self.client,
                    tile_cubes(self.client, self.tiles),
                    CubeDim::new_1d(TILE as u32),
                    self.address(),
                    BufferArg::from_raw_parts(self.keys.clone(), key_words),
                    BufferArg::from_raw_parts(self.state.clone(), state_len),
                    BufferArg::from_raw_parts(self.histogram.clone(), bins),
                    self.len,
                    self.axis_len,
                    self.tiles_per_segment,
                    self.tiles,
                    high_word,
                    shift,
                    mask_low,
                    mask_high,
                    self.format.words(),
                    TILE,
                    SELECT_RUN,
                ));
                launch_unchecked!(select_pick_digit(
                    self.client,
                    crate::launch::cube_count(self.client, self.segments),
                    CubeDim::new_1d(SELECT_BINS as u32),
                    self.address(),
                    BufferArg::from_raw_parts(self.histogram.clone(), bins),
                    BufferArg::from_raw_parts(self.state.clone(), state_len),
                    self.segments,
                    high_word,
                    shift,
                    self.plan.planes,
                ));
            }
        }
    }
}

/// The select's 8-bit digits, high digits first, as (word, shift): the high word's four then
/// the low word's for 64-bit keys, the key's `bits / 8` otherwise.
fn digits(format: KeyFormat) -> Vec<(u32, u32)> {
    let low = (0..format.bits.min(32))
        .step_by(8)
        .rev()
        .map(|shift| (0, shift));
    if format.words() == 2 {
        (0..32)
            .step_by(8)
            .rev()
            .map(|shift| (1, shift))
            .chain(low)
            .collect()
    } else {
        low.collect()
    }
}

/// The bits of the low and high key words that the digits before `(high_word, shift)` fixed.
fn masks(format: KeyFormat, high_word: u32, shift: u32) -> (u32, u32) {
    let above = if shift + 8 >= 32 {
        0
    } else {
        u32::MAX << (shift + 8)
    };
    match (format.words(), high_word) {
        (2, 1) => (0, above),
        (2, _) => (above, u32::MAX),
        _ => (above, 0),
    }
}
