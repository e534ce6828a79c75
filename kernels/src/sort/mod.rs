//! DirectML's TopK (`DML_TOP_K1_OPERATOR_DESC`) and a stable sort: along one axis, the first
//! `k` elements of each sequence in ascending or descending order, with their positions.
//!
//! A stable LSD radix sort of order-preserving keys that carries each element's position,
//! batched over every sequence of the axis, with no launch that waits on another workgroup
//! (lavapipe, OpenGL and Metal promise no forward progress between them):
//!
//! 1. Each element becomes an unsigned key whose order is the element's ([`KeyFormat`];
//!    descending order inverts it), laid out segment by segment with its position along the
//!    axis: [`sort_keys`](fn@sort_keys), or for the radix passes
//!    [`sort_keys_counted`](fn@sort_keys_counted), which also counts the first digit.
//! 2. Sequences that fit one cube's shared memory (up to [`CUBE_SORT_MAX`] elements) are sorted
//!    there whole in one launch ([`sort_segments_in_cube`](fn@sort_segments_in_cube)): one cube
//!    per sequence, or several short sequences to a cube, grouped again by one more digit of
//!    their index. Each unit ranks a run of elements with packed 4-bit digit counters and one
//!    cube scan per digit. Longer sequences take two launches per 8-bit digit, low digits first:
//!    [`sort_scan_digits`](fn@sort_scan_digits) turns the tiles' digit counts into offsets, and
//!    [`sort_scatter_digits`](fn@sort_scatter_digits) moves every key and position to its place
//!    and counts the next digit where it lands. Equal digits keep their order, so ties keep
//!    increasing position in both orders.
//! 3. A top-k of a longer axis with `k` up to [`SortPlan::select_k`] first finds each sequence's
//!    `k`-th key by radix select and gathers its `k` candidates in position order, then sorts
//!    only those, as step 2 does: one cube per sequence in one launch
//!    ([`select_rows`](fn@select_rows)) up to [`SortPlan::row_select_len`], else two launches per
//!    8-bit digit over tiles and three for the candidates (see the
//!    [`select` kernels](fn@select_histogram)).
//! 4. [`sort_gather_values`](fn@sort_gather_values) copies the first `k` of each segment from
//!    the input, bit for bit, and [`sort_write_indices`](fn@sort_write_indices) writes their
//!    positions in the indices' type.
//!
//! Every buffer is read and written as 32-bit words, so every dtype runs on every runtime
//! (8- and 16-bit types on WGSL, 64-bit ones on OpenGL), and the lengths and `k` travel as
//! launch arguments: nothing compiles per call.
//!
//! # Cost model
//!
//! The plan's choices follow from what a GPU pays, not from a CPU driver's timings (lavapipe
//! runs a launch for almost nothing and reads any pattern at one pace). Four quantities of the
//! GPU (an H100's values, and the thresholds they give, are in `benches/README.md`):
//!
//! - `L`, the cost of a launch that depends on the one before;
//! - `B`, the device's bandwidth when every multiprocessor has work;
//! - `b`, what one cube working alone streams;
//! - `S`, the multiprocessors, each holding a few cubes at once.
//!
//! A call then costs about `launches * L + bytes / B` where its cubes fill the GPU, and a cube
//! that works alone `its bytes / b`. What follows:
//!
//! - **Digits of 8 bits** in the radix passes: 4 passes for 32-bit keys, 8 for 64-bit ones, at
//!   two launches each, since the keys launch counts the first digit and each scatter the next
//!   (one atomic per run of equal tile and digit). A pass reads and writes a key and a position
//!   per element, and the count tables; 4-bit digits took twice the passes at four launches
//!   each. Wider digits would need tables of 2,048 counts per tile, which WebGPU's 16 KiB of
//!   shared memory cannot rank.
//! - **One cube or many** ([`SortPlan::cube_len`]): a sequence of up to [`CUBE_SORT_MAX`]
//!   elements sorts in one cube in one launch (its passes over shared memory cost far less than
//!   `L`), where the radix passes would take 9 launches, `9 L`, whatever the length.
//! - **Sequences per cube** ([`SortPlan::cube_pack`]): a cube's passes cost about the same for
//!   128 elements as for 1,024 (their barriers dominate), so sequences of up to half of
//!   `cube_pack` share a cube, grouped again by one more 4-bit pass per 16 of them, where one
//!   cube each would leave most of its units idle.
//! - **Radix select** ([`SortPlan::select_k`]): a top-k of `k` up to [`CUBE_SORT_MAX`] of a
//!   longer axis reads its keys once per digit and sorts only `k` candidates in one cube: 5
//!   launches, where the whole sort takes 11 and reads and writes every key 4 times.
//! - **One cube per row for the select** ([`SortPlan::row_select_len`]): the select over tiles
//!   takes 11 launches more than one cube per row, `11 L`; one cube reads its row 5 times (4
//!   digits and the gather), `5 * 4 * n / b` for `n` 32-bit keys. One cube per row up to the
//!   `n` where the two meet; many rows run side by side.
//!
//! Each threshold is a [`SortPlan`] field that a run on a GPU can change (the sort bench's
//! `SORT_BENCH_PLAN`), and the kernel crate's launch budget test holds the launches per call.

mod counters;
mod keys;
mod launch;
mod output;
mod plan;
mod radix;
mod rows;
mod select;
mod selector;
mod short;
mod sorter;

pub(crate) use keys::load_field;
pub use keys::{KeyFormat, KeyKind, sort_keys, sort_keys_counted};
pub use launch::launch_top_k;
pub(crate) use launch::sorted_positions;
pub use output::{sort_gather_values, sort_write_indices};
pub use plan::{
    CUBE_PACK, CUBE_SORT_MAX, ROW_SELECT_MAX, SortInput, SortOrder, SortOutput, SortPlan, SortShape,
};
pub use radix::{
    sort_count_digits, sort_scan_digits, sort_scatter_digits, sort_scatter_last_digits,
};
pub use rows::select_rows;
pub use select::{
    select_count_ties, select_gather, select_histogram, select_pick_digit, select_start,
};
pub use short::sort_segments_in_cube;
