//! NonZeroCoordinates: the coordinates of every non-zero element, in ascending row-major order,
//! as a stream compaction that never reads back to the host.
//!
//! The design is reduce-then-scan in three launches, laid out by a [`CompactionPlan`]:
//!
//! 1. [`nonzero_tile_counts`](fn@nonzero_tile_counts): each cube reads its tile once, counts
//!    its non-zero elements and leaves one bit per element in a mask, 1/32 of an f32 input's
//!    bytes. With planes (GPUs) the tile is read in rows of one vector per unit, so reads are
//!    coalesced, and every load is issued before any is tested; without (CPU drivers) each unit
//!    reads the run of consecutive vectors it writes in step 3 and tests each as it arrives, so
//!    its mask words hold its run in element order. Where the runtime cannot bind the unsigned type of the input's
//!    width (8- and 16-bit types on WGSL and OpenGL, 64-bit ones on OpenGL) it reads 32-bit
//!    words instead: two f16 or four u8 to a word, a 64-bit element as two; the rest of the
//!    compaction sees only the mask, so nothing else changes.
//! 2. [`nonzero_scan_tiles`](fn@nonzero_scan_tiles): one cube turns the tile counts into
//!    exclusive tile offsets and writes the total into the `count` output; with planes it
//!    stages the counts in shared memory, a pass of 8 per unit at a time loaded and stored
//!    coalesced, without them each unit scans its own run of counts.
//! 3. [`nonzero_write_coordinates`](fn@nonzero_write_coordinates): the coordinates, from the mask (the input is not read
//!    again), and the padding when a fill value is given, in one of two layouts:
//!    - where the runtime has planes (GPUs): each plane walks its run of the tile in steps of
//!      neighbouring vectors and scans them with plane operations, so neighbouring units store
//!      to neighbouring rows and each step of the plane is one contiguous range of the output;
//!      dense tiles take one vector per unit and step, sparse ones two (half the scans);
//!    - elsewhere (lavapipe): each unit takes a run of consecutive vectors, loads its mask words
//!      (32 elements each) and one cube scan per tile gives its first row, which suits CPU
//!      drivers, where barriers cost more than scattered stores.
//!
//!    Both loop over set bits only (CPU drivers run a branch's body under a mask whatever the
//!    density). A run's first flat index is unravelled into the last `width` dimensions once
//!    (a step's, in the plane kernel), and each further element steps from the previous one
//!    with carries.
//!
//! Outputs of an integer type the runtime cannot bind (8- and 16-bit ones on WGSL and OpenGL,
//! 64-bit ones on OpenGL) are written by the three launches as `u32` scratch, and a fourth,
//! [`nonzero_output_words`](fn@nonzero_output_words), stores them as 32-bit words.
//!
//! The rows come out in ascending element order whatever order the stores happen in: a row's
//! index is its element's rank among the non-zero elements (the tile's offset, the units or
//! planes before it in the tile, the set bits before it in its run), which is what the operator
//! promises (DirectML's order, and what `torch.nonzero` returns), so no sort is needed.
//!
//! The dimensions travel as scalar launch arguments, so a call uploads nothing. The input's
//! bytes are read once; everything else is proportional to the number of tiles, to `len / 8`
//! bytes of mask, or to the rows written.

mod kernel;
mod launch;
mod output_words;
mod scan;

pub use kernel::{nonzero_scan_tiles, nonzero_tile_counts, nonzero_write_coordinates};
pub use launch::{
    CompactionInput, CompactionOutput, CompactionPlan, CompactionStages, CubeScan,
    NonZeroPredicate, launch_nonzero_coordinates,
};
pub use output_words::nonzero_output_words;
