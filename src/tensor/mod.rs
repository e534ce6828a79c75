//! The tensor extension traits that model code calls, and the argument checks they run before
//! anything reaches a backend.

mod bit_count;
mod compress;
mod nms;
mod nonzero;
mod sample;
mod scatter_nd;
mod sort;
pub(crate) mod support;

pub use bit_count::BitCountExt;
pub use compress::{CompressExt, Compressed};
pub use nms::{NmsExt, NmsOptions, Selected};
pub use nonzero::{NonZeroCoordinates, NonZeroExt, NonZeroOptions};
pub use sample::{RowSampling, SampleExt, Sampled, SamplingOptions};
pub use scatter_nd::{OutOfBounds, Reduction, ScatterNdExt, ScatterNdOptions};
pub use sort::{SortExt, SortOptions, Sorted};
