//! How the sweep is cut into launches: the units of its cube, the kept boxes each unit tests
//! per loop iteration, and which blocks each launch takes, so that no launch's loops outgrow
//! lavapipe's limit or a watchdog's, whatever `N`.

use cubecl::prelude::*;

use super::sweep::KEPT_FLOATS;

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
pub(super) const MAX_KEPT: usize = 1 << 21;

/// The most kept boxes a sweep unit tests per loop iteration (unrolled).
const MAX_KEPT_PER_STEP: usize = 128;

/// Kept boxes a sweep unit tests per loop iteration: 8, the most a launch's time allows (its
/// work is counted at 8 per iteration), or more where one block's tests would not fit a
/// launch's iterations otherwise (more than about 195,000 kept: such a launch runs longer).
const KEPT_PER_STEP: usize = 8;

/// [`KEPT_PER_STEP`], or more for a `cap` whose one block would not fit a launch.
pub(super) fn kept_per_step(cap: usize) -> usize {
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
pub(super) fn sweep_units(client: &Client) -> usize {
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
pub(super) fn sweep_launches(n: usize, cap: usize, units: usize) -> Vec<(usize, usize)> {
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
