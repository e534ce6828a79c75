//! Plain copies of bits: a buffer's (what ScatterND does to its input first when it cannot
//! update it in place), and a strided view's into a contiguous buffer through 32-bit words (what
//! NonZeroCoordinates does first with a view of a type the runtime cannot bind).

use crate::capture::launch_unchecked;
use cubecl::ir::{ElemType, UIntKind};
use cubecl::prelude::*;
use cubecl::server::Handle;

use crate::launch::{
    RunGeometry, bits_elem, can_bind, elementwise_geometry, has_planes, launch_vectors_then_tail,
    require_len, require_word_aligned, vector_size_for, vectors_per_unit,
};
use crate::strided::strided_offset;
use crate::{InputView, KernelError};

/// `output[i] = input[i]` for the `vectors` vectors from vector `first`; unit `u` copies the
/// `per_unit` consecutive ones from `first + u * per_unit`.
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn copy_kernel<T: Numeric, N: Size>(
    input: &[Vector<T, N>],
    output: &mut [Vector<T, N>],
    first: usize,
    vectors: usize,
    #[comptime] per_unit: usize,
    #[define(T)] _type: ElemType,
) {
    let start = ABSOLUTE_POS * per_unit;
    if start >= vectors {
        terminate!();
    }
    #[unroll]
    for k in 0..per_unit {
        if start + k < vectors {
            let position = first + start + k;
            output[position] = input[position];
        }
    }
}

/// `output[word]` takes the bits of `input[word]` under `mask` and keeps its own elsewhere: the
/// last, partial word of a copy through words, whose bytes past the copied elements may belong
/// to whatever follows the output in its buffer.
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn copy_tail_word_kernel(input: &[u32], output: &mut [u32], word: usize, mask: u32) {
    if ABSOLUTE_POS == 0 {
        output[word] = (input[word] & mask) | (output[word] & !mask);
    }
}

/// Copies `len` elements of `elem` from `input` to `output` (distinct buffers), with the widest
/// vectors the runtime favours and a one-lane launch for the tail. Only bits move: `elem` may be
/// any type of a fixed width (bools included). Elements the runtime [cannot
/// bind](crate#types-the-runtime-cannot-bind) are copied as the 32-bit words that hold them, so
/// then both handles must start on a 4-byte boundary; the output's bytes past the last element keep
/// their value.
///
/// # Errors
///
/// [`KernelError`] when `elem` has no width of 8, 16, 32 or 64 bits, a handle is smaller than
/// `len` elements, or a handle of words is misaligned. Nothing is launched then.
pub fn launch_copy(
    client: &Client,
    input: Handle,
    output: Handle,
    elem: ElemType,
    len: usize,
) -> Result<(), KernelError> {
    let bits = bits_elem(client, elem)?;
    let bytes = bits.size();
    require_len(&input, len, bytes, "input")?;
    require_len(&output, len, bytes, "output")?;
    let (elem, len) = if !can_bind(client, bits) {
        require_word_aligned(&input, "input")?;
        require_word_aligned(&output, "output")?;
        let (whole, tail) = ((len * bytes) / 4, (len * bytes) % 4);
        if tail > 0 {
            // SAFETY: both handles hold word `whole` in part (`tail` bytes, checked above), and
            // CubeCL binds them as whole words; the kernel's single unit touches only that word
            // and stores back the output's own bytes past the tail.
            unsafe {
                launch_unchecked!(copy_tail_word_kernel(
                    client,
                    CubeCount::new_single(),
                    CubeDim::new_single(),
                    AddressType::from_len(whole + 1),
                    BufferArg::from_raw_parts(input.clone(), whole + 1),
                    BufferArg::from_raw_parts(output.clone(), whole + 1),
                    whole,
                    ((1u64 << (8 * tail)) - 1) as u32,
                ));
            }
        }
        (ElemType::UInt(UIntKind::U32), whole)
    } else {
        (bits, len)
    };
    let vector = vector_size_for(client, &[elem.size()]);
    let per_unit = vectors_per_unit(has_planes(client));
    let launch = |vector: usize, first: usize, vectors: usize| {
        let run = RunGeometry::new(client, vectors, per_unit);
        // SAFETY: both handles hold `len` elements (checked above; for words, the words that
        // hold the elements, which CubeCL binds whole); the kernel touches vectors
        // `first..first + vectors`, which the calls below keep within `len`.
        unsafe {
            launch_unchecked!(copy_kernel(
                client,
                run.cubes,
                run.dim,
                AddressType::from_len(len.max(first.saturating_add(run.reach) * vector)),
                vector,
                BufferArg::from_raw_parts(input.clone(), len),
                BufferArg::from_raw_parts(output.clone(), len),
                first,
                vectors,
                per_unit,
                elem,
            ));
        }
    };
    launch_vectors_then_tail(len, vector, launch);
    Ok(())
}

/// Copies the `len` elements of a strided view (`shape`, `strides`, in elements of `bytes`
/// bytes) into a contiguous buffer, reading and writing 32-bit words only: unit `w` writes
/// output word `w`, with the `4 / bytes` elements it holds for 8- and 16-bit elements (zero bits
/// past the last element) or one half of an element for 64-bit ones.
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn contiguous_words_kernel(
    input: &[u32],
    output: &mut [u32],
    shape: Sequence<usize>,
    strides: Sequence<usize>,
    len: usize,
    words: usize,
    #[comptime] bytes: usize,
) {
    let word = ABSOLUTE_POS;
    if word >= words {
        terminate!();
    }
    if comptime!(bytes == 8) {
        let offset = strided_offset(word / 2, &shape, &strides);
        output[word] = input[offset * 2 + word % 2];
    } else {
        let per_word = comptime!(4 / bytes);
        let field = comptime!(((1u64 << (8 * bytes)) - 1) as u32);
        let mut packed = 0u32;
        #[unroll]
        for s in 0..per_word {
            let element = word * per_word + s;
            if element < len {
                let offset = strided_offset(element, &shape, &strides);
                let shift = ((offset % per_word) * comptime!(8 * bytes)) as u32;
                let bits = (input[offset / per_word] >> shift) & field;
                packed |= bits << comptime!((s * 8 * bytes) as u32);
            }
        }
        output[word] = packed;
    }
}

/// Copies the strided view `input` into `output`, contiguous, through 32-bit words: for element
/// types the runtime [cannot bind](crate#types-the-runtime-cannot-bind), where a typed copy cannot
/// run. `output` gets `len` elements in row-major order, and its last word's bytes past them are
/// zeroed, so it must hold whole words: at least `(len * width).div_ceil(4) * 4` bytes.
///
/// # Errors
///
/// [`KernelError`] when the view's shape and strides do not match or reach past its handle, a
/// handle does not start on a 4-byte boundary, or `output` holds fewer bytes than that. Nothing
/// is launched then.
pub fn launch_contiguous_words(
    client: &Client,
    input: &InputView,
    output: Handle,
) -> Result<(), KernelError> {
    let len = input.element_count()?;
    input.require_covered("input")?;
    require_word_aligned(&input.handle, "input")?;
    require_word_aligned(&output, "output")?;
    let bytes = input.width.bytes();
    let words = (len * bytes).div_ceil(4);
    require_len(&output, words, 4, "output")?;
    if words == 0 {
        return Ok(());
    }
    let input_words = input.span_words();
    let (count, dim) = elementwise_geometry(client, words);
    let (shape, strides) = input.sequences();
    // SAFETY: unit `w < words` writes output word `w` (the output holds `words`, checked above)
    // and reads the words of elements the view addresses, which lie inside the input handle
    // (`require_covered`), a buffer CubeCL binds rounded up to whole words.
    unsafe {
        launch_unchecked!(contiguous_words_kernel(
            client,
            count,
            dim,
            AddressType::from_len(input_words.max(words).max(len)),
            BufferArg::from_raw_parts(input.handle.clone(), input_words.max(1)),
            BufferArg::from_raw_parts(output, words),
            shape,
            strides,
            len,
            words,
            bytes,
        ));
    }
    Ok(())
}
