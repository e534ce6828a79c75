//! `DmlOps` for each backend the features enable. `Fusion<B>` gets its implementation from the
//! `#[backend_extension]` macro on the trait.

#[cfg(feature = "autodiff")]
mod autodiff;
#[cfg(feature = "cube")]
mod cube;
#[cfg(feature = "cube")]
mod cube_common;
#[cfg(feature = "cube")]
mod cube_nms;
#[cfg(feature = "cube")]
mod cube_sample;
#[cfg(any(feature = "flex", feature = "ndarray"))]
mod reference;
