//! Host-side launch of non-maximum suppression over raw CubeCL handles.

use cubecl::ir::{ElemType, FloatKind, UIntKind};
use cubecl::prelude::*;
use cubecl::server::Handle;

use super::plan::{MAX_KEPT, kept_per_step, sweep_launches, sweep_units};
use super::quotient::QuotientThreshold;
use super::rows::nms_write_rows;
use super::sweep::{KEPT_FLOATS, nms_sweep};
use crate::KernelError;
use crate::capture::launch_unchecked;
use crate::launch::{elementwise_geometry, fits_integer, require_len, require_word_aligned};
use crate::nonzero::nonzero_scan_tiles;
use crate::sort::{SortOrder, SortPlan, sorted_positions};

/// Units of the one-cube scan of the kept counts.
const SCAN_UNITS: usize = 128;

/// How a box's four numbers are laid out (ONNX's `center_point_box`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum NmsBoxFormat {
    /// `[y1, x1, y2, x2]`: two opposite corners, of either diagonal.
    #[default]
    Corners,
    /// `[x_center, y_center, width, height]`.
    Center,
}

/// The sizes: boxes `[batches, boxes, 4]`, scores `[batches, classes, boxes]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NmsShape {
    /// `B`.
    pub batches: usize,
    /// `C`.
    pub classes: usize,
    /// `N`.
    pub boxes: usize,
}

/// What decides which boxes are kept. All of it travels as launch arguments.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NmsLimits {
    /// A kept box suppresses a later one whose IoU with it is strictly greater.
    pub iou_threshold: f32,
    /// Only scores strictly greater take part (`None`: every score but NaN; a NaN threshold:
    /// none).
    pub score_threshold: Option<f32>,
    /// At most this many kept boxes per (batch, class).
    pub max_per_class: usize,
    /// The boxes' layout.
    pub format: NmsBoxFormat,
}

impl NmsShape {
    /// Rows of the result: `B * C * min(N, max_per_class)`.
    pub fn capacity(&self, max_per_class: usize) -> usize {
        self.batches * self.classes * self.boxes.min(max_per_class)
    }
}

/// The inputs: contiguous `f32` boxes `[B, N, 4]` and scores `[B, C, N]`.
#[derive(Clone, Debug)]
pub struct NmsInput {
    /// The boxes.
    pub boxes: Handle,
    /// The scores.
    pub scores: Handle,
}

/// Where [`launch_non_max_suppression`] writes, as 32-bit words (both handles must start on a
/// 4-byte boundary; bytes of the last word past the last element are overwritten).
#[derive(Clone, Debug)]
pub struct NmsOutput {
    /// One integer: how many rows of `selected` are real.
    pub count: Handle,
    /// `[capacity, 3]` integers: `(batch, class, box)` rows, then rows of -1.
    pub selected: Handle,
    /// The integer type of both: signed, of 8 to 64 bits, holding the capacity and every index.
    pub elem: ElemType,
}

/// The smallest score key that passes `threshold` (see `passes_score`).
fn min_score_key(threshold: Option<f32>) -> u32 {
    let key = |value: f32| {
        let bits = if value == 0.0 { 0 } else { value.to_bits() };
        if bits >> 31 == 1 {
            !bits
        } else {
            bits | 0x8000_0000
        }
    };
    match threshold {
        None => key(f32::NEG_INFINITY),
        Some(t) if t.is_nan() => u32::MAX,
        // Strictly greater: the next key. `+inf`'s next key is a NaN's, which never passes.
        Some(t) => key(t) + 1,
    }
}

/// ONNX NonMaxSuppression, batched over batches and classes: for each (batch, class), the
/// boxes whose score passes the threshold, in decreasing score (ties: lower box index first),
/// each kept unless a kept box of that (batch, class) has IoU strictly greater than the IoU
/// threshold with it, at most `max_per_class` of them. `selected` gets their `(batch, class,
/// box)` rows by batch, then class, then keeping order, then rows of -1 up to
/// [`NmsShape::capacity`]; `count` their number. Nothing is read back.
///
/// Four steps, none waiting on another workgroup: the crate's stable sort orders each
/// (batch, class)'s boxes by score, one cube per (batch, class) sweeps them (see the
/// [module](super)), the compaction's one-cube scan places each one's rows, and one launch
/// writes the rows as words of the output type.
///
/// # Errors
///
/// [`KernelError`] when the output type is not a signed integer of 8 to 64 bits or cannot hold
/// an index or the capacity, the input has more than `u32::MAX / 5` scores or may keep more
/// than 2,097,152 boxes per (batch, class), or a handle is too small or misaligned. Nothing is
/// launched then.
pub fn launch_non_max_suppression(
    client: &Client,
    input: &NmsInput,
    output: &NmsOutput,
    shape: NmsShape,
    limits: &NmsLimits,
    plan: SortPlan,
) -> Result<(), KernelError> {
    let NmsShape {
        batches,
        classes,
        boxes: n,
    } = shape;
    let bits = 8 * output.elem.size() as u32;
    if !matches!(output.elem, ElemType::Int(_)) || !matches!(bits, 8 | 16 | 32 | 64) {
        return Err(KernelError::NotAnInteger { elem: output.elem });
    }
    let too_large = || KernelError::TooLarge {
        detail: format!("{shape:?} has more scores than 32-bit offsets count"),
    };
    let segments = batches.checked_mul(classes).ok_or_else(too_large)?;
    let scores = segments
        .checked_mul(n)
        .filter(|&s| s <= u32::MAX as usize / KEPT_FLOATS)
        .ok_or_else(too_large)?;
    let cap = n.min(limits.max_per_class);
    if cap > MAX_KEPT {
        return Err(KernelError::TooLarge {
            detail: format!(
                "{shape:?} may keep {cap} boxes per (batch, class); at most {MAX_KEPT} are \
                 swept (set max_per_class)"
            ),
        });
    }
    let capacity = segments * cap;
    let largest = capacity.max(batches).max(classes).max(n);
    if !fits_integer(largest as i64, output.elem) {
        return Err(KernelError::ValueOutOfRange {
            detail: format!(
                "counts and indices up to {largest} do not fit {}",
                output.elem
            ),
        });
    }
    require_word_aligned(&output.count, "count")?;
    require_word_aligned(&output.selected, "selected")?;
    require_len(&input.boxes, batches * n * 4, 4, "boxes")?;
    require_len(&input.scores, scores, 4, "scores")?;
    require_len(&output.count, 1, bits as usize / 8, "count")?;
    require_len(
        &output.selected,
        capacity * 3,
        bits as usize / 8,
        "selected",
    )?;

    let words = |len: usize| client.empty(len.max(1) * size_of::<u32>());
    let kept_count = words(segments);
    let offsets = words(segments + 1);
    let total = words(1);
    let kept_index = words(capacity);
    if capacity > 0 {
        let order = sorted_positions(
            client,
            (&input.scores, ElemType::Float(FloatKind::F32), 32),
            (segments, n),
            SortOrder::Descending,
            plan,
        );
        let kept_boxes = client.empty(capacity * KEPT_FLOATS * size_of::<f32>());
        let stopped = words(segments);
        let units = sweep_units(client);
        let threshold = QuotientThreshold::new(limits.iou_threshold);
        let min_key = min_score_key(limits.score_threshold);
        let per_step = kept_per_step(cap);
        for (first_block, blocks) in sweep_launches(n, cap, units) {
            // SAFETY: cube `s < segments` reads order below `segments * n`, scores at `s * n`
            // plus a listed position (clamped below `n`), boxes below `batches * n * 4` (each
            // index clamped below `n`), and writes kept slots below `(s + 1) * cap` (a segment
            // stops at `cap`), `kept_count[s]` and `stopped[s]`.
            unsafe {
                launch_unchecked!(nms_sweep(
                    client,
                    crate::launch::cube_count(client, segments),
                    CubeDim::new_1d(units as u32),
                    AddressType::from_len(scores * KEPT_FLOATS + units),
                    BufferArg::from_raw_parts(input.boxes.clone(), batches * n * 4),
                    BufferArg::from_raw_parts(input.scores.clone(), scores),
                    BufferArg::from_raw_parts(order.clone(), scores),
                    BufferArg::from_raw_parts(kept_boxes.clone(), capacity * KEPT_FLOATS),
                    BufferArg::from_raw_parts(kept_index.clone(), capacity),
                    BufferArg::from_raw_parts(kept_count.clone(), segments),
                    BufferArg::from_raw_parts(stopped.clone(), segments),
                    segments,
                    classes,
                    n,
                    cap,
                    first_block,
                    blocks,
                    threshold.midpoint,
                    threshold.exponent,
                    threshold.rule,
                    min_key,
                    0u32,
                    limits.format == NmsBoxFormat::Center,
                    units,
                    per_step,
                ));
            }
        }
    }
    let counted = if capacity > 0 { segments } else { 0 };
    // SAFETY: one cube reads `counted` kept counts and writes `counted + 1` offsets and one
    // total, below the sizes they were made with.
    unsafe {
        launch_unchecked!(nonzero_scan_tiles(
            client,
            CubeCount::Static(1, 1, 1),
            CubeDim::new_1d(SCAN_UNITS as u32),
            AddressType::from_len(counted + 1 + SCAN_UNITS),
            BufferArg::from_raw_parts(kept_count, segments.max(1)),
            BufferArg::from_raw_parts(offsets.clone(), segments + 1),
            BufferArg::from_raw_parts(total, 1),
            counted,
            counted.div_ceil(SCAN_UNITS),
            SCAN_UNITS,
            plan.planes,
            ElemType::UInt(UIntKind::U32),
        ));
    }
    let out_len = capacity * 3;
    let out_words = (out_len * bits as usize).div_ceil(32);
    // An empty result still binds a buffer: a word of scratch that nothing writes.
    let selected = if out_words == 0 {
        words(1)
    } else {
        output.selected.clone()
    };
    let (cubes, dim) = elementwise_geometry(client, out_words.max(1));
    // SAFETY: unit `w < out_words` writes selected word `w` (the words of `out_len` elements,
    // which the handle holds); unit 0 writes the count's words; rows read offsets below
    // `counted + 1` and kept indices below `capacity` (slots clamped below `cap`).
    unsafe {
        launch_unchecked!(nms_write_rows(
            client,
            cubes,
            dim,
            AddressType::from_len(2 * out_words.max(capacity) + 2),
            BufferArg::from_raw_parts(offsets, segments + 1),
            BufferArg::from_raw_parts(kept_index, capacity.max(1)),
            BufferArg::from_raw_parts(selected, out_words.max(1)),
            BufferArg::from_raw_parts(output.count.clone(), (bits as usize).div_ceil(32)),
            counted,
            classes.max(1),
            cap,
            out_len,
            out_words,
            bits,
        ));
    }
    Ok(())
}
