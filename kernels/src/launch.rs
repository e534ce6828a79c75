//! Helpers every launcher shares: element widths, dtype capability checks, launch geometry.

use core::fmt;

use cubecl::features::TypeUsage;
use cubecl::ir::{ElemType, HardwareProperties, UIntKind};
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
    /// A plan the kernels cannot run: a [`CompactionPlan`](crate::nonzero::CompactionPlan) out
    /// of range, a [`BitCountPath`](crate::bit_count::BitCountPath) that does not fit the input,
    /// or a [`ScatterStrategy`](crate::scatter_nd::ScatterStrategy) that cannot apply the
    /// reduction.
    InvalidPlan {
        /// What is out of range.
        detail: String,
    },
    /// A value passed to a launcher does not fit the element type it is stored as (a NonZero
    /// fill outside the output type's range).
    ValueOutOfRange {
        /// What does not fit.
        detail: String,
    },
    /// A buffer handle does not start on the boundary a kernel reads it at (a 4-byte word for
    /// the word-wise kernels).
    Misaligned {
        /// What the buffer holds, for the message.
        role: &'static str,
        /// The handle's offset in bytes from the start of its allocation.
        offset: u64,
        /// The boundary it must be a multiple of, in bytes.
        align: u64,
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
            | Self::InvalidPlan { detail }
            | Self::ValueOutOfRange { detail } => f.write_str(detail),
            Self::Misaligned {
                role,
                offset,
                align,
            } => write!(
                f,
                "the {role} buffer starts at byte {offset} of its allocation, which is not a \
                 multiple of {align}"
            ),
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

/// Whether the integer `value` is representable in the integer type `elem`.
pub(crate) fn fits_integer(value: i64, elem: ElemType) -> bool {
    let bits = 8 * elem.size() as u32;
    match elem {
        ElemType::Int(_) if bits < 64 => {
            (-(1i64 << (bits - 1))..(1i64 << (bits - 1))).contains(&value)
        }
        ElemType::UInt(_) if bits < 64 => (0..(1i64 << bits)).contains(&value),
        ElemType::UInt(_) => value >= 0,
        _ => true,
    }
}

/// Whether `client` can bind buffers whose elements are `elem`.
pub(crate) fn can_bind(client: &Client, elem: ElemType) -> bool {
    crate::capture::properties(client)
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

/// Returns an error unless `handle` starts on a 4-byte boundary of its allocation.
pub(crate) fn require_word_aligned(
    handle: &cubecl::server::Handle,
    role: &'static str,
) -> Result<(), KernelError> {
    let offset = handle.offset_start.unwrap_or(0);
    if !offset.is_multiple_of(4) {
        return Err(KernelError::Misaligned {
            role,
            offset,
            align: 4,
        });
    }
    Ok(())
}

/// A tensor as a kernel reads it: a buffer handle, the storage width of one element, and the
/// shape and strides (in elements) that place each element of the logical tensor in the buffer.
///
/// Strides may describe any view: transposed, sliced (with the handle's offset at the first
/// element), or broadcast (a zero stride). Launchers check that every element the view
/// addresses lies inside the handle before launching.
///
/// ```
/// use burn_dml_ops_kernels::{InputView, StorageWidth};
/// # fn view(handle: cubecl::server::Handle) {
/// // A 2×3 i32 matrix stored column-major (its transpose is contiguous).
/// let view = InputView {
///     handle,
///     width: StorageWidth::W32,
///     shape: vec![2, 3],
///     strides: vec![1, 2],
/// };
/// assert!(!view.is_contiguous());
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct InputView {
    /// The buffer; its offset, if any, is where element `[0, 0, ..]` lies.
    pub handle: cubecl::server::Handle,
    /// The storage width of one element.
    pub width: StorageWidth,
    /// The logical shape.
    pub shape: Vec<usize>,
    /// The distance in elements between neighbours along each dimension.
    pub strides: Vec<usize>,
}

impl InputView {
    /// A contiguous buffer of `len` elements of `width`.
    pub fn contiguous(handle: cubecl::server::Handle, width: StorageWidth, len: usize) -> Self {
        Self {
            handle,
            width,
            shape: vec![len],
            strides: vec![1],
        }
    }

    /// Whether the view is the row-major layout of its shape from its first byte (dimensions of
    /// size 1 may have any stride; an empty view is contiguous).
    pub fn is_contiguous(&self) -> bool {
        if self.shape.contains(&0) {
            return true;
        }
        let mut expected = 1usize;
        for (&size, &stride) in self.shape.iter().zip(&self.strides).rev() {
            if size != 1 && stride != expected {
                return false;
            }
            expected = expected.saturating_mul(size);
        }
        true
    }

    /// The number of elements of the view.
    ///
    /// # Errors
    ///
    /// [`KernelError::ShapeMismatch`] when shape and strides differ in length,
    /// [`KernelError::TooLarge`] when the count overflows `usize`.
    pub fn element_count(&self) -> Result<usize, KernelError> {
        if self.shape.len() != self.strides.len() {
            return Err(KernelError::ShapeMismatch {
                detail: format!(
                    "the input has {} dimensions but {} strides",
                    self.shape.len(),
                    self.strides.len()
                ),
            });
        }
        self.shape
            .iter()
            .try_fold(1usize, |acc, &size| acc.checked_mul(size))
            .ok_or_else(|| KernelError::TooLarge {
                detail: format!(
                    "the input shape {:?} has more than usize elements",
                    self.shape
                ),
            })
    }

    /// The number of elements from the buffer's start to the view's last element, inclusive
    /// (0 for an empty view), or `None` when that overflows `usize`.
    fn checked_span(&self) -> Option<usize> {
        if self.shape.contains(&0) {
            return Some(0);
        }
        self.shape
            .iter()
            .zip(&self.strides)
            .try_fold(1usize, |acc, (&size, &stride)| {
                acc.checked_add((size - 1).checked_mul(stride)?)
            })
    }

    /// [`checked_span`](Self::checked_span) for a view that
    /// [`require_covered`](Self::require_covered) accepted.
    pub(crate) fn span(&self) -> usize {
        self.checked_span().unwrap_or(usize::MAX)
    }

    /// The 32-bit words from the buffer's start that hold the view's elements: what a kernel
    /// reading the view as words binds (CubeCL binds buffers rounded up to whole words).
    pub(crate) fn span_words(&self) -> usize {
        (self.span() * self.width.bytes()).div_ceil(4)
    }

    /// The view's shape and strides as launch sequences, for kernels that address it with
    /// `strided_offset`.
    pub(crate) fn sequences(&self) -> (SequenceArg<usize>, SequenceArg<usize>) {
        let mut shape = SequenceArg::new();
        let mut strides = SequenceArg::new();
        for (&size, &stride) in self.shape.iter().zip(&self.strides) {
            shape.push(size);
            strides.push(stride);
        }
        (shape, strides)
    }

    /// Returns an error unless every element the view addresses lies inside the handle.
    pub(crate) fn require_covered(&self, role: &'static str) -> Result<(), KernelError> {
        self.element_count()?;
        let span = self
            .checked_span()
            .filter(|span| span.checked_mul(self.width.bytes()).is_some())
            .ok_or_else(|| KernelError::TooLarge {
                detail: format!(
                    "the {role} view (shape {:?}, strides {:?}) reaches past any buffer",
                    self.shape, self.strides
                ),
            })?;
        require_len(&self.handle, span, self.width.bytes(), role)
    }
}

/// The widest vector size the runtime favours for elements of every size in `bytes`.
pub(crate) fn vector_size_for(client: &Client, bytes: &[usize]) -> usize {
    let properties = crate::capture::properties(client);
    bytes
        .iter()
        .map(|&b| properties.io_optimized_vector_sizes(b).max().unwrap_or(1))
        .min()
        .unwrap_or(1)
        .max(1)
}

/// Vectors each unit of an elementwise launch takes one after another on runtimes without plane
/// operations (CPU drivers): they pay per unit, and run a unit's loads and stores to
/// neighbouring addresses faster than ones spread across their SIMD lanes. With planes (GPUs)
/// a unit takes one, so that neighbouring units touch neighbouring vectors.
pub(crate) const CPU_VECTORS_PER_UNIT: usize = 8;

/// Whether `client` has plane (subgroup) operations: GPUs do; CPU drivers such as lavapipe
/// (cubecl-wgpu turns planes off on CPU adapters) and OpenGL do not.
pub(crate) fn has_planes(client: &Client) -> bool {
    crate::capture::properties(client)
        .features
        .plane
        .contains(cubecl::ir::features::Plane::Ops)
}

/// Vectors per unit of an elementwise launch: 1 with plane operations (`planes`, GPUs),
/// [`CPU_VECTORS_PER_UNIT`] without.
pub(crate) fn vectors_per_unit(planes: bool) -> usize {
    if planes { 1 } else { CPU_VECTORS_PER_UNIT }
}

/// A one-dimensional launch over `vectors` work items, `per_unit` consecutive ones to a unit.
#[derive(Clone, Debug)]
pub(crate) struct RunGeometry {
    pub cubes: CubeCount,
    pub dim: CubeDim,
    /// Items from the first that the launched units' runs span, past `vectors` too: every unit
    /// forms the index of its run's items before testing them, so a launch's address type must
    /// cover its first item plus this many.
    pub reach: usize,
}

impl RunGeometry {
    pub fn new(client: &Client, vectors: usize, per_unit: usize) -> Self {
        let (cubes, dim) = elementwise_geometry(client, vectors.div_ceil(per_unit).max(1));
        let units = match &cubes {
            CubeCount::Static(x, y, z) => [*x, *y, *z, dim.num_elems()]
                .into_iter()
                .map(|n| n as usize)
                .product(),
            CubeCount::Dynamic(_) => usize::MAX,
        };
        Self {
            cubes,
            dim,
            reach: units.saturating_mul(per_unit),
        }
    }
}

/// One-dimensional launch geometry for `units` independent work items, for the device the
/// launcher decides for (an open capture's, else `client`'s).
pub(crate) fn elementwise_geometry(client: &Client, units: usize) -> (CubeCount, CubeDim) {
    let cube_dim = elementwise_cube_dim(&crate::capture::properties(client).hardware, units);
    (cube_count_for(client, units, cube_dim), cube_dim)
}

/// Planes an elementwise cube holds at most where the device does not say its CPU cores.
const ELEMENTWISE_PLANES: u32 = 8;

/// The cube of an elementwise launch of `units` on `hardware`: planes of its widest size, as
/// many as `units` fill up to [`ELEMENTWISE_PLANES`] (a power of two), one per core on a CPU
/// device, never more units than a cube may hold.
fn elementwise_cube_dim(hardware: &HardwareProperties, units: usize) -> CubeDim {
    let plane = hardware.plane_size_max.max(1);
    let units = u32::try_from(units).unwrap_or(u32::MAX);
    let wanted = match hardware.num_cpu_cores {
        Some(cores) => cores.min(units),
        None => 1 << (units / plane).clamp(1, ELEMENTWISE_PLANES).ilog2(),
    };
    let fit = hardware.max_units_per_cube / plane;
    CubeDim::new_2d(plane, wanted.min(fit).max(1))
}

/// Cubes of `cube_dim` that cover `units` work items: see [`cube_count`].
pub(crate) fn cube_count_for(client: &Client, units: usize, cube_dim: CubeDim) -> CubeCount {
    cube_count(client, units.div_ceil(cube_dim.num_elems() as usize))
}

/// At least `cubes` cubes within the device's count per dimension (an open capture's device,
/// else `client`'s): along x, halved onto y and then z while past the limit. Kernels read their
/// cube's linear position and leave the cubes past their work idle.
pub(crate) fn cube_count(client: &Client, cubes: usize) -> CubeCount {
    if cubes == 0 {
        return CubeCount::Static(0, 0, 0);
    }
    let (x, y, z) = crate::capture::properties(client).hardware.max_cube_count;
    let limits = [x, y, z];
    let mut count = [u32::try_from(cubes).unwrap_or(u32::MAX), 1, 1];
    for axis in 0..2 {
        while count[axis] > limits[axis] {
            count[axis] = count[axis].div_ceil(2);
            count[axis + 1] = count[axis + 1].saturating_mul(2);
        }
    }
    CubeCount::Static(count[0], count[1], count[2])
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
