//! Burn's pure-Rust CPU backends, Flex and NdArray, run the trait's reference bodies.

use crate::DmlOps;

#[cfg(feature = "flex")]
impl DmlOps for burn::backend::Flex {}

// Burn deprecates NdArray in favour of Flex; projects still on it get the same contract.
#[cfg(feature = "ndarray")]
#[allow(deprecated)]
impl DmlOps for burn::backend::NdArray {}
