//! `launch_nonzero_coordinates` on every input and output type, read or written as 32-bit words
//! where the runtime cannot bind the type, and every error the launcher returns.

mod common;

use burn_dml_ops_kernels::nonzero::{
    CompactionInput, CompactionOutput, CompactionPlan, CompactionStages, NonZeroPredicate,
    launch_nonzero_coordinates,
};
use burn_dml_ops_kernels::{KernelError, StorageWidth};
use common::nonzero::*;
use common::{INTEGERS, binds, client};
use cubecl::ir::{ElemType, FloatKind, IntKind};
use cubecl::prelude::*;
use cubecl::server::Handle;

/// 64-bit elements (two lanes to a 16-byte vector, so 16 rows to a mask word): a value whose
/// only set bits are in its high half is non-zero. Where the runtime binds no 64-bit integer
/// (wgpu on OpenGL) they are read as pairs of 32-bit words, low word first.
#[test]
fn wide_elements_count_their_high_half() {
    let Some(client) = client() else { return };
    let u64_elem = ElemType::UInt(cubecl::ir::UIntKind::U64);
    assert_eq!(
        reads_words(&client, StorageWidth::W64),
        !binds(&client, u64_elem),
        "the 64-bit path"
    );
    for plan in plans() {
        let tile = plan.tile_vectors();
        for len in [1, 2, 3, 2 * tile + 1, 2 * tile + 2, 4 * tile + 2] {
            for percent in [1, 50, 100] {
                let low = values(len, percent, len as u64 + 7);
                let wide: Vec<u64> = low
                    .iter()
                    .enumerate()
                    .map(|(i, &v)| {
                        if i % 2 == 0 {
                            u64::from(v) << 32
                        } else {
                            u64::from(v)
                        }
                    })
                    .collect();
                let (count, rows) = run_bytes(
                    &client,
                    u64::as_bytes(&wide),
                    StorageWidth::W64,
                    &[len],
                    Some(-1),
                    plan,
                );
                let expected = oracle(&low, &[len], -1);
                assert_eq!((count, rows), expected, "{plan:?}, {len} u64 at {percent}%");
            }
        }
    }
}

/// 8- and 16-bit elements, read as 32-bit words where the runtime binds no such integer (WGSL
/// and OpenGL), as themselves elsewhere: odd lengths whose last word is partly past the input,
/// a buffer whose bytes past the launched elements are non-zero (never counted), and values
/// with only their high byte set (16-bit floats: [`floats_ignore_the_sign_bit`]).
#[test]
fn narrow_elements_match_the_host_whatever_the_binding() {
    let Some(client) = client() else { return };
    for (width, unsigned) in [
        (StorageWidth::W8, cubecl::ir::UIntKind::U8),
        (StorageWidth::W16, cubecl::ir::UIntKind::U16),
    ] {
        assert_eq!(
            reads_words(&client, width),
            !binds(&client, ElemType::UInt(unsigned)),
            "the {width:?} path"
        );
        let bits = 8 * width.bytes();
        for plan in plans() {
            let tile = plan.tile_vectors();
            for len in [1, 2, 3, 5, 7, 33, 2 * tile + 1, 4 * tile + 3] {
                for percent in [1, 50, 100] {
                    let flags = values(len, percent, len as u64 + u64::from(percent));
                    // Non-zero values with only the high byte set in every other element.
                    let elements: Vec<u64> = flags
                        .iter()
                        .enumerate()
                        .map(|(i, &v)| match (v, i % 2) {
                            (0, _) => 0,
                            (v, 0) => u64::from(v % 255 + 1) << (bits - 8),
                            (v, _) => u64::from(v) % ((1 << bits) - 1) + 1,
                        })
                        .collect();
                    let mut bytes: Vec<u8> = elements
                        .iter()
                        .flat_map(|&e| e.to_le_bytes()[..width.bytes()].to_vec())
                        .collect();
                    // Past the launched elements: bytes that would count if read.
                    bytes.extend([0xFF; 7]);
                    let (count, rows) = run_raw(
                        &client,
                        &bytes,
                        width,
                        NonZeroPredicate::AnyBit,
                        &[len],
                        Some(-1),
                        plan,
                    );
                    let expected = oracle(&flags, &[len], -1);
                    assert_eq!(
                        (count, rows),
                        expected,
                        "{plan:?}, {len} elements of {width:?} at {percent}%"
                    );
                }
            }
        }
    }
}

/// Float bits under `AnyBitButSign`, at every float width, typed or read as words: `-0.0`
/// (only the top bit set, in the high word of an f64) is zero; NaN, infinity and the smallest
/// subnormal (only the low word of an f64 set) are not. The f16 buffer holds one more element,
/// 1.0, past the seven launched on, which must not count.
#[test]
fn floats_ignore_the_sign_bit() {
    let Some(client) = client() else { return };
    let singles: Vec<f32> = vec![0.0, -0.0, 1.0, f32::NAN, -f32::INFINITY, 0.0, -0.0, 1e-45];
    let doubles = [
        0.0f64,
        -0.0,
        1.0,
        f64::NAN,
        -f64::INFINITY,
        -0.0,
        5e-324,
        0.0,
    ];
    let halves: [u16; 8] = [0, 0x8000, 0x3C00, 0x7E00, 0xFC00, 0x0001, 0x8000, 0x3C00];
    let cases: [(&[u8], StorageWidth, usize, Vec<i32>); 3] = [
        (
            f32::as_bytes(&singles),
            StorageWidth::W32,
            8,
            vec![2, 3, 4, 7, -1, -1, -1, -1],
        ),
        (
            f64::as_bytes(&doubles),
            StorageWidth::W64,
            8,
            vec![2, 3, 4, 6, -1, -1, -1, -1],
        ),
        (
            u16::as_bytes(&halves),
            StorageWidth::W16,
            7,
            vec![2, 3, 4, 5, -1, -1, -1],
        ),
    ];
    for plan in plans() {
        for (bytes, width, len, rows) in &cases {
            let result = run_raw(
                &client,
                bytes,
                *width,
                NonZeroPredicate::AnyBitButSign,
                &[*len],
                Some(-1),
                plan,
            );
            assert_eq!(result, (4, rows.clone()), "{width:?}, {plan:?}");
        }
    }
}

/// Every integer output type, with and without a fill: where the runtime cannot bind the type
/// (8- and 16-bit ones on WGSL and OpenGL, 64-bit ones on OpenGL) the stages write u32 scratch
/// and store it as 32-bit words, which `CompactionStages::writes_words` must say. 26 rows of 2
/// coordinates (52 values) and the count (a partial word for 8 and 16 bits) sit in buffers with
/// guard bytes after them that no launch may change.
#[test]
fn outputs_of_every_integer_type() {
    use common::GUARD_BYTE;
    use cubecl::ir::UIntKind;
    let Some(client) = client() else { return };
    let dims = [13usize, 2];
    let values: Vec<u32> = (0..26).map(|i| u32::from(i % 3 == 1 || i == 25)).collect();
    let (count, rows) = oracle(&values, &dims, 0);
    let mut words_ran = Vec::new();
    for elem in INTEGERS {
        let size = elem.size();
        let signed = matches!(elem, ElemType::Int(_));
        for fill in [None, Some(if signed { -3i64 } else { 100 })] {
            let guarded = |bytes: usize| vec![GUARD_BYTE; bytes.div_ceil(4) * 4 + 4];
            let count_handle = client.create_from_slice(&guarded(size));
            let coordinates = client.create_from_slice(&guarded(52 * size));
            let input = client.create_from_slice(u32::as_bytes(&values));
            let stages = CompactionStages::new(
                &client,
                &CompactionInput {
                    handle: input,
                    width: StorageWidth::W32,
                    predicate: NonZeroPredicate::AnyBit,
                    dims: &dims,
                },
                &CompactionOutput {
                    count: count_handle.clone(),
                    coordinates: coordinates.clone(),
                    elem,
                    fill,
                },
                CompactionPlan::for_client(&client),
            )
            .unwrap_or_else(|err| panic!("{elem}: {err}"));
            assert_eq!(stages.writes_words(), !binds(&client, elem), "{elem}");
            if stages.writes_words() {
                words_ran.push(elem.to_string());
            }
            stages.count();
            stages.offsets();
            stages.rows();
            // Element `i` of `bytes` as a signed or unsigned integer of `size` bytes.
            let read = |bytes: &[u8], i: usize| -> i64 {
                let mut raw = [0u8; 8];
                raw[..size].copy_from_slice(&bytes[i * size..(i + 1) * size]);
                let value = u64::from_le_bytes(raw);
                let shift = 64 - 8 * size as u32;
                if signed {
                    ((value << shift) as i64) >> shift
                } else {
                    value as i64
                }
            };
            let count_bytes = client.read_one(count_handle).expect("read the count");
            assert_eq!(read(&count_bytes, 0), i64::from(count), "{elem} count");
            assert!(
                count_bytes[size..].iter().all(|&b| b == GUARD_BYTE),
                "{elem}: a byte past the count changed"
            );
            let bytes = client.read_one(coordinates).expect("read the coordinates");
            let filled = count as usize * 2;
            for i in 0..52 {
                let got = read(&bytes, i);
                if i < filled {
                    assert_eq!(got, i64::from(rows[i]), "{elem} {fill:?}: value {i}");
                } else if let Some(fill) = fill {
                    assert_eq!(got, fill, "{elem}: padding value {i}");
                } else {
                    // Left as they were: the guard bytes.
                    assert!(
                        bytes[i * size..(i + 1) * size]
                            .iter()
                            .all(|&b| b == GUARD_BYTE),
                        "{elem}: padding value {i} was written without a fill"
                    );
                }
            }
            assert!(
                bytes[52 * size..].iter().all(|&b| b == GUARD_BYTE),
                "{elem} {fill:?}: a byte past the coordinates changed"
            );
        }
    }
    // WGSL and OpenGL bind no 8-bit type: the word path must have run there.
    if !binds(&client, ElemType::UInt(UIntKind::U8)) {
        assert!(words_ran.iter().any(|e| e == "u8"), "{words_ran:?}");
    }
    println!("outputs written as words here: {words_ran:?}");
}

#[test]
fn errors_launch_nothing() {
    let Some(client) = client() else { return };
    let plan = CompactionPlan::for_client(&client);
    let handle = |bytes: usize| client.create_from_slice(&vec![0u8; bytes]);
    let launch_on = |input: Handle, dims: &[usize], rows_bytes: usize, out: ElemType, plan| {
        launch_nonzero_coordinates(
            &client,
            &CompactionInput {
                handle: input,
                width: StorageWidth::W32,
                predicate: NonZeroPredicate::AnyBit,
                dims,
            },
            &CompactionOutput {
                count: handle(8),
                coordinates: handle(rows_bytes),
                elem: out,
                fill: None,
            },
            plan,
        )
    };
    let launch = |dims: &[usize], rows_bytes: usize, out: ElemType, plan| {
        launch_on(handle(16), dims, rows_bytes, out, plan)
    };
    let i32_out = ElemType::Int(IntKind::I32);
    for bad in [(0, 16), (1025, 16), (256, 0), (256, 65)] {
        let plan = CompactionPlan {
            cube_size: bad.0,
            per_unit: bad.1,
            ..plan
        };
        assert!(
            matches!(
                launch(&[4], 16, i32_out, plan),
                Err(KernelError::InvalidPlan { .. })
            ),
            "{plan:?}"
        );
    }
    let float_out = ElemType::Float(FloatKind::F32);
    assert_eq!(
        launch(&[4], 16, float_out, plan),
        Err(KernelError::NotAnInteger { elem: float_out })
    );
    for dims in [&[usize::MAX, 2][..], &[1 << 16, 1 << 16]] {
        let result = launch(dims, 16, i32_out, plan);
        assert!(
            matches!(result, Err(KernelError::TooLarge { .. })),
            "{dims:?}: {result:?}"
        );
    }
    let result = launch(&[2, 2], 24, i32_out, plan);
    assert!(
        matches!(
            result,
            Err(KernelError::BufferTooSmall {
                role: "coordinates",
                needed: 32,
                ..
            })
        ),
        "{result:?}"
    );
    assert!(matches!(
        launch(&[5], 20, i32_out, plan),
        Err(KernelError::BufferTooSmall {
            role: "input",
            needed: 20,
            ..
        })
    ));
    // A view into a larger allocation is only as long as the bytes it covers.
    let view = client.create_from_slice(&[0u8; 64]).offset_start(48);
    let result = launch_on(view, &[8], 32, i32_out, plan);
    assert!(
        matches!(
            result,
            Err(KernelError::BufferTooSmall {
                role: "input",
                needed: 32,
                actual: 16
            })
        ),
        "{result:?}"
    );
    assert!(matches!(
        launch(&[1 << 32], 16, i32_out, plan),
        Err(KernelError::TooLarge { .. })
    ));
    // Read as words, a 16-bit input must start on a word; read typed, it may start anywhere.
    let halves = client.create_from_slice(u16::as_bytes(&[0, 1, 2, 0, 3, 0, 0, 4]));
    let result = launch_nonzero_coordinates(
        &client,
        &CompactionInput {
            handle: halves.offset_start(2),
            width: StorageWidth::W16,
            predicate: NonZeroPredicate::AnyBit,
            dims: &[7],
        },
        &CompactionOutput {
            count: handle(8),
            coordinates: handle(28),
            elem: i32_out,
            fill: None,
        },
        plan,
    );
    if reads_words(&client, StorageWidth::W16) {
        assert_eq!(
            result,
            Err(KernelError::Misaligned {
                role: "input",
                offset: 2,
                align: 4
            })
        );
    } else {
        assert_eq!(result, Ok(()));
    }
}
