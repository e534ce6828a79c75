//! Helpers every launcher shares: element widths, dtype capability checks, launch geometry.

use core::fmt;

use cubecl::features::TypeUsage;
use cubecl::ir::{ElemType, UIntKind};
use cubecl::prelude::*;

/// The storage width of one element, in bytes: what a kernel that only looks at raw bits needs
/// to know about a dtype.
///
/// ```
/// use burn_dml_ops_kernels::StorageWidth;
/// use cubecl::ir::{ElemType, UIntKind};
///
/// // An f16 buffer is read as u16: the bits, not the value.
/// let width = StorageWidth::from_bytes(size_of::<half::f16>()).unwrap();
/// assert_eq!(width, StorageWidth::W16);
/// assert_eq!(width.unsigned(), ElemType::UInt(UIntKind::U16));
/// assert_eq!(width.bytes(), 2);
/// assert_eq!(StorageWidth::from_bytes(3), None);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StorageWidth {
    /// 8-bit elements (`u8`, `i8`).
    W8,
    /// 16-bit elements (`u16`, `i16`, `f16`, `bf16`).
    W16,
    /// 32-bit elements (`u32`, `i32`, `f32`).
    W32,
    /// 64-bit elements (`u64`, `i64`, `f64`).
    W64,
}

impl StorageWidth {
    /// The width of an element of `bytes` bytes, or `None` for any other size.
    pub fn from_bytes(bytes: usize) -> Option<Self> {
        match bytes {
            1 => Some(Self::W8),
            2 => Some(Self::W16),
            4 => Some(Self::W32),
            8 => Some(Self::W64),
            _ => None,
        }
    }

    /// Size of one element in bytes.
    pub fn bytes(self) -> usize {
        match self {
            Self::W8 => 1,
            Self::W16 => 2,
            Self::W32 => 4,
            Self::W64 => 8,
        }
    }

    /// The unsigned integer type of this width: how a bit-level kernel reads the buffer.
    pub fn unsigned(self) -> ElemType {
        ElemType::UInt(match self {
            Self::W8 => UIntKind::U8,
            Self::W16 => UIntKind::U16,
            Self::W32 => UIntKind::U32,
            Self::W64 => UIntKind::U64,
        })
    }
}

/// Why a launcher refused to launch. Nothing was enqueued when one of these is returned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KernelError {
    /// The runtime cannot bind a buffer of this element type (for example 8- and 16-bit
    /// integers on WGSL).
    UnsupportedType {
        /// The element type the kernel would have to declare.
        elem: ElemType,
        /// What the buffer holds, for the message.
        role: &'static str,
    },
    /// The output element type is not an integer type.
    NotAnInteger {
        /// The element type that was asked for.
        elem: ElemType,
    },
    /// The shapes passed to a launcher do not agree with each other.
    ShapeMismatch {
        /// What disagrees.
        detail: String,
    },
    /// The input is larger than the kernel's index types allow.
    TooLarge {
        /// What is too large.
        detail: String,
    },
    /// A [`CompactionPlan`](crate::nonzero::CompactionPlan) outside the range the kernels take.
    InvalidPlan {
        /// What is out of range.
        detail: String,
    },
    /// A buffer handle is smaller than the element count says.
    BufferTooSmall {
        /// What the buffer holds, for the message.
        role: &'static str,
        /// Bytes needed for the element count.
        needed: u64,
        /// Bytes the handle has.
        actual: u64,
    },
}

impl fmt::Display for KernelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnsupportedType { elem, role } => write!(
                f,
                "the {role} would need {elem} buffers, which this runtime cannot bind"
            ),
            Self::NotAnInteger { elem } => {
                write!(
                    f,
                    "the output element type must be an integer type, got {elem}"
                )
            }
            Self::ShapeMismatch { detail }
            | Self::TooLarge { detail }
            | Self::InvalidPlan { detail } => f.write_str(detail),
            Self::BufferTooSmall {
                role,
                needed,
                actual,
            } => write!(
                f,
                "the {role} buffer holds {actual} bytes but the element count needs {needed}"
            ),
        }
    }
}

impl std::error::Error for KernelError {}

/// Whether `client` can bind buffers whose elements are `elem`.
pub(crate) fn can_bind(client: &Client, elem: ElemType) -> bool {
    client
        .properties()
        .type_usage(elem)
        .contains(TypeUsage::Buffer)
}

/// Returns an error unless `client` can bind buffers of `elem`.
pub(crate) fn require_binding(
    client: &Client,
    elem: ElemType,
    role: &'static str,
) -> Result<(), KernelError> {
    if can_bind(client, elem) {
        Ok(())
    } else {
        Err(KernelError::UnsupportedType { elem, role })
    }
}

/// Returns an error unless `handle` holds at least `len` elements of `bytes` bytes each, in
/// the bytes it covers: its size less its start and end offsets (a view into a larger
/// allocation gets no credit for the bytes outside it).
pub(crate) fn require_len(
    handle: &cubecl::server::Handle,
    len: usize,
    bytes: usize,
    role: &'static str,
) -> Result<(), KernelError> {
    let needed = (len as u64).saturating_mul(bytes as u64);
    let actual = handle.size_in_used();
    if actual < needed {
        return Err(KernelError::BufferTooSmall {
            role,
            needed,
            actual,
        });
    }
    Ok(())
}

/// The widest vector size the runtime favours for elements of every size in `bytes`.
pub(crate) fn vector_size_for(client: &Client, bytes: &[usize]) -> usize {
    bytes
        .iter()
        .map(|&b| client.io_optimized_vector_sizes(b).max().unwrap_or(1))
        .min()
        .unwrap_or(1)
        .max(1)
}

/// One-dimensional launch geometry for `units` independent work items.
pub(crate) fn elementwise_geometry(client: &Client, units: usize) -> (CubeCount, CubeDim) {
    let cube_dim = CubeDim::new(client, units);
    let cube_count = cubecl::calculate_cube_count_elemwise(client, units, cube_dim);
    (cube_count, cube_dim)
}

/// Splits `len` elements into whole vectors of `vector` lanes and a tail, calling
/// `launch(vector_size, first, units)` for each non-empty part: `first` and `units` count in
/// vectors of that size.
pub(crate) fn launch_vectors_then_tail(
    len: usize,
    vector: usize,
    mut launch: impl FnMut(usize, usize, usize),
) {
    let whole = len / vector;
    if whole > 0 {
        launch(vector, 0, whole);
    }
    let tail = len - whole * vector;
    if tail > 0 {
        launch(1, whole * vector, tail);
    }
}

/// The element type a kernel that only moves bits should bind for data of `elem`: `elem` itself
/// when the runtime binds it (f16 on WGSL has no u16 to stand in for it), otherwise the unsigned
/// integer of its width (bools, whatever the runtime stores them as).
pub(crate) fn bits_elem(client: &Client, elem: ElemType) -> Result<ElemType, KernelError> {
    let numeric = matches!(
        elem,
        ElemType::Int(_) | ElemType::UInt(_) | ElemType::Float(_)
    );
    if numeric && can_bind(client, elem) {
        return Ok(elem);
    }
    StorageWidth::from_bytes(elem.size())
        .map(StorageWidth::unsigned)
        .ok_or(KernelError::UnsupportedType { elem, role: "data" })
}
