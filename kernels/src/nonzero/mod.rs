//! NonZeroCoordinates: the coordinates of every non-zero element, in ascending row-major order,
//! as a stream compaction that never reads back to the host.
//!
//! Reduce-then-scan in three launches, laid out by a [`CompactionPlan`]:
//!
//! 1. [`nonzero_tile_counts`](fn@nonzero_tile_counts) reads each tile once, counts its non-zero
//!    elements and leaves one bit per element in a mask ([`TileShape`] gives the layout). With
//!    planes (GPUs) a tile is read in coalesced rows, every load issued before any is tested,
//!    and counted as a whole; without (CPU drivers) each unit reads and counts the run of
//!    vectors it writes in step 3, with no barrier.
//! 2. [`nonzero_scan_tiles`](fn@nonzero_scan_tiles): one cube turns those counts into offsets
//!    and writes the total into `count`.
//! 3. [`nonzero_write_coordinates`](fn@nonzero_write_coordinates) writes the coordinates from
//!    the mask (the input is not read again) and the padding rows: with planes, each plane
//!    writes contiguous rows of neighbouring vectors; without, each unit writes its run from
//!    its own offset, and [`nonzero_fill_padding`](fn@nonzero_fill_padding) then stores the
//!    padding rows as vectors (scalar padding stores are slow on CPU drivers).
//!
//! A row's index is its element's rank among the non-zero elements (the offset the scan gave
//! its tile, or without planes its unit's run; then the units or planes before it in the tile;
//! then the set bits before it), so rows come out in ascending order whatever order the stores
//! happen in, and no sort is needed. Every store is checked against the output's length,
//! whatever a scan computes.
//!
//! Inputs of a [type the runtime cannot bind](crate#types-the-runtime-cannot-bind) are read as
//! 32-bit words; outputs of such a type are written as `u32` scratch and stored as words by a
//! fourth launch, [`nonzero_output_words`](fn@nonzero_output_words). The dimensions travel as
//! launch arguments, so a call uploads nothing.

mod count;
mod geometry;
mod launch;
mod output_words;
mod padding;
mod plan;
mod rows;
mod scan;
mod tile;
mod write;
mod write_planes;

pub use count::{ElementRead, nonzero_tile_counts};
pub use launch::{
    CompactionInput, CompactionOutput, CompactionStages, NonZeroPredicate,
    launch_nonzero_coordinates,
};
pub use output_words::nonzero_output_words;
pub use padding::nonzero_fill_padding;
pub use plan::{CompactionPlan, CubeScan};
pub use scan::nonzero_scan_tiles;
pub(crate) use scan::{cube_inclusive_sum, scan_rank};
pub use tile::TileShape;
pub use write::nonzero_write_coordinates;
