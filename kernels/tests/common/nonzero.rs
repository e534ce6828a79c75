//! NonZeroCoordinates helpers shared by the kernel crate's NonZero tests: a host oracle, one
//! launch on host values, and the plans under test.

use burn_dml_ops_kernels::StorageWidth;
use burn_dml_ops_kernels::nonzero::{
    CompactionInput, CompactionOutput, CompactionPlan, CompactionStages, CubeScan,
    NonZeroPredicate, launch_nonzero_coordinates,
};
use cubecl::ir::{ElemType, IntKind};
use cubecl::prelude::*;

use super::client;

/// For each unit of a cube of `cube_size`, the number of active units in its plane.
#[cube(launch)]
pub fn plane_units(output: &mut [u32]) {
    output[UNIT_POS as usize] = plane_sum(1u32);
}

pub fn plane_sizes(client: &Client, cube_size: usize) -> Vec<u32> {
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
pub fn oracle(values: &[u32], dims: &[usize], fill: i32) -> (i32, Vec<i32>) {
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
pub fn run(
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
pub fn run_bytes(
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
pub fn run_raw(
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
pub fn values(len: usize, percent: u32, seed: u64) -> Vec<u32> {
    let mut random = super::xorshift(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    (0..len)
        .map(|_| {
            let state = random();
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
pub fn check(
    client: &Client,
    values: &[u32],
    dims: &[usize],
    fill: Option<i64>,
    plan: CompactionPlan,
) {
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
pub fn planes_run(client: &Client) -> bool {
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
pub fn plans() -> Vec<CompactionPlan> {
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

/// Whether the launcher reads elements of `width` as 32-bit words on `client`.
pub fn reads_words(client: &Client, width: StorageWidth) -> bool {
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
