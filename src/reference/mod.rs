//! Plain-Rust reference implementations over host `TensorData`: the bodies the Flex backend
//! runs and the oracle the tests compare the kernels with.

mod bit_count;
mod compress;
mod exact_product;
mod exact_sum;
mod nms;
mod nonzero;
mod sample;
mod scatter_nd;
mod sort;
mod tuples;

pub(crate) use bit_count::bit_count;
pub(crate) use compress::compress;
pub(crate) use nms::non_max_suppression;
pub(crate) use nonzero::nonzero_coordinates;
pub(crate) use sample::{RowOptions, sample};
pub(crate) use scatter_nd::{gather_nd, scatter_nd};
pub(crate) use sort::top_k;
pub(crate) use tuples::index_tuples;
