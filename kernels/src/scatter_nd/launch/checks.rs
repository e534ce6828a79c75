//! The checks a layout passes before anything launches.

use cubecl::ir::ElemType;

use super::ScatterNdLayout;
use crate::KernelError;

/// The checked element counts of a layout, and how its indices are read.
pub(super) struct Sizes {
    /// Number of target slices, below `u32::MAX`.
    pub targets: usize,
    /// Elements of the scattered-into (or gathered-from) tensor.
    pub output_len: usize,
    /// Elements of the updates (or of the gathered rows).
    pub units: usize,
    /// Elements of the indices.
    pub index_len: usize,
}

/// Checks a layout against the kernels' limits: `k > 0`, an integer index type, fewer than
/// `u32::MAX` target slices and rows, and no size that overflows `usize`.
pub(super) fn sizes(
    layout: ScatterNdLayout<'_>,
    index_elem: ElemType,
) -> Result<Sizes, KernelError> {
    let ScatterNdLayout { dims, rows, slice } = layout;
    let k = dims.len();
    if !matches!(index_elem, ElemType::Int(_) | ElemType::UInt(_)) {
        return Err(KernelError::NotAnInteger { elem: index_elem });
    }
    if k == 0 {
        return Err(KernelError::ShapeMismatch {
            detail: "the index tuples have no coordinates (k = 0)".into(),
        });
    }
    let targets = dims.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d));
    let targets =
        targets
            .filter(|&t| t < u32::MAX as usize)
            .ok_or_else(|| KernelError::TooLarge {
                detail: format!(
                    "the indexed dimensions {dims:?} give u32::MAX or more target slices; the \
                 kernels number them in 32 bits"
                ),
            })?;
    let too_large = |what: &str| KernelError::TooLarge {
        detail: format!("{what} overflows usize"),
    };
    if rows >= u32::MAX as usize {
        return Err(KernelError::TooLarge {
            detail: format!("{rows} index tuples do not fit the kernels' 32-bit row links"),
        });
    }
    Ok(Sizes {
        targets,
        output_len: targets
            .checked_mul(slice)
            .ok_or_else(|| too_large("the output size"))?,
        units: rows
            .checked_mul(slice)
            .ok_or_else(|| too_large("the updates size"))?,
        index_len: rows
            .checked_mul(k)
            .ok_or_else(|| too_large("the indices size"))?,
    })
}
