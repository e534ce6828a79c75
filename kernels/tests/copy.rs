//! `launch_contiguous_words` on wgpu against a host gather: every element width (8 to 64 bits),
//! views that are transposed, permuted, broadcast, sliced with gaps or offset into their buffer,
//! lengths that leave the last output word partly empty, the output's bytes past its words left
//! as they were, and every error the launcher returns. Also `launch_copy` of 8- and 16-bit
//! elements, which goes through words where the runtime cannot bind them.

mod common;

use burn_dml_ops_kernels::copy::{launch_contiguous_words, launch_copy};
use burn_dml_ops_kernels::{InputView, KernelError, StorageWidth};
use common::{GUARD, GUARD_BYTE, OFFSET, WIDTHS, binds, bytes, client};
use cubecl::ir::{ElemType, FloatKind, IntKind, UIntKind};
use cubecl::prelude::*;
use proptest::prelude::*;

/// The view's elements in row-major order, their bytes back to back, then zeros up to a whole
/// word: what the launcher must write.
fn gather(data: &[u8], width: usize, shape: &[usize], strides: &[usize]) -> Vec<u8> {
    let len: usize = shape.iter().product();
    let mut out = Vec::with_capacity(len * width + 3);
    for index in 0..len {
        let mut rest = index;
        let mut offset = 0;
        for axis in (0..shape.len()).rev() {
            offset += (rest % shape[axis]) * strides[axis];
            rest /= shape[axis];
        }
        out.extend_from_slice(&data[offset * width..(offset + 1) * width]);
    }
    out.resize((len * width).div_ceil(4) * 4, 0);
    out
}

/// Runs the launcher on a view of `data` (placed `OFFSET` bytes into its allocation when
/// `offset`) into an output of whole words followed by `GUARD` bytes; returns all of it.
fn run(
    client: &Client,
    data: &[u8],
    width: StorageWidth,
    shape: &[usize],
    strides: &[usize],
    offset: bool,
) -> Vec<u8> {
    let len: usize = shape.iter().product();
    let mut input_bytes = vec![0x3Cu8; if offset { OFFSET } else { 0 }];
    input_bytes.extend_from_slice(data);
    let mut input = client.create_from_slice(&input_bytes);
    if offset {
        input = input.offset_start(OFFSET as u64);
    }
    let words = (len * width.bytes()).div_ceil(4);
    let full = client.create_from_slice(&vec![GUARD_BYTE; words * 4 + GUARD]);
    let view = InputView {
        handle: input,
        width,
        shape: shape.to_vec(),
        strides: strides.to_vec(),
    };
    launch_contiguous_words(client, &view, full.clone().offset_end(GUARD as u64))
        .unwrap_or_else(|err| panic!("{width:?} {shape:?}/{strides:?}: {err}"));
    client.read_one(full).expect("read the output").to_vec()
}

fn check(client: &Client, width: StorageWidth, shape: &[usize], strides: &[usize], seed: u64) {
    let span = shape
        .iter()
        .zip(strides)
        .map(|(&size, &stride)| (size.max(1) - 1) * stride)
        .sum::<usize>()
        + 1;
    let data = bytes(span * width.bytes(), seed);
    let mut expected = gather(&data, width.bytes(), shape, strides);
    expected.extend([GUARD_BYTE; GUARD]);
    for offset in [false, true] {
        assert_eq!(
            run(client, &data, width, shape, strides, offset),
            expected,
            "{width:?} {shape:?}/{strides:?}, offset {offset}"
        );
    }
}

#[test]
fn strided_views_come_out_contiguous() {
    let Some(client) = client() else { return };
    // (shape, strides)
    let views: &[(&[usize], &[usize])] = &[
        (&[1], &[1]),
        (&[3], &[1]),
        (&[5, 3], &[1, 5]),       // a transposed 3×5
        (&[2, 3, 4], &[1, 8, 2]), // permuted
        (&[4, 6], &[0, 1]),       // a row broadcast to 4 rows
        (&[3, 1, 5], &[0, 7, 1]), // broadcast with a size-1 axis
        (&[3, 4], &[10, 2]),      // every other element of a 3×10 block
        (&[7], &[3]),
        (&[33, 3], &[1, 33]),
    ];
    for width in WIDTHS {
        for (i, (shape, strides)) in views.iter().enumerate() {
            check(&client, width, shape, strides, i as u64 + 1);
        }
    }
}

#[test]
fn errors_launch_nothing() {
    let Some(client) = client() else { return };
    let input = client.create_from_slice(&[1u8; 64]);
    let output = client.create_from_slice(&[GUARD_BYTE; 16]);
    let view = |width, shape: Vec<usize>, strides: Vec<usize>| InputView {
        handle: input.clone(),
        width,
        shape,
        strides,
    };
    let unchanged = |output: cubecl::server::Handle| {
        assert_eq!(
            client.read_one(output).unwrap().to_vec(),
            vec![GUARD_BYTE; 16]
        );
    };
    let misaligned = InputView {
        handle: input.clone().offset_start(2),
        ..view(StorageWidth::W16, vec![4], vec![1])
    };
    assert_eq!(
        launch_contiguous_words(&client, &misaligned, output.clone()),
        Err(KernelError::Misaligned {
            role: "input",
            offset: 2,
            align: 4
        })
    );
    let err = launch_contiguous_words(
        &client,
        &view(StorageWidth::W16, vec![4], vec![1]),
        output.clone().offset_start(6),
    )
    .unwrap_err();
    assert!(
        matches!(err, KernelError::Misaligned { role: "output", .. }),
        "{err}"
    );
    // Five u8 take two whole words: eight bytes, more than the four offered.
    let err = launch_contiguous_words(
        &client,
        &view(StorageWidth::W8, vec![5], vec![1]),
        output.clone().offset_end(12),
    )
    .unwrap_err();
    assert!(
        matches!(err, KernelError::BufferTooSmall { role: "output", .. }),
        "{err}"
    );
    // A view past its buffer, and shape and strides of different ranks.
    let err = launch_contiguous_words(
        &client,
        &view(StorageWidth::W32, vec![4, 5], vec![5, 1]),
        output.clone(),
    )
    .unwrap_err();
    assert!(
        matches!(err, KernelError::BufferTooSmall { role: "input", .. }),
        "{err}"
    );
    let err = launch_contiguous_words(
        &client,
        &view(StorageWidth::W32, vec![4], vec![1, 1]),
        output.clone(),
    )
    .unwrap_err();
    assert!(matches!(err, KernelError::ShapeMismatch { .. }), "{err}");
    unchanged(output);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    /// Random views of rank 1 to 8: sizes 1 to 5, strides 0 to 6 elements, every width.
    #[test]
    fn random_views_match_the_host(
        axes in prop::collection::vec((1usize..=5, 0usize..=6), 1..=8),
        width in 0usize..4,
        seed in any::<u64>(),
    ) {
        let Some(client) = client() else { return Ok(()) };
        let (shape, strides): (Vec<usize>, Vec<usize>) = axes.into_iter().unzip();
        check(&client, WIDTHS[width], &shape, &strides, seed);
    }
}

/// Copies the first `len` elements of `width` bytes of `input` with `launch_copy` into an output
/// followed by guard bytes, and checks that exactly those bytes arrived.
fn copy_and_check(
    client: &Client,
    elem: ElemType,
    width: usize,
    len: usize,
    input: &[u8],
    case: &str,
) {
    let output = client.create_from_slice(&vec![GUARD_BYTE; len * width + GUARD]);
    launch_copy(
        client,
        client.create_from_slice(input),
        output.clone(),
        elem,
        len,
    )
    .unwrap_or_else(|err| panic!("{elem} x {len}: {err}"));
    let actual = client.read_one(output).expect("read the output");
    assert!(
        actual[..len * width] == input[..len * width],
        "{elem} x {len} ({case}): the elements differ"
    );
    assert!(
        actual[len * width..].iter().all(|&b| b == GUARD_BYTE),
        "{elem} x {len} ({case}): a byte past the end changed"
    );
}

/// `launch_copy` of 8- and 16-bit elements, which WGSL and OpenGL copy as 32-bit words: every
/// length from 0 to 9 elements, the output's bytes past the last element (in its last word and
/// after it) keep their guard value.
#[test]
fn narrow_buffer_copies_keep_the_bytes_past_the_end() {
    let Some(client) = client() else { return };
    for (elem, width) in [
        (ElemType::UInt(UIntKind::U8), 1),
        (ElemType::Int(IntKind::I16), 2),
        (ElemType::Float(FloatKind::BF16), 2),
    ] {
        let words = !binds(&client, elem);
        for len in 0..10usize {
            // Input bytes past the copied elements, which must not travel.
            let input = bytes(len * width + 4, len as u64);
            copy_and_check(
                &client,
                elem,
                width,
                len,
                &input,
                &format!("words: {words}"),
            );
        }
    }
}

/// `launch_copy` of 32- and 64-bit elements around a unit's run of vectors (one vector per
/// unit on GPUs, several on CPU drivers) and a cube's: every element arrives, a tail that fills
/// no whole vector included, and nothing past the end changes.
#[test]
fn copies_around_a_unit_and_a_cube_keep_the_bytes_past_the_end() {
    let Some(client) = client() else { return };
    for (elem, width) in [
        (ElemType::Float(FloatKind::F32), 4),
        (ElemType::UInt(UIntKind::U64), 8),
    ] {
        if !binds(&client, elem) {
            continue;
        }
        for len in [31, 32, 33, 63, 65, 255, 257, 1023, 1025, 8191, 8193, 70_001] {
            let input = bytes(len * width, len as u64);
            copy_and_check(&client, elem, width, len, &input, "typed");
        }
    }
}
