//! Host-side launch of non-maximum suppression over raw CubeCL handles.

use cubecl::ir::{ElemType, FloatKind, UIntKind};
use cubecl::prelude::*;
use cubecl::server::Handle;

use super::quotient::QuotientThreshold;
use super::rows::nms_write_rows;
use super::sweep::{KEPT_FLOATS, nms_sweep};
use crate::KernelError;
use crate::capture::launch_unchecked;
use crate::launch::{elementwise_geometry, fits_integer, require_len, require_word_aligned};
use crate::nonzero::nonzero_scan_tiles;
use crate::sort::{SortOrder, SortPlan, sorted_positions};

/// The most units of a sweep's cube, and candidates per block.
const SWEEP_UNITS: usize = 256;

/// The most loop iterations a unit of a sweep launch runs. Lavapipe and llvmpipe end every
/// loop of a shader invocation once it has run 65,535 iterations in all, so a longer launch
/// would silently stop keeping boxes there; the bound also keeps each launch short on a GPU
/// (Windows resets one after 2 s in a launch) whatever `N`, while `N` up to about 8,400 still
/// takes one launch.
const SWEEP_ITERATIONS_PER_LAUNCH: usize = 24_576;

/// Loop iterations of a sweep unit per block besides its tests against kept boxes: the block
/// loop and steps 2 to 4 (at most 19 per 32-candidate word), with room to spare.
const SWEEP_BLOCK_ITERATIONS: usize = 160;

/// The most kept boxes per (batch, class), `min(N, max_per_class)`: a unit's tests of one block
/// against them, [`MAX_KEPT_PER_STEP`] a loop iteration, must fit one launch's iterations
/// (`2^21 / 128 + 160` of 24,576).
const MAX_KEPT: usize = 1 << 21;

/// The most kept boxes a sweep unit tests per loop iteration (unrolled).
const MAX_KEPT_PER_STEP: usize = 128;

/// Kept boxes a sweep unit tests per loop iteration: 8, the most a launch's time allows (its
/// work is counted at 8 per iteration), or more where one block's tests would not fit a
/// launch's iterations otherwise (more than about 195,000 kept: such a launch runs longer).
const KEPT_PER_STEP: usize = 8;

/// [`KEPT_PER_STEP`], or more for a `cap` whose one block would not fit a launch.
fn kept_per_step(cap: usize) -> usize {
    cap.div_ceil(SWEEP_ITERATIONS_PER_LAUNCH - SWEEP_BLOCK_ITERATIONS)
        .next_power_of_two()
        .clamp(KEPT_PER_STEP, MAX_KEPT_PER_STEP)
}

/// A sweep block's work, in loop iterations of [`KEPT_PER_STEP`] tests: its tests against at
/// most `min(block * units, cap)` kept boxes, and [`SWEEP_BLOCK_ITERATIONS`].
fn block_work(block: usize, units: usize, cap: usize) -> usize {
    (block * units).min(cap).div_ceil(KEPT_PER_STEP) + SWEEP_BLOCK_ITERATIONS
}

/// Shared memory of a sweep cube of `units`: the block's boxes, survivors, masks and state.
fn sweep_shared_bytes(units: usize) -> usize {
    (units * KEPT_FLOATS + units + units * (units / 32) + units / 32 + 2) * size_of::<u32>()
}

/// Units of a sweep's cube on `client`: the most, a multiple of 32 up to [`SWEEP_UNITS`], that
/// its units per cube and shared memory allow.
fn sweep_units(client: &Client) -> usize {
    let hardware = &crate::capture::properties(client).hardware;
    let mut units = SWEEP_UNITS;
    while units > 32
        && (units > hardware.max_units_per_cube as usize
            || sweep_shared_bytes(units) > hardware.max_shared_memory_size)
    {
        units /= 2;
    }
    units
}

/// The sweep's launches for `n` boxes in blocks of `units` with at most `cap` kept: `(first
/// block, blocks)` of each, so that a launch's work ([`block_work`] of its blocks) stays within
/// [`SWEEP_ITERATIONS_PER_LAUNCH`]: its time is bounded, and so are its loop iterations, since
/// a unit tests at least [`KEPT_PER_STEP`] kept boxes an iteration. Every launch gets at least
/// one block, whose iterations fit alone ([`kept_per_step`]) while `cap <= MAX_KEPT`.
fn sweep_launches(n: usize, cap: usize, units: usize) -> Vec<(usize, usize)> {
    let total = n.div_ceil(units);
    let mut launches = Vec::new();
    let mut first = 0;
    while first < total {
        let mut blocks = 0;
        let mut work = 0usize;
        while first + blocks < total {
            let cost = block_work(first + blocks, units, cap);
            if blocks > 0 && work + cost > SWEEP_ITERATIONS_PER_LAUNCH {
                break;
            }
            work += cost;
            blocks += 1;
        }
        launches.push((first, blocks));
        first += blocks;
    }
    launches
}

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
        let per_step = kept_per_step(cap);
        for (first_block, blocks) in sweep_launches(n, cap, units) {
            // SAFETY: cube `s < segments` reads order below `segments * n`, scores at `s * n`
            // plus a listed position (clamped below `n`), boxes below `batches * n * 4` (each
            // index clamped below `n`), and writes kept slots below `(s + 1) * cap` (a segment
            // stops at `cap`), `kept_count[s]` and `stopped[s]`.
            unsafe {
                launch_unchecked!(nms_sweep(
                    client,
                    cubecl::calculate_cube_count_elemwise(
                        client,
                        segments * units,
                        CubeDim::new_1d(units as u32)
                    ),
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
                    min_score_key(limits.score_threshold),
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every launch of the sweep stays within its work, or holds one block whose loop
    /// iterations fit alone; the launches cover every block once, in order.
    #[test]
    fn sweep_launches_stay_within_their_iterations() {
        for n in [
            1,
            255,
            256,
            1000,
            8400,
            20_000,
            100_000,
            MAX_KEPT,
            MAX_KEPT + 7,
        ] {
            for cap in [1, 100, 8400, n, MAX_KEPT] {
                let cap = cap.min(n).min(MAX_KEPT);
                let per_step = kept_per_step(cap);
                let mut next = 0;
                for (first, blocks) in sweep_launches(n, cap, SWEEP_UNITS) {
                    assert_eq!(first, next, "n {n} cap {cap}");
                    let blocks_range = first..first + blocks;
                    let work: usize = blocks_range
                        .clone()
                        .map(|b| block_work(b, SWEEP_UNITS, cap))
                        .sum();
                    let iterations: usize = blocks_range
                        .map(|b| {
                            (b * SWEEP_UNITS).min(cap).div_ceil(per_step) + SWEEP_BLOCK_ITERATIONS
                        })
                        .sum();
                    assert!(
                        blocks == 1 || work <= SWEEP_ITERATIONS_PER_LAUNCH,
                        "n {n} cap {cap}"
                    );
                    assert!(iterations <= SWEEP_ITERATIONS_PER_LAUNCH, "n {n} cap {cap}");
                    next = first + blocks;
                }
                assert_eq!(next, n.div_ceil(SWEEP_UNITS), "n {n} cap {cap}");
            }
        }
        assert_eq!(sweep_launches(8400, 8400, SWEEP_UNITS).len(), 1);
        assert_eq!(kept_per_step(100_000), KEPT_PER_STEP);
    }
}
