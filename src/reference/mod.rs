//! Plain-Rust reference implementations over host `TensorData`: the bodies the Flex backend
//! runs and the oracle the tests compare the kernels with.

mod bit_count;
mod nonzero;

pub(crate) use bit_count::bit_count;
pub(crate) use nonzero::nonzero_coordinates;
