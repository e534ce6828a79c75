//! Host-side launch of a compress over raw CubeCL handles.

use crate::capture::launch_unchecked;
use cubecl::ir::{ElemType, UIntKind};
use cubecl::prelude::*;
use cubecl::server::Handle;

use super::gather::{SliceWalk, compress_gather_packed, compress_gather_slices};
use crate::launch::{
    RunGeometry, bits_elem, can_bind, elementwise_geometry, require_binding, require_len,
    require_word_aligned, vector_size_for, vectors_per_unit,
};
use crate::nonzero::{
    CompactionInput, CompactionOutput, CompactionPlan, CompactionStages, CubeScan,
    NonZeroPredicate, launch_nonzero_coordinates,
};
use crate::{KernelError, StorageWidth};

/// The shape of a compress, row-major: an input `[outer, axis_len, inner]`, a condition of
/// `slices` elements (at most `axis_len`) and an output `[outer, slices, inner]`. `x[mask]` is
/// `outer = inner = 1` with the mask as the condition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CompressShape {
    /// The product of the dimensions before the axis.
    pub outer: usize,
    /// The axis's size in the input.
    pub axis_len: usize,
    /// The product of the dimensions after the axis: the elements of one slice.
    pub inner: usize,
    /// The condition's length: the axis's size in the output.
    pub slices: usize,
}

/// The input of [`launch_compress`].
#[derive(Clone, Debug)]
pub struct CompressInput {
    /// The values: `outer * axis_len * inner` contiguous elements of `elem`.
    pub values: Handle,
    /// The values' element type; only its bits move, so any type of 8, 16, 32 or 64 bits does.
    pub elem: ElemType,
    /// The condition: `slices` contiguous elements of `condition_width`, true where any bit is
    /// set (bools, integers).
    pub condition: Handle,
    /// The width of a condition element.
    pub condition_width: StorageWidth,
}

/// Where [`launch_compress`] writes.
#[derive(Clone, Debug)]
pub struct CompressOutput {
    /// One `count_elem`: the number of slices selected.
    pub count: Handle,
    /// An integer type the runtime binds.
    pub count_elem: ElemType,
    /// `outer * slices * inner` elements of the input's `elem`.
    pub values: Handle,
}

/// How the last launch moves the values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Moves {
    /// Vectors of `vector` elements of `elem`, `inner_units` vectors to a slice: the values'
    /// own type where the runtime binds it, else the 32-bit words of slices that fill whole
    /// words.
    Vectors {
        elem: ElemType,
        vector: usize,
        inner_units: usize,
    },
    /// 8- or 16-bit elements the runtime cannot bind, whose slices do not fill whole words.
    Packed { element_bits: usize },
}

/// Writes into `output.values` the slices of `input.values` along the axis (see
/// [`CompressShape`]) whose condition element is true, in ascending order, then zeros; and
/// their number into `output.count[0]`. Nothing is read back to the host.
///
/// The condition goes through the NonZeroCoordinates compaction laid out by `plan`
/// ([`CompactionPlan::for_len`] of `slices` chooses for the runtime). For elements
/// (`outer == inner == 1`, a mask over the whole input) of a width the runtime binds, the
/// compaction's write stores the selected elements themselves and the zero padding: the values
/// are read once, where selected, and nothing else is written. Otherwise it lists the selected
/// slices in scratch, and one more launch writes every output slice, coalesced along the slice
/// with the widest vectors that divide it. Values of a type the runtime
/// [cannot bind](crate#types-the-runtime-cannot-bind) move as the 32-bit words that hold them,
/// which needs their handles to start on a 4-byte boundary.
///
/// # Errors
///
/// [`KernelError`] when the condition is longer than the axis, the sizes overflow or the
/// condition has more than `u32::MAX` elements, `count_elem` is not an integer type the runtime
/// binds, `elem` has no width of 8, 16, 32 or 64 bits, a handle is too small or misaligned, or
/// `plan` is out of range. Nothing is launched then.
pub fn launch_compress(
    client: &Client,
    input: &CompressInput,
    output: &CompressOutput,
    shape: CompressShape,
    plan: CompactionPlan,
) -> Result<(), KernelError> {
    let CompressShape {
        outer,
        axis_len,
        inner,
        slices,
    } = shape;
    if slices > axis_len {
        return Err(KernelError::ShapeMismatch {
            detail: format!(
                "the condition has {slices} elements but the axis only {axis_len} slices"
            ),
        });
    }
    let in_len = outer
        .checked_mul(axis_len)
        .and_then(|n| n.checked_mul(inner))
        .ok_or_else(|| KernelError::TooLarge {
            detail: format!("{shape:?} holds more elements than usize counts"),
        })?;
    if !matches!(output.count_elem, ElemType::Int(_) | ElemType::UInt(_)) {
        return Err(KernelError::NotAnInteger {
            elem: output.count_elem,
        });
    }
    require_binding(client, output.count_elem, "count")?;
    require_len(&output.count, 1, output.count_elem.size(), "count")?;
    let bits = bits_elem(client, input.elem)?;
    require_len(&input.values, in_len, bits.size(), "input")?;
    require_len(
        &output.values,
        outer * slices * inner,
        bits.size(),
        "output",
    )?;
    require_len(
        &input.condition,
        slices,
        input.condition_width.bytes(),
        "condition",
    )?;
    let condition = CompactionInput {
        handle: input.condition.clone(),
        width: input.condition_width,
        predicate: NonZeroPredicate::AnyBit,
        dims: &[slices],
    };
    // Elements (a mask over the whole input) of a width the runtime binds: the compaction's
    // write takes the selected elements straight from the input, so nothing goes through a
    // list.
    let unsigned = StorageWidth::from_bytes(bits.size()).map(StorageWidth::unsigned);
    match unsigned.filter(|&u| outer == 1 && inner == 1 && can_bind(client, u)) {
        Some(unsigned) => {
            let rows = CompactionOutput {
                count: output.count.clone(),
                coordinates: output.values.clone(),
                elem: unsigned,
                fill: Some(0),
            };
            let values = input.values.clone();
            CompactionStages::gathering(
                client,
                &condition,
                &rows,
                output.count_elem,
                values,
                plan,
            )?
            .run();
            Ok(())
        }
        None => compress_slices(client, input, output, shape, bits, &condition, plan),
    }
}

/// The slices path of [`launch_compress`], its arguments checked: the compaction lists the
/// selected slices, then one launch moves them.
fn compress_slices(
    client: &Client,
    input: &CompressInput,
    output: &CompressOutput,
    shape: CompressShape,
    bits: ElemType,
    condition: &CompactionInput<'_>,
    plan: CompactionPlan,
) -> Result<(), KernelError> {
    let CompressShape {
        outer,
        axis_len,
        inner,
        slices,
    } = shape;
    let bytes = bits.size();
    let moves = if can_bind(client, bits) {
        let mut vector = vector_size_for(client, &[bytes]);
        while vector > 1 && !inner.is_multiple_of(vector) {
            vector /= 2;
        }
        Moves::Vectors {
            elem: bits,
            vector,
            inner_units: inner / vector,
        }
    } else {
        require_word_aligned(&input.values, "input")?;
        require_word_aligned(&output.values, "output")?;
        if (inner * bytes).is_multiple_of(4) {
            Moves::Vectors {
                elem: ElemType::UInt(UIntKind::U32),
                vector: 1,
                inner_units: inner * bytes / 4,
            }
        } else {
            Moves::Packed {
                element_bits: 8 * bytes,
            }
        }
    };

    // The selected slices' indices and their number, as u32 scratch.
    let selected = client.empty(slices.max(1) * size_of::<u32>());
    let count = client.empty(size_of::<u32>());
    launch_nonzero_coordinates(
        client,
        condition,
        &CompactionOutput {
            count: count.clone(),
            coordinates: selected.clone(),
            elem: ElemType::UInt(UIntKind::U32),
            fill: None,
        },
        plan,
    )?;

    let (in_len, out_len) = (outer * axis_len * inner, outer * slices * inner);
    // Zero-sized bindings are not portable: an empty side binds a scratch word instead.
    let or_scratch = |handle: &Handle, len: usize| {
        if len == 0 {
            client.empty(16)
        } else {
            handle.clone()
        }
    };
    let source = or_scratch(&input.values, in_len);
    let target = or_scratch(&output.values, out_len);
    match moves {
        Moves::Vectors {
            elem,
            vector,
            inner_units,
        } => {
            let in_units = outer * axis_len * inner_units;
            let units = outer * slices * inner_units;
            // Consecutive vectors per unit without planes (CPU drivers), neighbouring units on
            // neighbouring vectors with them (GPUs); the plan says which, so that a plan forced
            // to planes tests the GPU layout on any runtime.
            let per_unit = vectors_per_unit(plan.scan == CubeScan::Planes);
            let run = RunGeometry::new(client, units, per_unit);
            // SAFETY: the kernel writes output vectors `p < units` (the output holds `out_len`
            // elements, `units` vectors of them, or words of them, checked above) and reads
            // the input vector of a listed slice `s < axis_len` of the same outer index, below
            // `in_units`; `selected` holds `slices` entries and unit 0 writes `count_out[0]`.
            unsafe {
                launch_unchecked!(compress_gather_slices(
                    client,
                    run.cubes,
                    run.dim,
                    AddressType::from_len(in_units.max(units).max(run.reach) * vector),
                    vector,
                    BufferArg::from_raw_parts(source, in_units.max(1)),
                    BufferArg::from_raw_parts(selected, slices.max(1)),
                    BufferArg::from_raw_parts(count, 1),
                    BufferArg::from_raw_parts(target, units.max(1)),
                    BufferArg::from_raw_parts(output.count.clone(), 1),
                    axis_len,
                    slices.max(1),
                    inner_units.max(1),
                    units,
                    SliceWalk::new(outer, inner_units),
                    per_unit,
                    elem,
                    output.count_elem,
                ));
            }
        }
        Moves::Packed { element_bits } => {
            let per_word = 32 / element_bits;
            let words = out_len.div_ceil(per_word);
            let in_words = in_len.div_ceil(per_word);
            let (cubes, dim) = elementwise_geometry(client, words.max(1));
            // SAFETY: unit `w < words` reads and writes output word `w` (the words that hold
            // `out_len` elements, which CubeCL binds whole) and reads the input words holding
            // listed elements below `in_len`.
            unsafe {
                launch_unchecked!(compress_gather_packed(
                    client,
                    cubes,
                    dim,
                    AddressType::from_len(in_len.max(out_len).max(1)),
                    BufferArg::from_raw_parts(source, in_words.max(1)),
                    BufferArg::from_raw_parts(selected, slices.max(1)),
                    BufferArg::from_raw_parts(count, 1),
                    BufferArg::from_raw_parts(target, words.max(1)),
                    BufferArg::from_raw_parts(output.count.clone(), 1),
                    axis_len,
                    slices.max(1),
                    inner.max(1),
                    in_len,
                    out_len,
                    words,
                    element_bits,
                    SliceWalk::new(outer, inner),
                    output.count_elem,
                ));
            }
        }
    }
    Ok(())
}
