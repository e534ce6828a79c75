//! The greedy sweep: one cube per (batch, class) walks its boxes in score order, a block of
//! `cube_size` candidates at a time, and keeps each box that no kept box suppresses.

use cubecl::prelude::*;

use super::boxes::{NmsBox, load_box, passes_score, suppresses};

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

/// Cube `s < segments` sweeps segment `s` (batch `s / classes`): its `n` boxes in decreasing
/// score (`order` lists their indices; `scores` holds the segment's `f32` bits). Each block of
/// `cube_size` candidates runs in four steps:
///
/// 1. each unit takes one candidate (a score that passes `min_key`) and drops it if a box kept
///    by an earlier block suppresses it;
/// 2. each survivor marks, in a bitmask of 32-box words, the earlier survivors of the block that
///    would suppress it;
/// 3. one unit resolves the block in order from those masks, keeping at most `cap` in all;
/// 4. the kept boxes join the segment's kept list (`kept_boxes`, `kept_index`).
///
/// The sweep stops at `cap` kept boxes, at the end of the segment, or at the first score below
/// the threshold (the rest are lower still). `kept_count[s]` gets the number kept. Scratch is
/// `O(cube_size^2 / 32)` words of shared memory, never an `n x n` mask.
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn nms_sweep(
    boxes: &[f32],
    scores: &[u32],
    order: &[u32],
    kept_boxes: &mut [f32],
    kept_index: &mut [u32],
    kept_count: &mut [u32],
    segments: usize,
    classes: usize,
    n: usize,
    cap: usize,
    iou_threshold: f32,
    min_key: u32,
    opaque: u32,
    #[comptime] center: bool,
    #[comptime] cube_size: usize,
) {
    let segment = CUBE_POS;
    if segment >= segments {
        terminate!();
    }
    let words = comptime!(cube_size / 32);
    let unit = UNIT_POS as usize;
    let batch_first = segment / classes * n;
    let row = segment * n;
    let list = segment * cap;
    let mut block_boxes = Shared::<[f32]>::new_slice(cube_size * KEPT_FLOATS);
    let mut alive = Shared::<[u32]>::new_slice(cube_size);
    let mut masks = Shared::<[u32]>::new_slice(cube_size * words);
    let mut keep = Shared::<[u32]>::new_slice(words + 1);
    let mut kept = 0usize;
    let mut base = 0usize;
    loop {
        if base >= n || kept >= cap {
            break;
        }
        let position = base + unit;
        // Units past the end load the last box and take no part.
        let at = row + select(position < n, position, n - 1);
        let listed = order[at];
        // Always below `n`; the clamp keeps the load inside the boxes whatever it holds.
        let index = select((listed as usize) < n, listed, (n - 1) as u32);
        let mine = load_box(boxes, batch_first + index as usize, opaque, center);
        let mut candidate = position < n && passes_score(scores[row + index as usize], min_key);
        // Step 1: the boxes kept by earlier blocks.
        if candidate {
            for k in 0..kept {
                let kept_one = kept_box(kept_boxes, list + k);
                if suppresses(&mine, &kept_one, iou_threshold, opaque) {
                    candidate = false;
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
                for bit in 0..32usize {
                    let j = w * 32 + bit;
                    if j < unit && alive[j] == 1 {
                        let other = kept_box(&mut block_boxes, j);
                        if suppresses(&mine, &other, iou_threshold, opaque) {
                            mask |= 1u32 << bit as u32;
                        }
                    }
                }
            }
            masks[unit * words + w] = mask;
        }
        sync_cube();
        // Step 3: one unit keeps the block's survivors in order.
        if unit == 0 {
            for w in 0..words {
                keep[w] = 0u32;
            }
            let mut kept_here = 0usize;
            for i in 0..cube_size {
                if alive[i] == 1 && kept + kept_here < cap {
                    let mut suppressed = false;
                    for w in 0..i / 32 + 1 {
                        if (masks[i * words + w] & keep[w]) != 0 {
                            suppressed = true;
                        }
                    }
                    if !suppressed {
                        keep[i / 32] |= 1u32 << (i % 32) as u32;
                        kept_here += 1;
                    }
                }
            }
            keep[words] = kept_here as u32;
        }
        sync_cube();
        // Step 4: the block's kept boxes join the list, in order.
        let my_word = keep[unit / 32];
        let bit = (unit % 32) as u32;
        if ((my_word >> bit) & 1u32) == 1 {
            let mut rank = (my_word & ((1u32 << bit) - 1)).count_ones() as usize;
            for w in 0..unit / 32 {
                rank += keep[w].count_ones() as usize;
            }
            let slot = list + kept + rank;
            store_box(kept_boxes, slot * KEPT_FLOATS, &mine);
            kept_index[slot] = index;
        }
        kept += keep[words] as usize;
        // Scores are in decreasing order: once one below the threshold is reached, so are the
        // rest. NaNs, which never pass, come first.
        let last = select(base + cube_size < n, base + cube_size, n) - 1;
        let last_listed = order[row + last];
        let last_bits =
            scores[row + select((last_listed as usize) < n, last_listed, 0u32) as usize];
        let last_is_nan = (last_bits & 0x7FFF_FFFFu32) > 0x7F80_0000u32;
        if !last_is_nan && !passes_score(last_bits, min_key) {
            base = n;
        } else {
            base += cube_size;
        }
        // The kept list is read by every unit of the next block, and the shared arrays are
        // rewritten: both wait for every unit.
        sync_storage();
    }
    if unit == 0 {
        kept_count[segment] = kept as u32;
    }
}
