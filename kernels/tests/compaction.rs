//! `launch_nonzero_coordinates` on wgpu against a host computation, through each
//! [`CompactionPlan`]: both scans (plane operations are forced on lavapipe, which has subgroups
//! although cubecl-wgpu reports none on CPU adapters), cube sizes that leave a partial plane,
//! tiles of one vector, vector tails, coordinate widths from 1 to 8, fill values, and every
//! error the launcher returns.

mod common;

use burn_dml_ops_kernels::nonzero::{
    CompactionInput, CompactionOutput, CompactionPlan, CompactionStages, CubeScan,
    NonZeroPredicate, launch_nonzero_coordinates,
};
use burn_dml_ops_kernels::{KernelError, StorageWidth};
use common::{INTEGERS, binds, client};
use cubecl::ir::{ElemType, FloatKind, IntKind};
use cubecl::prelude::*;
use cubecl::server::Handle;
use proptest::prelude::*;

/// For each unit of a cube of `cube_size`, the number of active units in its plane.
#[cube(launch)]
fn plane_units(output: &mut [u32]) {
    output[UNIT_POS as usize] = plane_sum(1u32);
}

fn plane_sizes(client: &Client, cube_size: usize) -> Vec<u32> {
    let output = client.create_from_slice(u32::as_bytes(&vec![0u32; cube_size]));
    // SAFETY: the buffer holds one u32 per unit, and each unit writes its own.
    unsafe {
        plane_units::launch(
            client,
            CubeCount::Static(1, 1, 1),
            CubeDim::new_1d(cube_size as u32),
            BufferArg::from_raw_parts(output.clone(), cube_size),
        );
    }
    u32::from_bytes(&client.read_one(output).expect("read the plane sizes")).to_vec()
}

/// Count and coordinates on the host: the rows of every non-zero value of `values` shaped
/// `dims`, in ascending order, then `fill` rows.
fn oracle(values: &[u32], dims: &[usize], fill: i32) -> (i32, Vec<i32>) {
    let width = dims.len();
    let mut rows = Vec::new();
    for (flat, &value) in values.iter().enumerate() {
        if value != 0 {
            let mut coordinate = vec![0i32; width];
            let mut rest = flat;
            for axis in (0..width).rev() {
                coordinate[axis] = (rest % dims[axis]) as i32;
                rest /= dims[axis];
            }
            rows.extend(coordinate);
        }
    }
    let count = (rows.len() / width.max(1)) as i32;
    rows.resize(values.len() * width, fill);
    (count, rows)
}

/// Runs the launcher on `values` (u32, `AnyBit`) with i32 outputs that start as -7; returns the
/// count and every coordinate element.
fn run(
    client: &Client,
    values: &[u32],
    dims: &[usize],
    fill: Option<i64>,
    plan: CompactionPlan,
) -> (i32, Vec<i32>) {
    run_bytes(
        client,
        u32::as_bytes(values),
        StorageWidth::W32,
        dims,
        fill,
        plan,
    )
}

/// [`run`] on the raw bytes of `dims.product()` elements of `width`.
fn run_bytes(
    client: &Client,
    bytes: &[u8],
    width: StorageWidth,
    dims: &[usize],
    fill: Option<i64>,
    plan: CompactionPlan,
) -> (i32, Vec<i32>) {
    run_raw(
        client,
        bytes,
        width,
        NonZeroPredicate::AnyBit,
        dims,
        fill,
        plan,
    )
}

/// [`run_bytes`] with a predicate, on a buffer that may hold more bytes than the
/// `dims.product()` elements it is launched on (bytes the launch must not count).
fn run_raw(
    client: &Client,
    bytes: &[u8],
    width: StorageWidth,
    predicate: NonZeroPredicate,
    dims: &[usize],
    fill: Option<i64>,
    plan: CompactionPlan,
) -> (i32, Vec<i32>) {
    let len: usize = dims.iter().product();
    let input = client.create_from_slice(bytes);
    let count = client.create_from_slice(i32::as_bytes(&[-7]));
    let coordinates =
        client.create_from_slice(i32::as_bytes(&vec![-7i32; (len * dims.len()).max(1)]));
    launch_nonzero_coordinates(
        client,
        &CompactionInput {
            handle: input,
            width,
            predicate,
            dims,
        },
        &CompactionOutput {
            count: count.clone(),
            coordinates: coordinates.clone(),
            elem: ElemType::Int(IntKind::I32),
            fill,
        },
        plan,
    )
    .expect("a valid launch");
    let count = i32::from_bytes(&client.read_one(count).expect("read count"))[0];
    let coordinates = i32::from_bytes(&client.read_one(coordinates).expect("read rows")).to_vec();
    (count, coordinates[..len * dims.len()].to_vec())
}

/// `len` values, about `percent`% of them non-zero, from a seeded xorshift.
fn values(len: usize, percent: u32, seed: u64) -> Vec<u32> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            if (state % 100) < u64::from(percent) {
                (state >> 40) as u32 | 1
            } else {
                0
            }
        })
        .collect()
}

/// Checks one launch against the oracle: every row when `fill` is given, the first `count`
/// rows otherwise (the others must keep the -7 they started with).
fn check(client: &Client, values: &[u32], dims: &[usize], fill: Option<i64>, plan: CompactionPlan) {
    let (count, rows) = run(client, values, dims, fill, plan);
    let (expected_count, expected) = oracle(values, dims, fill.unwrap_or(-7) as i32);
    let what = format!("{plan:?}, dims {dims:?}, fill {fill:?}");
    assert_eq!(count, expected_count, "count: {what}");
    assert_eq!(rows, expected, "rows: {what}");
}

/// Whether the plane scan can run here: the runtime reports plane operations (GPUs), or the
/// adapter is on Vulkan, where lavapipe has subgroups that cubecl-wgpu does not report on CPU
/// adapters. wgpu on OpenGL has none: there the plane cases are left out, with a line on stderr
/// (past the harness's capture) that says so.
fn planes_run(client: &Client) -> bool {
    use cubecl::ir::features::Plane;
    let runs = client.properties().features.plane.contains(Plane::Ops)
        || cubecl::Device::vulkan(Default::default()).is_ok();
    if !runs {
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "left out: the plane scan (no plane operations, and no Vulkan adapter to force them on)"
        );
    }
    runs
}

/// The plans under test: both scans at the crate's geometries (the plane scan where it runs, see
/// [`planes_run`]; without planes, also the long runs of large inputs), and small cubes where a
/// unit's run, a tile and a partial plane are all a few elements long.
fn plans() -> Vec<CompactionPlan> {
    let mut plans = Vec::new();
    let scans = if client().is_some_and(|client| planes_run(&client)) {
        vec![CubeScan::Shared, CubeScan::Planes]
    } else {
        vec![CubeScan::Shared]
    };
    for scan in scans {
        plans.push(CompactionPlan::new(scan));
        if scan == CubeScan::Shared {
            // The longer runs `CompactionPlan::for_len` takes for large inputs without planes.
            plans.push(CompactionPlan {
                per_unit: 32,
                ..CompactionPlan::new(scan)
            });
        }
        for (cube_size, per_unit) in [(36, 3), (1, 1), (7, 5), (64, 1)] {
            plans.push(CompactionPlan {
                scan,
                cube_size,
                per_unit,
            });
        }
    }
    plans
}

/// The tile scan alone, on tile counts that no small input produces: at the crate's 256-unit
/// cubes and at 36 (a partial plane), with tile counts around the plane scan's pass of 8 per
/// unit (one pass, exactly full, one tile over, several passes with a partial last one), each
/// count as large as a tile of 2^14 elements allows. Offsets, the total and `count` must match
/// a prefix sum on the host.
#[test]
fn the_tile_scan_carries_across_passes() {
    let Some(client) = client() else { return };
    let mut scans = vec![false];
    if planes_run(&client) {
        scans.push(true);
    }
    for planes in scans {
        for cube_size in [256usize, 36] {
            let span = cube_size * 8;
            for tiles in [1, span - 1, span, span + 1, 3 * span + 17] {
                let counts: Vec<u32> = values(tiles, 100, tiles as u64)
                    .iter()
                    .map(|v| v % (1 << 14))
                    .collect();
                let mut expected = Vec::with_capacity(tiles + 1);
                let mut running = 0u32;
                for &c in &counts {
                    expected.push(running);
                    running += c;
                }
                expected.push(running);
                let tile_counts = client.create_from_slice(u32::as_bytes(&counts));
                let tile_offsets = client.create_from_slice(u32::as_bytes(&vec![7u32; tiles + 1]));
                let count = client.create_from_slice(i32::as_bytes(&[-7]));
                // SAFETY: the kernel reads `tiles` counts and writes `tiles + 1` offsets and one
                // count, the lengths of the buffers.
                unsafe {
                    burn_dml_ops_kernels::nonzero::nonzero_scan_tiles::launch_unchecked(
                        &client,
                        CubeCount::Static(1, 1, 1),
                        CubeDim::new_1d(cube_size as u32),
                        AddressType::U32,
                        BufferArg::from_raw_parts(tile_counts, tiles),
                        BufferArg::from_raw_parts(tile_offsets.clone(), tiles + 1),
                        BufferArg::from_raw_parts(count.clone(), 1),
                        tiles,
                        tiles.div_ceil(cube_size),
                        cube_size,
                        planes,
                        ElemType::Int(IntKind::I32),
                    );
                }
                let offsets = u32::from_bytes(&client.read_one(tile_offsets).unwrap()).to_vec();
                let total = i32::from_bytes(&client.read_one(count).unwrap())[0];
                let case = format!("planes {planes}, cube {cube_size}, {tiles} tiles");
                assert_eq!(offsets, expected, "offsets: {case}");
                assert_eq!(total as u32, running, "count: {case}");
            }
        }
    }
}

#[test]
fn a_cube_of_36_leaves_a_partial_plane() {
    let Some(client) = client() else { return };
    if !planes_run(&client) {
        return;
    }
    let sizes = plane_sizes(&client, 36);
    let full = *sizes.iter().max().unwrap();
    assert!(
        full > 1,
        "planes of {full} unit(s) would test nothing: {sizes:?}"
    );
    assert!(
        sizes.iter().any(|&units| units < full),
        "no partial plane in a cube of 36 units: {sizes:?}"
    );
}

#[test]
fn every_plan_matches_the_host() {
    let Some(client) = client() else { return };
    for plan in plans() {
        let tile = plan.tile_vectors();
        // Around a unit's run, a tile (of 1 and 4 lanes) and a mask word, and odd tails.
        let mut lens = vec![0, 1, 3, 5, 31, 32, 33, 100];
        for vectors in [tile, 2 * tile + 1, 3 * tile - 1] {
            lens.extend([vectors, vectors * 4, vectors * 4 + 4, vectors * 4 + 1]);
        }
        for len in lens {
            for percent in [0, 1, 50, 100] {
                let values = values(len, percent, len as u64 + u64::from(percent));
                check(&client, &values, &[len], None, plan);
                check(&client, &values, &[len], Some(-1), plan);
            }
        }
    }
}

/// Sparse and dense tiles in one launch: the plane write picks its step per tile from the
/// tile's count (for f32, one vector per unit and step above a quarter set, two at or below,
/// eight at or below a sixteenth), so blocks of a tile's size at 100%, 1%, exactly 25%, 26%,
/// 0%, 60%, exactly 1/16 and 7% put tiles of every kind, and tiles right at the thresholds,
/// next to each other; their rows must still follow each other.
/// A block is a tile for inputs read in vectors of 4 lanes and straddles tiles otherwise, which
/// mixes the densities within tiles too.
#[test]
fn sparse_and_dense_tiles_side_by_side() {
    let Some(client) = client() else { return };
    for plan in plans() {
        let block = plan.tile_vectors() * 4;
        let mut input = Vec::new();
        let fractions = [
            (1, 1),
            (1, 100),
            (1, 4),
            (26, 100),
            (0, 1),
            (60, 100),
            (1, 16),
            (7, 100),
        ];
        for (b, (part, whole)) in fractions.into_iter().enumerate() {
            // Exactly `part / whole` of the block set, spread evenly.
            let set = block * part / whole;
            input.extend((0..block).map(|i| u32::from(i * set / block != (i + 1) * set / block)));
            assert_eq!(
                input[b * block..].iter().filter(|&&v| v != 0).count(),
                set,
                "block {b}"
            );
        }
        input.extend(values(38, 50, 3));
        check(&client, &input, &[input.len()], None, plan);
        check(&client, &input, &[2, input.len() / 2], Some(-1), plan);
    }
}

/// The launcher's stages run one at a time, and the last one again on its own (as the benchmark
/// times it), give the launcher's result.
#[test]
fn stages_one_at_a_time_match_the_launcher() {
    let Some(client) = client() else { return };
    let values = values(5000, 30, 11);
    let dims = [50, 100];
    let (expected_count, expected) = oracle(&values, &dims, -1);
    for plan in plans() {
        let count = client.create_from_slice(i32::as_bytes(&[-7]));
        let coordinates = client.create_from_slice(i32::as_bytes(&[-7i32; 10_000]));
        let stages = CompactionStages::new(
            &client,
            &CompactionInput {
                handle: client.create_from_slice(u32::as_bytes(&values)),
                width: StorageWidth::W32,
                predicate: NonZeroPredicate::AnyBit,
                dims: &dims,
            },
            &CompactionOutput {
                count: count.clone(),
                coordinates: coordinates.clone(),
                elem: ElemType::Int(IntKind::I32),
                fill: Some(-1),
            },
            plan,
        )
        .expect("a valid plan");
        stages.count();
        stages.offsets();
        stages.rows();
        stages.rows();
        let count = i32::from_bytes(&client.read_one(count).unwrap())[0];
        let rows = i32::from_bytes(&client.read_one(coordinates).unwrap()).to_vec();
        assert_eq!(
            (count, rows),
            (expected_count, expected.clone()),
            "{plan:?}"
        );
    }
}

#[test]
fn wide_coordinates_carry_across_every_axis() {
    let Some(client) = client() else { return };
    let shapes: [&[usize]; 5] = [
        &[3, 5, 7],
        &[1, 64, 1, 257],
        &[2, 3, 1, 4, 1, 3, 2, 1],
        &[5, 1, 7, 3, 1, 2, 4, 9],
        &[4097, 2],
    ];
    for plan in plans() {
        for dims in shapes {
            let len = dims.iter().product();
            for percent in [1, 50, 100] {
                let values = values(len, percent, len as u64);
                check(&client, &values, dims, Some(i64::from(i32::MIN)), plan);
            }
        }
    }
}

/// Whether the launcher reads elements of `width` as 32-bit words on `client`.
fn reads_words(client: &Client, width: StorageWidth) -> bool {
    let stages = CompactionStages::new(
        client,
        &CompactionInput {
            handle: client.create_from_slice(&[0u8; 16]),
            width,
            predicate: NonZeroPredicate::AnyBit,
            dims: &[16 / width.bytes()],
        },
        &CompactionOutput {
            count: client.create_from_slice(i32::as_bytes(&[0])),
            coordinates: client.create_from_slice(i32::as_bytes(&[0; 16])),
            elem: ElemType::Int(IntKind::I32),
            fill: None,
        },
        CompactionPlan::for_client(client),
    )
    .expect("a valid launch");
    stages.reads_words()
}

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

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Random shapes of rank 1 to 8 (up to about 20,000 elements), densities, plans and fill.
    #[test]
    fn random_shapes_match_the_host(
        dims in prop::collection::vec(1usize..12, 1..=8)
            .prop_filter("at most 20,000 elements", |d| d.iter().product::<usize>() <= 20_000),
        percent in prop::sample::select(vec![0u32, 1, 10, 50, 90, 100]),
        plan in prop::sample::select(plans()),
        fill in prop::option::of(-3i64..3),
        seed in any::<u64>(),
    ) {
        let len = dims.iter().product();
        let Some(client) = client() else { return Ok(()) };
        check(&client, &values(len, percent, seed), &dims, fill, plan);
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
