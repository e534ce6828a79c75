//! The greedy sweep: one cube per (batch, class) walks its boxes in score order, a block of
//! `cube_size` candidates at a time, and keeps each box that no kept box suppresses.

use cubecl::prelude::*;

use super::boxes::{IouThreshold, NmsBox, load_box, passes_score, suppresses};

/// Floats per kept box in the kept list: its extent on each axis and its area.
pub(crate) const KEPT_FLOATS: usize = 5;

/// The kept box in slot `slot` of the kept list.
#[cube]
fn kept_box(kept_boxes: &mut [f32], slot: usize) -> NmsBox {
    let first = slot * KEPT_FLOATS;
    NmsBox {
        x_min: kept_boxes[first],
        x_max: kept_boxes[first + 1],
        y_min: kept_boxes[first + 2],
        y_max: kept_boxes[first + 3],
        area: kept_boxes[first + 4],
    }
}

/// Writes `b` into the five floats of `array` from `first`.
#[cube]
fn store_box(array: &mut [f32], first: usize, b: &NmsBox) {
    array[first] = b.x_min;
    array[first + 1] = b.x_max;
    array[first + 2] = b.y_min;
    array[first + 3] = b.y_max;
    array[first + 4] = b.area;
}

/// Cube `s < segments` sweeps blocks `first_block .. first_block + blocks` of segment `s`
/// (batch `s / classes`): its `n` boxes in decreasing score (`order` lists their indices;
/// `scores` holds the segment's `f32` bits), `cube_size` candidates a block. `kept_count[s]` and
/// `stopped[s]` carry the segment's state from one launch to the next (`first_block == 0`
/// starts afresh). Each block runs in four steps:
///
/// 1. each unit takes one candidate (a score that passes `min_key`) and drops it if a box kept
///    by an earlier block suppresses it, testing `per_step` kept boxes per loop iteration;
/// 2. each survivor marks, in a bitmask of 32-box words, the earlier survivors of the block that
///    would suppress it;
/// 3. one unit resolves the block in order from those masks, keeping at most `cap` in all, and
///    stops the segment at `cap`, at its end, or at a block whose last score fails the
///    threshold (the rest are lower still);
/// 4. the kept boxes join the segment's kept list (`kept_boxes`, `kept_index`).
///
/// Every barrier is in uniform control flow: the block loop's bounds are launch arguments, and
/// a stopped segment's blocks run their barriers with no candidate. The host bounds the work of
/// a launch by the blocks it gives it. Scratch is `O(cube_size^2 / 32)` words of shared memory,
/// never an `n x n` mask.
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn nms_sweep(
    boxes: &[f32],
    scores: &[u32],
    order: &[u32],
    kept_boxes: &mut [f32],
    kept_index: &mut [u32],
    kept_count: &mut [u32],
    stopped: &mut [u32],
    segments: usize,
    classes: usize,
    n: usize,
    cap: usize,
    first_block: usize,
    blocks: usize,
    midpoint: u32,
    exponent: i32,
    rule: u32,
    min_key: u32,
    opaque: u32,
    #[comptime] center: bool,
    #[comptime] cube_size: usize,
    #[comptime] per_step: usize,
) {
    let segment = CUBE_POS;
    if segment >= segments {
        terminate!();
    }
    let threshold = IouThreshold {
        midpoint,
        exponent,
        rule,
    };
    let words = comptime!(cube_size / 32);
    let unit = UNIT_POS as usize;
    let batch_first = segment / classes * n;
    let row = segment * n;
    let list = segment * cap;
    let mut block_boxes = Shared::<[f32]>::new_slice(cube_size * KEPT_FLOATS);
    let mut alive = Shared::<[u32]>::new_slice(cube_size);
    let mut masks = Shared::<[u32]>::new_slice(cube_size * words);
    // The kept bits of the block, then the segment's state: kept so far, and whether stopped.
    let mut keep = Shared::<[u32]>::new_slice(words + 2);
    if unit == 0 {
        let resume = first_block > 0;
        keep[words] = select(resume, kept_count[segment], 0u32);
        keep[words + 1] = select(resume, stopped[segment], 0u32);
    }
    sync_cube();
    for b in 0..blocks {
        let base = (first_block + b) * cube_size;
        // The same for every unit: read after the last barrier, written only by unit 0 in
        // step 3, two barriers later.
        let kept = keep[words] as usize;
        let active = keep[words + 1] == 0u32 && base < n;
        let position = base + unit;
        // Units past the end, and every unit of a stopped segment, load the segment's last box
        // (one address for all of them, so a stopped segment's blocks cost a cache line, not a
        // block of boxes) and take no part.
        let at = row + select(active && position < n, position, n - 1);
        let listed = order[at];
        // Always below `n`; the clamp keeps the load inside the boxes whatever it holds.
        let index = select((listed as usize) < n, listed, (n - 1) as u32);
        let mine = load_box(boxes, batch_first + index as usize, opaque, center);
        let mut candidate =
            active && position < n && passes_score(scores[row + index as usize], min_key);
        // Step 1: the boxes kept by earlier blocks, `per_step` a step (a loop without
        // barriers).
        if candidate {
            for step in 0..kept.div_ceil(per_step) {
                #[unroll]
                for j in 0..per_step {
                    let k = step * per_step + j;
                    if candidate && k < kept {
                        let kept_one = kept_box(kept_boxes, list + k);
                        if suppresses(&mine, &kept_one, &threshold, opaque) {
                            candidate = false;
                        }
                    }
                }
                if !candidate {
                    break;
                }
            }
        }
        store_box(&mut block_boxes, unit * KEPT_FLOATS, &mine);
        alive[unit] = select(candidate, 1u32, 0u32);
        sync_cube();
        // Step 2: earlier survivors of this block that suppress this one.
        for w in 0..words {
            let mut mask = 0u32;
            if candidate && w * 32 < unit {
                for quarter in 0..8usize {
                    #[unroll]
                    for b in 0..4usize {
                        let bit = quarter * 4 + b;
                        let j = w * 32 + bit;
                        if j < unit && alive[j] == 1 {
                            let other = kept_box(&mut block_boxes, j);
                            if suppresses(&mine, &other, &threshold, opaque) {
                                mask |= 1u32 << bit as u32;
                            }
                        }
                    }
                }
            }
            masks[unit * words + w] = mask;
        }
        sync_cube();
        // Step 3: one unit keeps the block's survivors in order and updates the state.
        if unit == 0 {
            let mut kept_here = 0usize;
            for w in 0..words {
                let mut word = 0u32;
                for quarter in 0..8usize {
                    #[unroll]
                    for b in 0..4usize {
                        let bit = quarter * 4 + b;
                        let i = w * 32 + bit;
                        if alive[i] == 1 && kept + kept_here < cap {
                            // Kept by an earlier word of the block, or by this one so far.
                            let mut suppressed = (masks[i * words + w] & word) != 0;
                            #[unroll]
                            for earlier in 0..words {
                                if earlier < w && (masks[i * words + earlier] & keep[earlier]) != 0
                                {
                                    suppressed = true;
                                }
                            }
                            if !suppressed {
                                word |= 1u32 << bit as u32;
                                kept_here += 1;
                            }
                        }
                    }
                }
                keep[w] = word;
            }
            // Scores are in decreasing order: once one below the threshold is reached, so are
            // the rest. NaNs, which never pass, come first.
            let last = select(base + cube_size < n, base + cube_size, n) - 1;
            let last_listed = order[row + last];
            let last_bits =
                scores[row + select((last_listed as usize) < n, last_listed, 0u32) as usize];
            let last_is_nan = (last_bits & 0x7FFF_FFFFu32) > 0x7F80_0000u32;
            let below = !last_is_nan && !passes_score(last_bits, min_key);
            let total = kept + kept_here;
            keep[words] = total as u32;
            let done = !active || total >= cap || base + cube_size >= n || below;
            keep[words + 1] = select(done, 1u32, 0u32);
        }
        sync_cube();
        // Step 4: the block's kept boxes join the list, in order.
        let my_word = keep[unit / 32];
        let bit = (unit % 32) as u32;
        if active && ((my_word >> bit) & 1u32) == 1 {
            let mut rank = (my_word & ((1u32 << bit) - 1)).count_ones() as usize;
            for w in 0..unit / 32 {
                rank += keep[w].count_ones() as usize;
            }
            let slot = list + kept + rank;
            store_box(kept_boxes, slot * KEPT_FLOATS, &mine);
            kept_index[slot] = index;
        }
        // The kept list is read by every unit of the next block, and the shared arrays are
        // rewritten: both wait for every unit.
        sync_storage();
    }
    if unit == 0 {
        kept_count[segment] = keep[words];
        stopped[segment] = keep[words + 1];
    }
}
