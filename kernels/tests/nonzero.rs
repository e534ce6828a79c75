//! `launch_nonzero_coordinates` on wgpu against a host computation, through each
//! [`CompactionPlan`]: both scans (plane operations are forced on lavapipe, which has subgroups
//! although cubecl-wgpu reports none on CPU adapters), cube sizes that leave a partial plane,
//! tiles of one vector, vector tails, coordinate widths from 1 to 8 and fill values.

mod common;

use burn_dml_ops_kernels::StorageWidth;
use burn_dml_ops_kernels::nonzero::{
    CompactionInput, CompactionOutput, CompactionPlan, CompactionStages, CubeScan, NonZeroPredicate,
};
use common::client;
use common::nonzero::*;
use cubecl::ir::{ElemType, IntKind};
use cubecl::prelude::*;
use proptest::prelude::*;

/// The tile scan alone, on tile counts that no small input produces: at the crate's 256-unit
/// cubes and at 38 (a partial plane: no multiple of planes of 4 to 32), with tile counts around
/// the plane scan's pass of 8 per unit (one pass, exactly full, one tile over, several passes
/// with a partial last one), each count as large as a tile of 2^14 elements allows. Offsets,
/// the total and `count` must match a prefix sum on the host.
#[test]
fn the_tile_scan_carries_across_passes() {
    let Some(client) = client() else { return };
    let mut scans = vec![false];
    if planes_run(&client) {
        scans.push(true);
    }
    for planes in scans {
        for cube_size in [256usize, 38] {
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
fn a_cube_of_38_leaves_a_partial_plane() {
    let Some(client) = client() else { return };
    if !planes_run(&client) {
        // No planes at all (OpenGL): the crate must never pick the plane scan here.
        assert_eq!(CompactionPlan::for_client(&client).scan, CubeScan::Shared);
        assert_eq!(
            CompactionPlan::for_len(&client, 1 << 24).scan,
            CubeScan::Shared
        );
        return;
    }
    let sizes = plane_sizes(&client, 38);
    let full = *sizes.iter().max().unwrap();
    assert!(
        full > 1,
        "planes of {full} unit(s) would test nothing: {sizes:?}"
    );
    assert!(
        sizes.iter().any(|&units| units < full),
        "no partial plane in a cube of 38 units: {sizes:?}"
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
