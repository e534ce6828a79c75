//! The launchers of every operator at every configuration a device may make them pick, for the
//! compile tests (CUDA C++ and browsers' WGSL): each runs under a capture, which builds the
//! kernels the launchers would launch instead of launching them.

use burn_dml_ops_kernels::bit_count::{BitCountPath, launch_bit_count};
use burn_dml_ops_kernels::compress::{
    CompressInput, CompressOutput, CompressShape, launch_compress,
};
use burn_dml_ops_kernels::copy::{launch_contiguous_words, launch_copy};
use burn_dml_ops_kernels::nms::{
    NmsBoxFormat, NmsInput, NmsLimits, NmsOutput, NmsShape, launch_non_max_suppression,
};
use burn_dml_ops_kernels::nonzero::{
    CompactionInput, CompactionOutput, CompactionPlan, NonZeroPredicate, launch_nonzero_coordinates,
};
use burn_dml_ops_kernels::sample::{SampleInput, SampleOutput, launch_sample};
use burn_dml_ops_kernels::scatter_nd::{
    OutOfRange, ReduceOp, ScatterNdData, ScatterNdIndices, ScatterNdLayout, ScatterReduction,
    ScatterStrategy, launch_gather_nd, launch_scatter_nd,
};
use burn_dml_ops_kernels::sort::{
    CUBE_SORT_MAX, SortInput, SortOrder, SortOutput, SortPlan, SortShape, launch_top_k,
};
use burn_dml_ops_kernels::tuples::launch_index_tuples;
use burn_dml_ops_kernels::{InputView, StorageWidth};
use cubecl::ir::settings::Dim3;
use cubecl::ir::{ElemType, FloatKind, HardwareProperties, IntKind, UIntKind};
use cubecl::prelude::*;

use crate::common::{INTEGERS, WIDTHS};

/// Panics unless a cube of `cube_dim`, in a kernel `name` built for a device of `hardware`,
/// fits that device: at most its units per cube and its size along each dimension.
pub fn assert_cube_fits(name: &str, cube_dim: Dim3, hardware: &HardwareProperties) {
    let (x, y, z) = hardware.max_cube_dim;
    assert!(
        cube_dim.num_elems() <= hardware.max_units_per_cube
            && cube_dim.x <= x
            && cube_dim.y <= y
            && cube_dim.z <= z,
        "{name}: a cube of {cube_dim:?} on a device of at most {} units, {:?}",
        hardware.max_units_per_cube,
        hardware.max_cube_dim
    );
}

/// Panics unless a launch of `cube_count` cubes of kernel `name` fits a device of `hardware`:
/// at most its cubes along each dimension.
pub fn assert_count_fits(name: &str, cube_count: &CubeCount, hardware: &HardwareProperties) {
    if let CubeCount::Static(x, y, z) = cube_count {
        let (mx, my, mz) = hardware.max_cube_count;
        assert!(
            *x <= mx && *y <= my && *z <= mz,
            "{name}: {:?} cubes on a device of at most {:?}",
            (x, y, z),
            hardware.max_cube_count
        );
    }
}

/// Every `#[cube(launch_unchecked)]` kernel function of the crate.
pub const KERNELS: [&str; 50] = [
    "bit_count_kernel",
    "bit_count_words_kernel",
    "compress_gather_packed",
    "compress_gather_slices",
    "contiguous_words_kernel",
    "copy_kernel",
    "copy_tail_word_kernel",
    "index_tuples",
    "nms_sweep",
    "nms_write_rows",
    "nonzero_fill_padding",
    "nonzero_output_words",
    "nonzero_scan_tiles",
    "nonzero_tile_counts",
    "nonzero_write_coordinates",
    "sample_rows",
    "scatter_nd_assign",
    "scatter_nd_assign_latest",
    "scatter_nd_atomic",
    "scatter_nd_clear",
    "scatter_nd_gather",
    "scatter_nd_gather_packed",
    "scatter_nd_link_rows",
    "scatter_nd_ordered_f64",
    "scatter_nd_ordered_product",
    "scatter_nd_resolve_indices",
    "scatter_nd_row_targets",
    "scatter_nd_sorted_join",
    "scatter_nd_sorted_join_words",
    "scatter_nd_sorted_nodes",
    "scatter_nd_sorted_nodes_words",
    "scatter_nd_sorted_product_join",
    "scatter_nd_sorted_product_nodes",
    "scatter_nd_sorted_sum_join",
    "scatter_nd_sorted_sum_nodes",
    "select_count_ties",
    "select_gather",
    "select_histogram",
    "select_pick_digit",
    "select_rows",
    "select_start",
    "sort_count_digits",
    "sort_gather_values",
    "sort_keys",
    "sort_keys_counted",
    "sort_scan_digits",
    "sort_scatter_digits",
    "sort_scatter_last_digits",
    "sort_segments_in_cube",
    "sort_write_indices",
];

/// Every element type the operators take (each launcher refuses those its device lacks).
pub fn every_elem() -> Vec<ElemType> {
    let mut elems = INTEGERS.to_vec();
    elems.extend([
        ElemType::Float(FloatKind::F16),
        ElemType::Float(FloatKind::BF16),
        ElemType::Float(FloatKind::F32),
        ElemType::Float(FloatKind::F64),
        ElemType::Bool,
    ]);
    elems
}

pub fn index_elems() -> [ElemType; 4] {
    [
        ElemType::Int(IntKind::I32),
        ElemType::Int(IntKind::I64),
        ElemType::UInt(UIntKind::U8),
        ElemType::Int(IntKind::I16),
    ]
}

/// The integer outputs NonZero and BitCount are built for: the default, the widest, a narrow.
pub const OUTPUT_INTS: [ElemType; 3] = [
    ElemType::Int(IntKind::I32),
    ElemType::Int(IntKind::I64),
    ElemType::UInt(UIntKind::U8),
];

pub fn launch_every_nonzero(client: &Client) {
    // The plan the launchers pick on an NVIDIA GPU.
    let plan = CompactionPlan::for_client(client);
    for width in WIDTHS {
        for predicate in [NonZeroPredicate::AnyBit, NonZeroPredicate::AnyBitButSign] {
            for (dims, rank_width) in [(vec![5000usize], 1usize), (vec![3, 50, 40], 3)] {
                for out_elem in OUTPUT_INTS {
                    for fill in [None, Some(-1)] {
                        let len: usize = dims.iter().product();
                        let input = CompactionInput {
                            handle: client.empty(len * width.bytes() + 16),
                            width,
                            predicate,
                            dims: &dims,
                        };
                        let output = CompactionOutput {
                            count: client.empty(8),
                            coordinates: client.empty(len * rank_width * out_elem.size() + 16),
                            elem: out_elem,
                            fill,
                        };
                        let _ = launch_nonzero_coordinates(client, &input, &output, plan);
                    }
                }
            }
        }
    }
}

pub fn launch_every_compress(client: &Client) {
    let counts = [ElemType::Int(IntKind::I64), ElemType::Int(IntKind::I32)];
    for elem in every_elem() {
        for (outer, axis_len, inner) in [(1usize, 5000usize, 1usize), (3, 40, 7), (2, 30, 64)] {
            for condition_width in [StorageWidth::W8, StorageWidth::W32] {
                for count_elem in counts {
                    let len = outer * axis_len * inner;
                    let input = CompressInput {
                        values: client.empty(len * elem.size() + 16),
                        elem,
                        condition: client.empty(axis_len * condition_width.bytes() + 16),
                        condition_width,
                    };
                    let output = CompressOutput {
                        count: client.empty(8),
                        count_elem,
                        values: client.empty(len * elem.size() + 16),
                    };
                    let shape = CompressShape {
                        outer,
                        axis_len,
                        inner,
                        slices: axis_len,
                    };
                    let plan = CompactionPlan::for_client(client);
                    let _ = launch_compress(client, &input, &output, shape, plan);
                }
            }
        }
    }
}

/// A ScatterND case: data `[64, 16]` indexed by whole rows (`k = 1`, slices of 16) or by
/// element (`k = 2`, slices of 1), `rows` index tuples of `index_elem`.
fn scatter_case(
    client: &Client,
    elem: ElemType,
    index_elem: ElemType,
    rows: usize,
    by_element: bool,
    out_of_range: OutOfRange,
) -> (ScatterNdData, ScatterNdIndices, usize) {
    let (k, slice) = if by_element { (2, 1) } else { (1, 16) };
    let data = ScatterNdData {
        output: client.empty(64 * 16 * elem.size() + 16),
        updates: client.empty(rows * slice * elem.size() + 16),
        elem,
    };
    let indices = ScatterNdIndices {
        handle: client.empty(rows * k * index_elem.size() + 16),
        elem: index_elem,
        out_of_range,
    };
    (data, indices, slice)
}

pub fn launch_every_scatter(client: &Client) {
    let reductions = [
        ScatterReduction::Assign,
        ScatterReduction::Reduce(ReduceOp::Add),
        ScatterReduction::Reduce(ReduceOp::Mul),
        ScatterReduction::Reduce(ReduceOp::Min),
        ScatterReduction::Reduce(ReduceOp::Max),
    ];
    let strategies = [
        ScatterStrategy::Store,
        ScatterStrategy::Atomic,
        ScatterStrategy::Sorted,
        ScatterStrategy::Deterministic,
    ];
    let index_i32 = ElemType::Int(IntKind::I32);
    for elem in every_elem() {
        for by_element in [false, true] {
            let dims: &[usize] = if by_element { &[64, 16] } else { &[64] };
            // Few rows, and enough for the sorted rows to cut segments.
            for rows in [5usize, 300, 5000] {
                let (data, indices, slice) =
                    scatter_case(client, elem, index_i32, rows, by_element, OutOfRange::Skip);
                let layout = ScatterNdLayout { dims, rows, slice };
                for reduction in reductions {
                    for strategy in strategies {
                        let _ =
                            launch_scatter_nd(client, &data, &indices, layout, reduction, strategy);
                    }
                }
                let gathered = client.empty(rows * slice * elem.size() + 16);
                let _ = launch_gather_nd(client, data.output, gathered, elem, &indices, layout);
            }
        }
    }
    // Every index type and out-of-range policy.
    for index_elem in index_elems() {
        for out_of_range in [OutOfRange::Skip, OutOfRange::Clamp] {
            let elem = ElemType::Float(FloatKind::F32);
            let (data, indices, slice) =
                scatter_case(client, elem, index_elem, 10, false, out_of_range);
            let layout = ScatterNdLayout {
                dims: &[64],
                rows: 10,
                slice,
            };
            let reduction = ScatterReduction::Reduce(ReduceOp::Add);
            let _ = launch_scatter_nd(
                client,
                &data,
                &indices,
                layout,
                reduction,
                ScatterStrategy::Atomic,
            );
            let _ = launch_gather_nd(client, data.output, data.updates, elem, &indices, layout);
        }
    }
}

pub fn launch_every_bit_count(client: &Client) {
    for width in WIDTHS {
        for output_elem in OUTPUT_INTS {
            let len = 5000;
            let contiguous =
                InputView::contiguous(client.empty(len * width.bytes() + 16), width, len);
            let transposed = InputView {
                handle: client.empty(len * width.bytes() + 16),
                width,
                shape: vec![50, 100],
                strides: vec![1, 50],
            };
            for input in [contiguous, transposed] {
                let gpu = BitCountPath::for_input(client, &input, output_elem);
                for path in [gpu, BitCountPath::Words { groups_per_unit: 8 }] {
                    let output = client.empty(len * output_elem.size() + 16);
                    let _ = launch_bit_count(client, &input, output, output_elem, path);
                }
            }
        }
    }
}

pub fn launch_every_copy(client: &Client) {
    for elem in every_elem() {
        for len in [4096usize, 4099] {
            let _ = launch_copy(
                client,
                client.empty(len * elem.size() + 16),
                client.empty(len * elem.size() + 16),
                elem,
                len,
            );
        }
    }
    for width in WIDTHS {
        let input = InputView {
            handle: client.empty(5000 * width.bytes() + 16),
            width,
            shape: vec![50, 100],
            strides: vec![1, 50],
        };
        let _ = launch_contiguous_words(client, &input, client.empty(5000 * width.bytes() + 16));
    }
}

pub fn launch_every_sort(client: &Client) {
    let elems = every_elem()
        .into_iter()
        .filter(|elem| *elem != ElemType::Bool);
    for elem in elems {
        for indices_elem in OUTPUT_INTS {
            let gpu = SortPlan::for_client(client);
            // The one-cube sort at a short axis and at its longest, and the radix passes, each
            // with plane scans (what a GPU runs) and with shared-memory ones; the radix select
            // of a long axis, one cube per row and over tiles, its candidates sorted by one cube
            // and by the radix passes.
            let shared = SortPlan {
                planes: false,
                ..gpu
            };
            let passes = SortPlan {
                cube_len: 0,
                select_k: 0,
                ..gpu
            };
            let select_then_passes = SortPlan { cube_len: 0, ..gpu };
            let tiled_select = SortPlan {
                row_select_len: 0,
                ..gpu
            };
            let configurations = [
                (SortOrder::Ascending, gpu, 200),
                (SortOrder::Descending, gpu, CUBE_SORT_MAX),
                (SortOrder::Descending, passes, 200),
                (
                    SortOrder::Ascending,
                    SortPlan {
                        planes: false,
                        ..passes
                    },
                    200,
                ),
                (SortOrder::Descending, shared, 200),
                (SortOrder::Descending, gpu, CUBE_SORT_MAX + 1),
                (SortOrder::Ascending, shared, CUBE_SORT_MAX + 1),
                (SortOrder::Descending, tiled_select, CUBE_SORT_MAX + 1),
                (
                    SortOrder::Ascending,
                    SortPlan {
                        planes: false,
                        ..tiled_select
                    },
                    CUBE_SORT_MAX + 1,
                ),
                (SortOrder::Ascending, select_then_passes, 200),
                (
                    SortOrder::Descending,
                    SortPlan {
                        planes: false,
                        ..select_then_passes
                    },
                    200,
                ),
            ];
            for (order, plan, axis_len) in configurations {
                let shape = SortShape {
                    outer: 3,
                    axis_len,
                    inner: 5,
                    k: 7,
                };
                let len = 3 * axis_len * 5;
                let _ = launch_top_k(
                    client,
                    &SortInput {
                        values: client.empty(len * elem.size() + 16),
                        elem,
                    },
                    &SortOutput {
                        values: client.empty(len * elem.size() + 16),
                        indices: client.empty(len * indices_elem.size() + 16),
                        indices_elem,
                    },
                    shape,
                    order,
                    plan,
                );
            }
        }
    }
}

pub fn launch_every_nms(client: &Client) {
    let shape = NmsShape {
        batches: 2,
        classes: 3,
        boxes: 300,
    };
    for elem in [
        ElemType::Int(IntKind::I8),
        ElemType::Int(IntKind::I16),
        ElemType::Int(IntKind::I32),
        ElemType::Int(IntKind::I64),
    ] {
        for format in [NmsBoxFormat::Corners, NmsBoxFormat::Center] {
            let _ = launch_non_max_suppression(
                client,
                &NmsInput {
                    boxes: client.empty(2 * 300 * 16),
                    scores: client.empty(2 * 3 * 300 * 4),
                },
                &NmsOutput {
                    count: client.empty(16),
                    selected: client.empty(2 * 3 * 300 * 3 * elem.size() + 16),
                    elem,
                },
                shape,
                &NmsLimits {
                    iou_threshold: 0.5,
                    score_threshold: Some(0.1),
                    max_per_class: 300,
                    format,
                },
                SortPlan::for_client(client),
            );
        }
    }
    // So many kept boxes per class that the sweep tests more than 8 of them per loop iteration.
    let n = 200_000;
    let elem = ElemType::Int(IntKind::I32);
    let _ = launch_non_max_suppression(
        client,
        &NmsInput {
            boxes: client.empty(n * 16),
            scores: client.empty(n * 4),
        },
        &NmsOutput {
            count: client.empty(16),
            selected: client.empty(n * 3 * elem.size() + 16),
            elem,
        },
        NmsShape {
            batches: 1,
            classes: 1,
            boxes: n,
        },
        &NmsLimits {
            iou_threshold: 0.5,
            score_threshold: None,
            max_per_class: n,
            format: NmsBoxFormat::Corners,
        },
        SortPlan::for_client(client),
    );
}

pub fn launch_every_sample(client: &Client) {
    let (rows, vocab) = (3, 1000);
    let _ = launch_sample(
        client,
        &SampleInput {
            logits: client.empty(rows * vocab * 4),
            temperature: client.empty(rows * 4),
            top_k: client.empty(rows * 4),
            top_p: client.empty(rows * 4),
            min_p: client.empty(rows * 4),
            seeds: client.empty(2 * rows * 4),
        },
        &SampleOutput {
            results: client.empty(2 * rows * 4),
            logprobs_at: rows,
        },
        rows,
        vocab,
        7,
    );
}

pub fn launch_every_tuples(client: &Client) {
    for elem in index_elems() {
        let len = 6 * 4 * 5;
        let _ = launch_index_tuples(
            client,
            client.empty(len * elem.size() + 16),
            client.empty(len * 4 * elem.size() + 16),
            elem,
            &[6, 4, 5],
            (3, 1, 1),
        );
    }
}

/// An operator: its name, what runs its launchers at every configuration, and the kernels it
/// must build on an sm_90 device.
pub type Operator = (&'static str, fn(&Client), &'static [&'static str]);

/// Every operator, with the kernels each builds on an sm_90 device.
pub const OPERATORS: [Operator; 9] = [
    (
        "nonzero",
        launch_every_nonzero,
        &[
            "nonzero_tile_counts",
            "nonzero_scan_tiles",
            "nonzero_write_coordinates",
            "nonzero_output_words",
        ],
    ),
    (
        "compress",
        launch_every_compress,
        &[
            "compress_gather_slices",
            "compress_gather_packed",
            "nonzero_write_coordinates",
        ],
    ),
    (
        "scatter_nd",
        launch_every_scatter,
        &[
            "scatter_nd_assign",
            "scatter_nd_assign_latest",
            "scatter_nd_atomic",
            "scatter_nd_gather",
            "scatter_nd_gather_packed",
            "scatter_nd_clear",
            "scatter_nd_link_rows",
            "scatter_nd_row_targets",
            "scatter_nd_ordered_product",
            "scatter_nd_ordered_f64",
            "scatter_nd_sorted_nodes",
            "scatter_nd_sorted_join",
            "scatter_nd_sorted_nodes_words",
            "scatter_nd_sorted_join_words",
            "scatter_nd_sorted_product_nodes",
            "scatter_nd_sorted_product_join",
            "scatter_nd_sorted_sum_nodes",
            "scatter_nd_sorted_sum_join",
            "scatter_nd_resolve_indices",
        ],
    ),
    (
        "bit_count",
        launch_every_bit_count,
        &["bit_count_kernel", "bit_count_words_kernel"],
    ),
    (
        "sort",
        launch_every_sort,
        &[
            "sort_keys",
            "sort_keys_counted",
            "sort_count_digits",
            "sort_scan_digits",
            "sort_scatter_digits",
            "sort_scatter_last_digits",
            "sort_segments_in_cube",
            "sort_gather_values",
            "sort_write_indices",
            "select_start",
            "select_histogram",
            "select_pick_digit",
            "select_count_ties",
            "select_gather",
            "select_rows",
        ],
    ),
    ("tuples", launch_every_tuples, &["index_tuples"]),
    ("sample", launch_every_sample, &["sample_rows"]),
    (
        "nms",
        launch_every_nms,
        &[
            "sort_keys",
            "nms_sweep",
            "nonzero_scan_tiles",
            "nms_write_rows",
        ],
    ),
    (
        "copy",
        launch_every_copy,
        &[
            "copy_kernel",
            "copy_tail_word_kernel",
            "contiguous_words_kernel",
        ],
    ),
];
