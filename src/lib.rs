//! DirectML's **BitCount**, **NonZeroCoordinates**, **ScatterND** and **TopK** operators,
//! ONNX's **NonMaxSuppression** and token **sampling**, for
//! [Burn](https://burn.dev), as CubeCL kernels on Burn's GPU runtimes and as a plain-Rust
//! reference on its Flex CPU backend.
//!
//! Model code imports the prelude and calls the operators as tensor methods:
//!
//! ```
//! use burn::tensor::{Device, Int, Tensor};
//! use burn_dml_ops::prelude::*;
//!
//! let device = Device::flex();
//! let x = Tensor::<2, Int>::from_data([[0, 123], [456, 789]], &device);
//! let bits = x.bit_count();
//! assert_eq!(bits.to_data().try_to_vec::<i32>().unwrap(), vec![0, 6, 4, 5]);
//! ```
//!
//! Backend authors implement [`DmlOps`]; it is implemented here for Burn's `CubeBackend` (wgpu,
//! Vulkan, CUDA) with the kernels of the `burn-dml-ops-kernels` crate, for `Fusion<B>` (lazily,
//! output shapes known without running), for `Flex` and `NdArray` with the reference bodies, and
//! for `Autodiff<B, C>` (Burn's autodiff devices), where ScatterND on Float tensors records its
//! backward pass.
//!
//! # Cargo features
//!
//! | feature | default | what it enables |
//! |---|---|---|
//! | `wgpu` | yes | Burn's wgpu runtime (WGSL): Vulkan, Metal, DX12, lavapipe |
//! | `vulkan` | no | wgpu through SPIR-V: 8- and 16-bit dtypes where the driver has them |
//! | `cuda` | no | CubeCL's CUDA runtime, compiling through LLVM (its build downloads a bundle) |
//! | `cuda-nvrtc` | no | `cuda`, compiling kernels as CUDA C++ with NVRTC at run time |
//! | `flex` | yes | Burn's pure-Rust CPU backend, running the reference implementation |
//! | `fusion` | yes | Burn's lazy Fusion backend around the GPU runtimes |
//! | `autodiff` | yes | Burn's autodiff devices (`Device::autodiff(..)`): ScatterND gradients |
//! | `ndarray` | no | Burn's NdArray CPU backend, running the reference implementation |

#![warn(missing_docs)]

mod backend;
mod error;
mod host;
mod nms_rules;
pub mod onnx;
mod ops;
mod reference;
mod scatter_nd_rules;
mod sort_rules;
mod tensor;

pub use error::DmlOpsError;
pub use nms_rules::BoxFormat;
pub use ops::DmlOps;
pub use sort_rules::Order;
pub use tensor::{
    BitCountExt, CompressExt, Compressed, NmsExt, NmsOptions, NonZeroCoordinates, NonZeroExt,
    NonZeroOptions, OutOfBounds, Reduction, RowSampling, SampleExt, Sampled, SamplingOptions,
    ScatterNdExt, ScatterNdOptions, Selected, SortExt, SortOptions, Sorted,
};

/// Everything model code needs: `use burn_dml_ops::prelude::*;`.
pub mod prelude {
    pub use crate::error::DmlOpsError;
    pub use crate::nms_rules::BoxFormat;
    pub use crate::sort_rules::Order;
    pub use crate::tensor::{
        BitCountExt, CompressExt, Compressed, NmsExt, NmsOptions, NonZeroCoordinates, NonZeroExt,
        NonZeroOptions, OutOfBounds, Reduction, RowSampling, SampleExt, Sampled, SamplingOptions,
        ScatterNdExt, ScatterNdOptions, Selected, SortExt, SortOptions, Sorted,
    };
}
