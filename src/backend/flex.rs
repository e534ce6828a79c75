//! Flex, Burn's pure-Rust CPU backend, runs the trait's reference bodies.

use burn::backend::Flex;

use crate::DmlOps;

impl DmlOps for Flex {}
