//! How the compaction lays its work out: the cube-wide scan, the units per cube and the vectors
//! per unit, checked against the runtime's limits.

use cubecl::prelude::*;

use super::scan::STAGED_PER_UNIT;
use crate::KernelError;
use crate::launch::has_planes;

/// How the compaction's kernels scan across a cube.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CubeScan {
    /// A raking scan in shared memory with three barriers, in the tile scan only: the count
    /// and write kernels give every unit's run its own offset instead; needs nothing from the
    /// runtime.
    Shared,
    /// A plane (subgroup) scan per plane, then the plane totals through shared memory with one
    /// barrier; needs plane operations.
    Planes,
}

impl CubeScan {
    /// [`CubeScan::Planes`] where `client` reports plane operations, [`CubeScan::Shared`]
    /// elsewhere (lavapipe: cubecl-wgpu turns planes off on CPU adapters).
    pub fn for_client(client: &Client) -> Self {
        if has_planes(client) {
            Self::Planes
        } else {
            Self::Shared
        }
    }
}

/// How the compaction lays its work out on a runtime: the cube-wide scan, the units in a cube
/// and the vectors each unit handles. A tile, the work of one cube, is
/// `cube_size * per_unit` vectors.
///
/// ```
/// use burn_dml_ops_kernels::nonzero::{CompactionPlan, CubeScan};
///
/// let plan = CompactionPlan::new(CubeScan::Planes);
/// assert_eq!((plan.cube_size, plan.per_unit), (256, 16));
/// // Smaller cubes where barriers are dear (CPU drivers, which have no planes).
/// let cpu = CompactionPlan::new(CubeScan::Shared);
/// assert_eq!((cpu.cube_size, cpu.per_unit), (64, 16));
/// // Smaller cubes, for example to test planes that the cube size leaves partial.
/// let small = CompactionPlan { cube_size: 36, per_unit: 3, ..plan };
/// assert_eq!(small.tile_vectors(), 108);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CompactionPlan {
    /// The cube-wide scan, which also picks the write kernel: [`CubeScan::Planes`] writes
    /// with one run of rows per plane, [`CubeScan::Shared`] one run per unit.
    pub scan: CubeScan,
    /// Units per cube, from 1 to 1024 or the runtime's limit if lower. Any size works with
    /// either scan; with [`CubeScan::Planes`] a size that is not a multiple of the plane size
    /// leaves a partial plane, which the kernels handle.
    pub cube_size: usize,
    /// Vectors each unit handles, from 1 to 64. More amortises each tile's barriers (with
    /// [`CubeScan::Planes`]) or shortens the scan of one offset per unit (without). With
    /// [`CubeScan::Planes`] the count kernel holds that many vectors in registers and the write
    /// kernel one 32-bit word per vector (and one per step besides, on sparse tiles); with
    /// [`CubeScan::Shared`] the count kernel holds one vector at a time and the write kernel one
    /// word per 32 elements of the unit's run.
    pub per_unit: usize,
}

impl CompactionPlan {
    /// The plan this crate uses with `scan`.
    ///
    /// - [`CubeScan::Planes`] (GPUs): cubes of 256 units, 16 vectors each, so a unit has 16
    ///   independent loads in flight in the count kernel.
    /// - [`CubeScan::Shared`] (runtimes without planes: CPU drivers, OpenGL): cubes of 64
    ///   units, 16 vectors each. The count and write kernels have no barrier there (a CPU
    ///   driver runs one by switching between the cube's SIMD groups); longer runs per unit
    ///   cost compile time, which small calls feel.
    pub const fn new(scan: CubeScan) -> Self {
        let (cube_size, per_unit) = match scan {
            CubeScan::Planes => (256, 16),
            CubeScan::Shared => (64, 16),
        };
        Self {
            scan,
            cube_size,
            per_unit,
        }
    }

    /// [`CompactionPlan::new`] with [`CubeScan::for_client`].
    pub fn for_client(client: &Client) -> Self {
        Self::new(CubeScan::for_client(client))
    }

    /// The plan this crate uses for an input of `len` elements on `client`:
    /// [`CompactionPlan::for_client`], except that with [`CubeScan::Shared`] (no planes) an
    /// input of 2^20 elements or more takes runs of 32 vectors per unit, which are faster there
    /// and cost one more compilation, once; smaller calls keep the shorter kernel.
    pub fn for_len(client: &Client, len: usize) -> Self {
        let plan = Self::for_client(client);
        if plan.scan == CubeScan::Shared && len >= LONG_RUNS_FROM {
            Self {
                per_unit: 32,
                ..plan
            }
        } else {
            plan
        }
    }

    /// Vectors per tile: `cube_size * per_unit`.
    pub const fn tile_vectors(&self) -> usize {
        self.cube_size * self.per_unit
    }

    /// The most shared memory any of the plan's kernels declares, in bytes: with planes, the
    /// tile scan's staged counts and its plane totals; without, the shared-memory scan's values
    /// and run offsets.
    pub const fn shared_memory(&self) -> usize {
        let words = match self.scan {
            CubeScan::Planes => (STAGED_PER_UNIT + 1) * self.cube_size + 1,
            CubeScan::Shared => 2 * self.cube_size,
        };
        words * size_of::<u32>()
    }

    /// Checks the plan against `client`'s limits: units per cube, vectors per unit, and shared
    /// memory per cube.
    pub fn check(&self, client: &Client) -> Result<(), KernelError> {
        let properties = crate::capture::properties(client);
        let hardware = &properties.hardware;
        let most = hardware
            .max_units_per_cube
            .min(hardware.max_cube_dim.0)
            .min(1024) as usize;
        if !(1..=most).contains(&self.cube_size) || !(1..=64).contains(&self.per_unit) {
            return Err(KernelError::InvalidPlan {
                detail: format!(
                    "{self:?}: cube_size must be 1 to {most} units on this runtime and per_unit \
                     1 to 64 vectors"
                ),
            });
        }
        let shared = self.shared_memory();
        if shared > hardware.max_shared_memory_size {
            return Err(KernelError::InvalidPlan {
                detail: format!(
                    "{self:?} needs {shared} bytes of shared memory per cube, more than the \
                     {} this runtime has; use fewer units per cube",
                    hardware.max_shared_memory_size
                ),
            });
        }
        Ok(())
    }
}

/// The element count from which [`CompactionPlan::for_len`] gives runtimes without planes runs
/// of 32 vectors per unit.
pub(super) const LONG_RUNS_FROM: usize = 1 << 20;

#[cfg(test)]
mod tests {
    use super::*;

    /// Plans whose scans need more shared memory than a runtime has are refused by size: the
    /// plane scan of 1024 units needs more than Metal's 32 KiB.
    #[test]
    fn shared_memory_grows_with_the_cube() {
        let planes = CompactionPlan {
            cube_size: 1024,
            ..CompactionPlan::new(CubeScan::Planes)
        };
        assert!(planes.shared_memory() > 32 * 1024);
        assert!(CompactionPlan::new(CubeScan::Planes).shared_memory() <= 16 * 1024);
        assert!(CompactionPlan::new(CubeScan::Shared).shared_memory() <= 16 * 1024);
    }
}
