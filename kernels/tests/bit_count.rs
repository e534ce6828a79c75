//! `launch_bit_count` on wgpu against a host computation, through each [`BitCountPath`]: every
//! pair of input and output widths (8 to 64 bits), lengths around words and vectors, strided
//! views (transposed, permuted, broadcast, offset), output bytes past the end left as they were,
//! and every error the launcher returns.

mod common;

use burn_dml_ops_kernels::bit_count::{BitCountPath, launch_bit_count};
use burn_dml_ops_kernels::{InputView, KernelError, StorageWidth};
use common::{GUARD, GUARD_BYTE, OFFSET, WIDTHS, binds, bytes, client};
use cubecl::ir::{ElemType, FloatKind, IntKind, UIntKind};
use cubecl::prelude::*;
use cubecl::server::Handle;
use proptest::prelude::*;

/// An output element type of `width`, signed or not.
fn output_elem(width: StorageWidth, signed: bool) -> ElemType {
    match (width, signed) {
        (StorageWidth::W8, false) => ElemType::UInt(UIntKind::U8),
        (StorageWidth::W16, false) => ElemType::UInt(UIntKind::U16),
        (StorageWidth::W32, false) => ElemType::UInt(UIntKind::U32),
        (StorageWidth::W64, false) => ElemType::UInt(UIntKind::U64),
        (StorageWidth::W8, true) => ElemType::Int(IntKind::I8),
        (StorageWidth::W16, true) => ElemType::Int(IntKind::I16),
        (StorageWidth::W32, true) => ElemType::Int(IntKind::I32),
        (StorageWidth::W64, true) => ElemType::Int(IntKind::I64),
    }
}

/// A strided view on the host: the elements of `bytes` (each `width` bytes) at the offsets
/// `shape` and `strides` give, in row-major order.
struct HostView<'a> {
    bytes: &'a [u8],
    width: usize,
    shape: &'a [usize],
    strides: &'a [usize],
}

impl HostView<'_> {
    /// The popcount of each element of the view, in row-major order.
    fn counts(&self) -> Vec<u64> {
        let len: usize = self.shape.iter().product();
        (0..len)
            .map(|flat| {
                let mut rest = flat;
                let mut offset = 0;
                for axis in (0..self.shape.len()).rev() {
                    offset += (rest % self.shape[axis]) * self.strides[axis];
                    rest /= self.shape[axis];
                }
                self.bytes[offset * self.width..(offset + 1) * self.width]
                    .iter()
                    .map(|b| b.count_ones() as u64)
                    .sum()
            })
            .collect()
    }
}

/// The little-endian bytes of `counts` as `width`-byte integers.
fn encode(counts: &[u64], width: usize) -> Vec<u8> {
    counts
        .iter()
        .flat_map(|c| c.to_le_bytes()[..width].to_vec())
        .collect()
}

/// Runs the launcher on `view` (its buffer `bytes` placed `OFFSET` bytes into an allocation
/// when `offset`) and returns the whole output allocation: the counts, then `GUARD` bytes.
fn run(
    client: &Client,
    view: &HostView,
    offset: bool,
    output: ElemType,
    path: BitCountPath,
) -> Result<Vec<u8>, KernelError> {
    let len: usize = view.shape.iter().product();
    let mut input_bytes = vec![0x3Cu8; if offset { OFFSET } else { 0 }];
    input_bytes.extend_from_slice(view.bytes);
    let mut input = client.create_from_slice(&input_bytes);
    if offset {
        input = input.offset_start(OFFSET as u64);
    }
    let out_bytes = len * output.size();
    let full = client.create_from_slice(&vec![GUARD_BYTE; out_bytes + GUARD]);
    let handle = full.clone().offset_end(GUARD as u64);
    let input = InputView {
        handle: input,
        width: StorageWidth::from_bytes(view.width).unwrap(),
        shape: view.shape.to_vec(),
        strides: view.strides.to_vec(),
    };
    launch_bit_count(client, &input, handle, output, path)?;
    Ok(client.read_one(full).expect("read the output").to_vec())
}

/// Checks the launch against the host: every count, and the guard bytes unchanged.
fn check(client: &Client, view: &HostView, offset: bool, output: ElemType, path: BitCountPath) {
    let actual = run(client, view, offset, output, path)
        .unwrap_or_else(|err| panic!("{path:?} {}-byte in, {output} out: {err}", view.width));
    let mut expected = encode(&view.counts(), output.size());
    expected.extend([GUARD_BYTE; GUARD]);
    assert_eq!(
        actual, expected,
        "{path:?}: {}-byte input {:?}/{:?}, {output} output, offset {offset}",
        view.width, view.shape, view.strides
    );
}

/// The word path with 1, 3 and 8 groups per unit and the typed path with 1, 3 and 4 vectors
/// per unit.
const PATHS: [BitCountPath; 6] = [
    WORDS,
    BitCountPath::Words { groups_per_unit: 3 },
    BitCountPath::Words { groups_per_unit: 8 },
    BitCountPath::Elements {
        vectors_per_unit: 1,
    },
    BitCountPath::Elements {
        vectors_per_unit: 3,
    },
    BitCountPath::Elements {
        vectors_per_unit: 4,
    },
];
const ONE: BitCountPath = BitCountPath::Elements {
    vectors_per_unit: 1,
};
const WORDS: BitCountPath = BitCountPath::Words { groups_per_unit: 1 };

/// Whether `client` can run `path` for these widths on a contiguous input.
fn runs(client: &Client, path: BitCountPath, input: StorageWidth, output: ElemType) -> bool {
    matches!(path, BitCountPath::Words { .. })
        || (binds(client, input.unsigned()) && binds(client, output))
}

const LENGTHS: [usize; 12] = [1, 2, 3, 4, 5, 7, 8, 9, 15, 33, 1027, 70_001];

#[test]
fn every_width_pair_matches_the_host() {
    let Some(client) = client() else { return };
    for path in PATHS {
        for input in WIDTHS {
            for out in WIDTHS {
                for signed in [false, true] {
                    let output = output_elem(out, signed);
                    if !runs(&client, path, input, output) {
                        continue;
                    }
                    for (i, &len) in LENGTHS.iter().enumerate() {
                        let data = bytes(len * input.bytes(), i as u64);
                        let view = HostView {
                            bytes: &data,
                            width: input.bytes(),
                            shape: &[len],
                            strides: &[1],
                        };
                        check(&client, &view, false, output, path);
                    }
                }
            }
        }
    }
}

#[test]
fn all_ones_and_all_zeros_count_every_bit() {
    let Some(client) = client() else { return };
    for path in PATHS {
        for input in WIDTHS {
            let output = output_elem(StorageWidth::W8, false);
            if !runs(&client, path, input, output) {
                continue;
            }
            let mut data = vec![0xFFu8; 5 * input.bytes()];
            data.extend(vec![0u8; 2 * input.bytes()]);
            let view = HostView {
                bytes: &data,
                width: input.bytes(),
                shape: &[7],
                strides: &[1],
            };
            let actual = run(&client, &view, false, output, path).unwrap();
            let bits = 8 * input.bytes() as u8;
            assert_eq!(
                &actual[..7],
                &[bits, bits, bits, bits, bits, 0, 0],
                "{path:?}"
            );
        }
    }
}

#[test]
fn strided_views_are_read_where_they_lie() {
    let Some(client) = client() else { return };
    // (shape, strides, elements in the buffer)
    let views: &[(&[usize], &[usize], usize)] = &[
        (&[5, 3], &[1, 5], 15),       // a transposed 3×5
        (&[2, 3, 4], &[1, 8, 2], 24), // permuted
        (&[4, 6], &[0, 1], 6),        // a row broadcast to 4 rows
        (&[3, 1, 5], &[0, 7, 1], 5),  // broadcast with a size-1 axis
        (&[3, 4], &[10, 2], 30),      // every other element of a 3×10 block
        (&[2, 2, 2, 3], &[24, 1, 12, 4], 48),
        (&[7], &[3], 21),
    ];
    for path in [
        WORDS,
        BitCountPath::Words { groups_per_unit: 4 },
        BitCountPath::Words { groups_per_unit: 8 },
    ] {
        for input in WIDTHS {
            for out in [StorageWidth::W8, StorageWidth::W16, StorageWidth::W32] {
                let output = output_elem(out, true);
                for (i, (shape, strides, elements)) in views.iter().enumerate() {
                    let data = bytes(elements * input.bytes(), 100 + i as u64);
                    let view = HostView {
                        bytes: &data,
                        width: input.bytes(),
                        shape,
                        strides,
                    };
                    for offset in [false, true] {
                        check(&client, &view, offset, output, path);
                    }
                }
            }
        }
    }
}

#[test]
fn the_path_follows_the_layout_and_the_runtime() {
    let Some(client) = client() else { return };
    let handle = client.create_from_slice(&[0u8; 64]);
    let u8_out = output_elem(StorageWidth::W8, false);
    let i32_out = output_elem(StorageWidth::W32, true);
    let flat = |width| InputView::contiguous(handle.clone(), width, 8);
    // Four vectors or eight word groups per unit on GPUs (planes on), one on CPU drivers such
    // as lavapipe.
    let gpu = client
        .properties()
        .features
        .plane
        .contains(cubecl::features::Plane::Ops);
    let (vectors, groups) = if gpu { (4, 8) } else { (1, 1) };
    let typed = BitCountPath::Elements {
        vectors_per_unit: vectors,
    };
    let words = BitCountPath::Words {
        groups_per_unit: groups,
    };
    assert_eq!(
        BitCountPath::for_input(&client, &flat(StorageWidth::W32), i32_out),
        typed
    );
    // A strided view is read by the word kernel; the Elements path refuses it.
    let transposed = InputView {
        shape: vec![2, 4],
        strides: vec![1, 2],
        ..flat(StorageWidth::W32)
    };
    assert_eq!(
        BitCountPath::for_input(&client, &transposed, i32_out),
        words
    );
    let output = client.create_from_slice(&[0u8; 64]);
    let err = launch_bit_count(&client, &transposed, output, i32_out, ONE).unwrap_err();
    assert!(matches!(err, KernelError::InvalidPlan { .. }), "{err:?}");
    // cubecl-wgpu's WGSL path binds no 8- or 16-bit integers; the SPIR-V one does.
    let binds_u8 = binds(&client, ElemType::UInt(UIntKind::U8));
    let expected = if binds_u8 { typed } else { words };
    assert_eq!(
        BitCountPath::for_input(&client, &flat(StorageWidth::W8), i32_out),
        expected
    );
    assert_eq!(
        BitCountPath::for_input(&client, &flat(StorageWidth::W32), u8_out),
        expected
    );
    if !binds_u8 {
        let view = HostView {
            bytes: &[1, 2, 3],
            width: 1,
            shape: &[3],
            strides: &[1],
        };
        let err = run(&client, &view, false, i32_out, ONE).unwrap_err();
        assert!(
            matches!(err, KernelError::UnsupportedType { role: "input", .. }),
            "{err:?}"
        );
    }
}

#[test]
fn empty_inputs_launch_nothing_and_succeed() {
    let Some(client) = client() else { return };
    for path in PATHS {
        for shape in [&[0usize][..], &[3, 0, 2]] {
            let strides = vec![1; shape.len()];
            let view = HostView {
                bytes: &[],
                width: 4,
                shape,
                strides: &strides,
            };
            let out = run(
                &client,
                &view,
                false,
                output_elem(StorageWidth::W32, true),
                path,
            );
            assert_eq!(out.unwrap(), vec![GUARD_BYTE; GUARD], "{path:?} {shape:?}");
        }
    }
}

#[test]
fn errors_launch_nothing() {
    let Some(client) = client() else { return };
    let i32_out = output_elem(StorageWidth::W32, true);
    let input = client.create_from_slice(&[0u8; 64]);
    let output = client.create_from_slice(&[0u8; 64]);
    let view = |shape: Vec<usize>, strides: Vec<usize>| InputView {
        handle: input.clone(),
        width: StorageWidth::W32,
        shape,
        strides,
    };
    for path in PATHS {
        let launch = |view: &InputView, output: Handle, elem: ElemType| {
            launch_bit_count(&client, view, output, elem, path)
        };
        let float = ElemType::Float(FloatKind::F32);
        assert_eq!(
            launch(&view(vec![4], vec![1]), output.clone(), float),
            Err(KernelError::NotAnInteger { elem: float })
        );
        assert!(matches!(
            launch(&view(vec![4, 4], vec![1]), output.clone(), i32_out),
            Err(KernelError::ShapeMismatch { .. })
        ));
        // 17 i32 need 68 bytes; the input has 64.
        assert_eq!(
            launch(&view(vec![17], vec![1]), output.clone(), i32_out),
            Err(KernelError::BufferTooSmall {
                role: "input",
                needed: 68,
                actual: 64
            })
        );
        // Four elements, but the stride reaches element 15 of 16: fits on the word path, which
        // reads strided views; 18 elements (below) do not fit on either.
        let strided = launch(&view(vec![4], vec![5]), output.clone(), i32_out);
        match path {
            BitCountPath::Words { .. } => assert_eq!(strided, Ok(())),
            BitCountPath::Elements { .. } => {
                assert!(matches!(strided, Err(KernelError::InvalidPlan { .. })))
            }
        }
        assert!(matches!(
            launch(&view(vec![2, 2], vec![16, 1]), output.clone(), i32_out),
            Err(KernelError::BufferTooSmall {
                role: "input",
                needed: 72,
                ..
            })
        ));
        // An offset view gets no credit for the bytes before it.
        let offset = InputView {
            handle: input.clone().offset_start(32),
            ..view(vec![16], vec![1])
        };
        assert!(matches!(
            launch(&offset, output.clone(), i32_out),
            Err(KernelError::BufferTooSmall {
                role: "input",
                needed: 64,
                actual: 32
            })
        ));
        assert!(matches!(
            launch(
                &view(vec![8], vec![1]),
                output.clone().offset_end(40),
                i32_out
            ),
            Err(KernelError::BufferTooSmall {
                role: "output",
                needed: 32,
                actual: 24
            })
        ));
        assert!(matches!(
            launch(
                &view(vec![2, 2], vec![usize::MAX, 1]),
                output.clone(),
                i32_out
            ),
            Err(KernelError::TooLarge { .. })
        ));
        assert!(matches!(
            launch(
                &view(vec![1 << 40, 1 << 40], vec![0, 0]),
                output.clone(),
                i32_out
            ),
            Err(KernelError::TooLarge { .. })
        ));
    }
    // Vectors or groups per unit outside 1..=8.
    for per_unit in [0, 9] {
        for path in [
            BitCountPath::Elements {
                vectors_per_unit: per_unit,
            },
            BitCountPath::Words {
                groups_per_unit: per_unit,
            },
        ] {
            let err = launch_bit_count(
                &client,
                &view(vec![4], vec![1]),
                output.clone(),
                i32_out,
                path,
            )
            .unwrap_err();
            assert!(
                err.to_string().contains("per unit is outside 1..=8"),
                "{err}"
            );
        }
    }
    // The word path reads whole words, so a buffer must start on one.
    let misaligned = InputView {
        handle: input.clone().offset_start(2),
        ..view(vec![4], vec![1])
    };
    assert_eq!(
        launch_bit_count(&client, &misaligned, output.clone(), i32_out, WORDS),
        Err(KernelError::Misaligned {
            role: "input",
            offset: 2,
            align: 4
        })
    );
    let err = launch_bit_count(
        &client,
        &view(vec![4], vec![1]),
        output.clone().offset_start(6),
        i32_out,
        WORDS,
    )
    .unwrap_err();
    assert!(err.to_string().contains("not a multiple of 4"), "{err}");
}

#[test]
fn contiguous_views_are_recognised() {
    let Some(client) = client() else { return };
    let handle = client.create_from_slice(&[0u8; 4]);
    let view = |shape: Vec<usize>, strides: Vec<usize>| InputView {
        handle: handle.clone(),
        width: StorageWidth::W8,
        shape,
        strides,
    };
    assert!(view(vec![2, 3], vec![3, 1]).is_contiguous());
    assert!(view(vec![2, 1, 3], vec![3, 99, 1]).is_contiguous());
    assert!(!view(vec![2, 3], vec![1, 2]).is_contiguous());
    assert!(!view(vec![2, 3], vec![0, 1]).is_contiguous());
    assert!(InputView::contiguous(handle.clone(), StorageWidth::W8, 4).is_contiguous());
    assert_eq!(view(vec![2, 3], vec![3, 1]).element_count(), Ok(6));
}

/// A random view: a shape, a permutation of a contiguous layout of it (optionally with a
/// broadcast axis), and the buffer it needs.
fn view_strategy() -> impl Strategy<Value = (Vec<usize>, Vec<usize>, usize)> {
    (1usize..=5)
        .prop_flat_map(|rank| {
            (
                prop::collection::vec(1usize..=6, rank),
                Just((0..rank).collect::<Vec<_>>()).prop_shuffle(),
                prop::option::of(0..rank),
            )
        })
        .prop_map(|(shape, order, broadcast)| {
            // Lay the axes out in `order`, innermost last.
            let mut strides = vec![0; shape.len()];
            let mut next = 1;
            for &axis in order.iter().rev() {
                strides[axis] = next;
                next *= shape[axis];
            }
            if let Some(axis) = broadcast {
                strides[axis] = 0;
            }
            (shape, strides, next)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn random_views_match_the_host(
        (shape, strides, elements) in view_strategy(),
        input in 0usize..4,
        out in 0usize..4,
        words in any::<bool>(),
        offset in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let Some(client) = client() else { return Ok(()) };
        let input = WIDTHS[input];
        let output = output_elem(WIDTHS[out], seed % 2 == 0);
        let contiguous = strides.iter().zip(&shape).rev().scan(1, |expected, (&stride, &size)| {
            let ok = size == 1 || stride == *expected;
            *expected *= size;
            Some(ok)
        }).all(|ok| ok);
        let path = if words {
            BitCountPath::Words { groups_per_unit: 1 + (seed % 8) as usize }
        } else {
            ONE
        };
        prop_assume!(runs(&client, path, input, output) && (words || contiguous));
        let data = bytes(elements * input.bytes(), seed);
        let view = HostView { bytes: &data, width: input.bytes(), shape: &shape, strides: &strides };
        let actual = run(&client, &view, offset, output, path).unwrap();
        let mut expected = encode(&view.counts(), output.size());
        expected.extend([GUARD_BYTE; GUARD]);
        prop_assert_eq!(actual, expected);
    }
}
