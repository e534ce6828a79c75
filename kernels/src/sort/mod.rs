//! DirectML's TopK (`DML_TOP_K1_OPERATOR_DESC`) and a stable sort: along one axis, the first
//! `k` elements of each sequence in ascending or descending order, with their positions.
//!
//! A stable LSD radix sort of order-preserving keys that carries each element's position,
//! batched over every sequence of the axis, with no launch that waits on another workgroup
//! (lavapipe, OpenGL and Metal promise no forward progress between them):
//!
//! 1. [`sort_keys`](fn@sort_keys) turns each element into an unsigned key whose order is the
//!    element's ([`KeyFormat`]; descending order inverts it) and lays the keys out segment by
//!    segment, with each element's position along the axis.
//! 2. A sequence that fits one cube's shared memory (up to [`CUBE_SORT_MAX`] elements) is sorted
//!    there whole, one cube per sequence, in one launch
//!    ([`sort_segments_in_cube`](fn@sort_segments_in_cube)): each unit ranks a run of elements
//!    with packed digit counters and one cube scan per digit. Longer ones take the passes below.
//!    Per 4-bit digit, low digits first: [`sort_count_digits`](fn@sort_count_digits) counts each
//!    tile's digits into a table, [`sort_scan_blocks`](fn@sort_scan_blocks) and the
//!    compaction's one-cube scan turn the table into offsets, and
//!    [`sort_scatter_digits`](fn@sort_scatter_digits) moves every key and position to its
//!    place. Equal digits keep their order, so ties keep increasing position in both orders.
//! 3. A top-k of a longer axis with `k` up to [`SortPlan::select_k`] first finds each sequence's
//!    `k`-th key by radix select and gathers its `k` candidates in position order (see the
//!    [`select` kernels](fn@select_histogram)), then sorts only those, as step 2 does.
//! 4. [`sort_gather_values`](fn@sort_gather_values) copies the first `k` of each segment from
//!    the input, bit for bit, and [`sort_write_indices`](fn@sort_write_indices) writes their
//!    positions in the indices' type.
//!
//! Every buffer is read and written as 32-bit words, so every dtype runs on every runtime
//! (8- and 16-bit types on WGSL, 64-bit ones on OpenGL), and the lengths and `k` travel as
//! launch arguments: nothing compiles per call.

mod counters;
mod keys;
mod launch;
mod output;
mod plan;
mod radix;
mod select;
mod selector;
mod short;
mod sorter;

pub(crate) use keys::load_field;
pub use keys::{KeyFormat, KeyKind, sort_keys};
pub use launch::launch_top_k;
pub(crate) use launch::sorted_positions;
pub use output::{sort_gather_values, sort_write_indices};
pub use plan::{CUBE_SORT_MAX, SortInput, SortOrder, SortOutput, SortPlan, SortShape};
pub use radix::{sort_count_digits, sort_scan_blocks, sort_scatter_digits};
pub use select::{
    select_count_ties, select_gather, select_histogram, select_pick_digit, select_start,
};
pub use short::sort_segments_in_cube;
