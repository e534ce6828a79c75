//! NonZeroCoordinates: the coordinates of every non-zero element, in ascending row-major order,
//! as a stream compaction that never reads back to the host.
//!
//! The design is reduce-then-scan, built from cube-wide shared-memory scans so that it needs no
//! plane (subgroup) operations:
//!
//! 1. [`nonzero_tile_counts`]: each cube counts the non-zero elements of its tile (rows of one
//!    vector per unit, so reads are coalesced) and writes the count.
//! 2. [`nonzero_scan_tiles`]: one cube turns the tile counts into exclusive tile offsets and
//!    writes the total into the `count` output.
//! 3. [`nonzero_write_coordinates`]: each cube re-reads its tile, each unit a run of consecutive
//!    vectors kept in registers; a cube scan of the unit counts gives each unit its first row,
//!    and the unit writes the coordinates of its non-zero elements in order, unravelling a
//!    vector's first flat index into the last `width` dimensions once and stepping from there.
//! 4. [`nonzero_fill_padding`] (only when asked): writes a fill value into every row at or past
//!    the count, which it reads on the device.
//!
//! The input is read twice (steps 1 and 3); everything else is proportional to the number of
//! tiles or of non-zero elements.

mod kernel;
mod launch;
mod scan;

pub use kernel::{
    nonzero_fill_padding, nonzero_scan_tiles, nonzero_tile_counts, nonzero_write_coordinates,
};
pub use launch::{CubeScan, NonZeroPredicate, launch_nonzero_coordinates};
