//! Host-side launch of a sort or top-k over raw CubeCL handles.

use cubecl::ir::{ElemType, FloatKind};
use cubecl::prelude::*;
use cubecl::server::Handle;

use super::keys::{KeyFormat, KeyKind};
use super::plan::{SortInput, SortOrder, SortOutput, SortPlan, SortShape};
use super::selector::RadixSelect;
use super::sorter::{RadixSort, cube_sort_run, write_outputs};
use crate::KernelError;
use crate::launch::{fits_integer, require_len, require_word_aligned};

/// Whether a top-`k` of `axis_len` keys of `key_words` words takes the radix select under
/// `plan`: a `k` it selects, of an axis one cube does not sort whole.
fn selects(plan: SortPlan, client: &Client, axis_len: usize, k: usize, key_words: usize) -> bool {
    k <= plan.select_k && cube_sort_run(client, plan, (1, axis_len), key_words, false).is_none()
}

/// The key format of `elem`, or an error for a type the sort does not order.
fn key_format(elem: ElemType) -> Result<KeyFormat, KernelError> {
    let unsupported = KernelError::UnsupportedType {
        elem,
        role: "sorted values",
    };
    let bits = 8 * elem.size() as u32;
    let (kind, infinity) = match elem {
        ElemType::Float(FloatKind::F16) => (KeyKind::Float, 0x7C00),
        ElemType::Float(FloatKind::BF16) => (KeyKind::Float, 0x7F80),
        ElemType::Float(FloatKind::F32 | FloatKind::Flex32) => (KeyKind::Float, 0x7F80_0000),
        ElemType::Float(FloatKind::F64) => (KeyKind::Float, 0x7FF0_0000),
        ElemType::Int(_) if matches!(bits, 8 | 16 | 32 | 64) => (KeyKind::Signed, 0),
        ElemType::UInt(_) if matches!(bits, 8 | 16 | 32 | 64) => (KeyKind::Unsigned, 0),
        _ => return Err(unsupported),
    };
    Ok(KeyFormat {
        kind,
        bits,
        infinity,
    })
}

/// Writes into `output` the first `shape.k` elements of each sequence along the axis of
/// `input` in `order`, and their positions along the axis. Elements that compare equal keep
/// increasing position in both orders, so the result is fully determined. Floats follow a total
/// order: `-0.0` equals `+0.0`, every NaN equals every other and ranks above `+inf`; values
/// come back bit for bit as stored.
///
/// A stable LSD radix sort of order-preserving keys (see the [module](super)), batched over
/// every sequence: one cube per sequence where it fits one cube's shared memory, four launches
/// per 4-bit digit otherwise, and for a small `k` of a long axis a radix select of the `k`
/// first, so only those are sorted. No launch waits on another workgroup, and nothing is read
/// back to the host. `plan` picks the cube scans and the paths ([`SortPlan::for_client`]
/// chooses for the runtime). Every buffer is read and written as 32-bit words, so every type
/// runs on every runtime.
///
/// # Errors
///
/// [`KernelError`] when `k` exceeds the axis, the input's type is not one the sort orders, the
/// indices' type is not an integer of 8 to 64 bits or cannot hold `axis_len - 1`, the input has
/// more than `u32::MAX` key words, or a handle is too small or misaligned. Nothing is launched
/// then.
pub fn launch_top_k(
    client: &Client,
    input: &SortInput,
    output: &SortOutput,
    shape: SortShape,
    order: SortOrder,
    plan: SortPlan,
) -> Result<(), KernelError> {
    let SortShape {
        outer,
        axis_len,
        inner,
        k,
    } = shape;
    if k > axis_len {
        return Err(KernelError::ShapeMismatch {
            detail: format!("k = {k} exceeds the axis's length {axis_len}"),
        });
    }
    let format = key_format(input.elem)?;
    let index_bits = 8 * output.indices_elem.size() as u32;
    if !matches!(output.indices_elem, ElemType::Int(_) | ElemType::UInt(_))
        || !matches!(index_bits, 8 | 16 | 32 | 64)
    {
        return Err(KernelError::NotAnInteger {
            elem: output.indices_elem,
        });
    }
    if !fits_integer(axis_len.saturating_sub(1) as i64, output.indices_elem) {
        return Err(KernelError::ValueOutOfRange {
            detail: format!(
                "positions up to {} do not fit the indices' type {}",
                axis_len - 1,
                output.indices_elem
            ),
        });
    }
    let too_large = || KernelError::TooLarge {
        detail: format!("{shape:?} has more key words than 32-bit offsets count"),
    };
    let len = outer
        .checked_mul(axis_len)
        .and_then(|n| n.checked_mul(inner))
        .filter(|&n| n.saturating_mul(format.words()) <= u32::MAX as usize)
        .ok_or_else(too_large)?;
    let out_len = outer * k * inner;
    require_word_aligned(&input.values, "input")?;
    require_word_aligned(&output.values, "values")?;
    require_word_aligned(&output.indices, "indices")?;
    require_len(&input.values, len, format.bits as usize / 8, "input")?;
    require_len(&output.values, out_len, format.bits as usize / 8, "values")?;
    require_len(&output.indices, out_len, index_bits as usize / 8, "indices")?;
    if out_len == 0 {
        return Ok(());
    }

    let shape3 = (len, axis_len, inner);
    let flip = flip_of(format, order);
    let (sort, sorted) = if selects(plan, client, axis_len, k, format.words()) {
        let sort =
            RadixSelect::new(client, &input.values, shape3, format, (flip, plan)).candidates(k);
        let sorted = sort.order();
        (sort, sorted)
    } else {
        RadixSort::run(
            client,
            &input.values,
            shape3,
            format,
            (flip, format.bits),
            plan,
        )
    };
    write_outputs(
        client,
        &input.values,
        shape3,
        (&sort.positions[sorted], sort.axis_len),
        output,
        k,
        (format.bits, index_bits),
    );
    Ok(())
}

/// What the keys are XORed with so that ascending key order is `order`.
fn flip_of(format: KeyFormat, order: SortOrder) -> u32 {
    match order {
        SortOrder::Ascending => 0,
        SortOrder::Descending => format.low_mask(),
    }
}

/// Each sequence's positions along the axis in sorted order, as `u32`, sequence by sequence
/// (`shape.k` is ignored): what the crate's own operators build on (non-maximum suppression
/// takes its score order from it, deterministic ScatterND its rows' order by target). The
/// input must be contiguous `elem`, one the sort orders, with `inner` of 1, and not empty; the
/// caller checks its size. Only the `low_bits` low bits of 32-bit or narrower keys are sorted:
/// a caller that knows every key's higher bits to be equal saves the passes over them.
pub(crate) fn sorted_positions(
    client: &Client,
    (keys, elem, low_bits): (&Handle, ElemType, u32),
    (outer, axis_len): (usize, usize),
    order: SortOrder,
    plan: SortPlan,
) -> Handle {
    let format = key_format(elem).expect("the caller's type has a key format");
    let (sort, sorted) = RadixSort::run(
        client,
        keys,
        (outer * axis_len, axis_len, 1),
        format,
        (flip_of(format, order), low_bits),
        plan,
    );
    sort.positions[sorted].clone()
}
