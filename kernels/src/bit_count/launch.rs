//! Host-side launch over raw CubeCL handles.

use super::kernel::{WordsLayout, bit_count_kernel, bit_count_words_kernel, elements_per_unit};
use crate::capture::launch_unchecked;
use crate::launch::{
    can_bind, elementwise_geometry, has_planes, require_binding, require_len, require_word_aligned,
};
use crate::{InputView, KernelError};
use cubecl::ir::ElemType;
use cubecl::prelude::*;
use cubecl::server::Handle;

/// How the BitCount kernel reads and writes its buffers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BitCountPath {
    /// Typed elements of a contiguous input: the input bound as the unsigned integer of its
    /// width, the output as its own type, both with the widest vectors the runtime favours that
    /// divide the element count. Needs a runtime that binds both types.
    Elements {
        /// Vectors each unit loads before it stores (1 to 8): more bytes in flight per unit on
        /// GPUs; a CPU driver such as lavapipe runs 1 fastest.
        vectors_per_unit: usize,
    },
    /// 32-bit words on both sides: four 8-bit or two 16-bit elements per word, a 64-bit element
    /// as two words. Runs on every runtime, whatever element types it can bind, and reads any
    /// strided view.
    Words {
        /// Groups of whole words each unit loads before it stores (1 to 8; a group is the
        /// fewest elements that fill whole input and output words, two for f16 to i32): more
        /// bytes in flight per unit on GPUs, one on CPU drivers.
        groups_per_unit: usize,
    },
}

impl BitCountPath {
    /// [`Elements`](Self::Elements) for a contiguous `input` where `client` binds its unsigned
    /// type and `output_elem`; otherwise [`Words`](Self::Words): strided views, and types the
    /// runtime [cannot bind](crate#types-the-runtime-cannot-bind). Where the runtime has plane
    /// operations (GPUs), four vectors or eight groups per unit, for more bytes in flight (a
    /// group's loads are narrower than a vector's); one on CPU drivers, which gain nothing
    /// from loads in flight.
    pub fn for_input(client: &Client, input: &InputView, output_elem: ElemType) -> Self {
        let gpu = has_planes(client);
        let (vectors, groups) = if gpu { (4, 8) } else { (1, 1) };
        if input.is_contiguous()
            && can_bind(client, input.width.unsigned())
            && can_bind(client, output_elem)
        {
            Self::Elements {
                vectors_per_unit: vectors,
            }
        } else {
            Self::Words {
                groups_per_unit: groups,
            }
        }
    }
}

/// Counts the set bits of each element of `input` and writes the counts, as `output_elem`
/// integers, into the contiguous `output`, in row-major order of `input`'s shape.
///
/// With [`BitCountPath::Words`], `input` may be any strided view of its buffer (transposed,
/// sliced, broadcast with zero strides): it is read where it lies, in one launch, without a copy
/// first. Its dtype does not matter, only its width: a float buffer is counted on its IEEE
/// encoding. The work is enqueued on `client`'s stream; nothing is read back.
///
/// # Errors
///
/// [`KernelError`] when `output_elem` is not an integer type, when the input's shape and strides
/// disagree or address more than `usize` counts, when a handle is smaller than the bytes the
/// view and the element count need, and for [`BitCountPath::Elements`] when the runtime cannot
/// bind the input's unsigned type or `output_elem` or when `input` is not contiguous
/// ([`KernelError::InvalidPlan`]), for [`BitCountPath::Words`] when a handle does not start on a
/// 4-byte boundary. Nothing is launched in those cases.
pub fn launch_bit_count(
    client: &Client,
    input: &InputView,
    output: Handle,
    output_elem: ElemType,
    path: BitCountPath,
) -> Result<(), KernelError> {
    if !matches!(output_elem, ElemType::Int(_) | ElemType::UInt(_)) {
        return Err(KernelError::NotAnInteger { elem: output_elem });
    }
    let len = input.element_count()?;
    input.require_covered("input")?;
    require_len(&output, len, output_elem.size(), "output")?;
    match path {
        BitCountPath::Elements { vectors_per_unit } => {
            require_per_unit(vectors_per_unit, "vectors")?;
            if !input.is_contiguous() {
                return Err(KernelError::InvalidPlan {
                    detail: format!(
                        "the Elements path reads contiguous inputs only, not strides {:?} for \
                         shape {:?}; use the Words path",
                        input.strides, input.shape
                    ),
                });
            }
            require_binding(client, input.width.unsigned(), "input")?;
            require_binding(client, output_elem, "output")?;
        }
        BitCountPath::Words { groups_per_unit } => {
            require_per_unit(groups_per_unit, "groups")?;
            require_word_aligned(&input.handle, "input")?;
            require_word_aligned(&output, "output")?;
        }
    }
    if len == 0 {
        return Ok(());
    }
    match path {
        BitCountPath::Elements { vectors_per_unit } => {
            launch_elements(client, input, output, output_elem, len, vectors_per_unit)
        }
        BitCountPath::Words { groups_per_unit } => {
            launch_words(client, input, output, output_elem, len, groups_per_unit)
        }
    }
    Ok(())
}

/// The typed-element launch over a contiguous input: `vectors_per_unit` vectors of `N` lanes
/// per unit, `N` the widest size the runtime favours for both widths that divides `len`.
fn launch_elements(
    client: &Client,
    input: &InputView,
    output: Handle,
    output_elem: ElemType,
    len: usize,
    vectors_per_unit: usize,
) {
    let vector = [input.width.bytes(), output_elem.size()]
        .iter()
        .map(|&bytes| {
            client
                .io_optimized_vector_sizes(bytes)
                .filter(|&size| size > 0 && len.is_multiple_of(size))
                .max()
                .unwrap_or(1)
        })
        .min()
        .unwrap_or(1);
    let units = len / vector;
    let (count, dim) = elementwise_geometry(client, units.div_ceil(vectors_per_unit));
    let address = AddressType::from_len(len);
    // SAFETY: `launch_bit_count` checked that both handles hold `len` elements; the kernel
    // touches vectors `0..units` of `vector` lanes, and `vector` divides `len`.
    unsafe {
        launch_unchecked!(bit_count_kernel(
            client,
            count,
            dim,
            address,
            vector,
            BufferArg::from_raw_parts(input.handle.clone(), len),
            BufferArg::from_raw_parts(output, len),
            units,
            vectors_per_unit,
            [input.width.unsigned(), output_elem],
        ));
    }
}

/// An [`InvalidPlan`](KernelError::InvalidPlan) unless `per_unit` (of `what`) is in `1..=8`.
fn require_per_unit(per_unit: usize, what: &str) -> Result<(), KernelError> {
    if (1..=8).contains(&per_unit) {
        Ok(())
    } else {
        Err(KernelError::InvalidPlan {
            detail: format!("{per_unit} {what} per unit is outside 1..=8"),
        })
    }
}

/// The 32-bit word launch: `groups_per_unit` groups of `elements_per_unit` elements per unit.
fn launch_words(
    client: &Client,
    input: &InputView,
    output: Handle,
    output_elem: ElemType,
    len: usize,
    groups_per_unit: usize,
) {
    let input_bytes = input.width.bytes();
    let output_bytes = output_elem.size();
    let groups = len.div_ceil(elements_per_unit(input_bytes, output_bytes));
    let input_words = input.span_words();
    let output_words = (len * output_bytes).div_ceil(4);
    let (count, dim) = elementwise_geometry(client, groups.div_ceil(groups_per_unit));
    let address = AddressType::from_len(len.max(input_words).max(output_words));
    let contiguous = input.is_contiguous();
    // A contiguous input is read by offset alone: empty sequences keep one kernel for every rank.
    let (shape, strides) = if contiguous {
        (SequenceArg::new(), SequenceArg::new())
    } else {
        input.sequences()
    };
    // SAFETY: `launch_bit_count` checked that every offset of the view lies inside the input
    // handle and that the output holds `len` elements, and that both start on a word boundary.
    // The kernel loads only words that hold an element of the view (CubeCL binds a buffer
    // rounded up to whole words) and stores only words that hold an output element, keeping the
    // bytes of the last word that lie past the output.
    unsafe {
        launch_unchecked!(bit_count_words_kernel(
            client,
            count,
            dim,
            address,
            BufferArg::from_raw_parts(input.handle.clone(), input_words),
            BufferArg::from_raw_parts(output, output_words),
            shape,
            strides,
            len,
            WordsLayout {
                input_bytes,
                output_bytes,
                contiguous,
                groups: groups_per_unit,
            },
        ));
    }
}
