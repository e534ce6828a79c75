//! Kernels built instead of launched. While a [`Capture`] is open on a thread, every launcher
//! called on that thread decides as it would on a device with the capture's properties, builds
//! each kernel it would launch with those properties, hands it to the capture and launches
//! nothing. The kernel crate's CUDA compile test uses it to turn every kernel, at every
//! configuration a launcher picks for an NVIDIA GPU, into CUDA C++ on a machine without one.
//!
//! Not part of the crate's supported API: the client a launcher is given still allocates its
//! scratch buffers, and the launcher's outputs are left unwritten.

use std::cell::RefCell;
use std::marker::PhantomData;
use std::sync::Arc;

use cubecl::client::Client;
use cubecl::ir::{DeviceProperties, TargetProperties};
use cubecl::{CubeCount, CubeKernel};

/// What an open capture holds: the properties launchers see, and the launches built so far.
struct Open {
    device: Arc<DeviceProperties>,
    target: Arc<TargetProperties>,
    launches: Vec<Captured>,
}

/// One launch a launcher built instead of launching: the kernel (its cube dimensions in its
/// settings) and the cubes it would have launched.
pub struct Captured {
    /// The kernel as built for the capture's device.
    pub kernel: Box<dyn CubeKernel>,
    /// The cubes the launch asks for.
    pub cube_count: CubeCount,
}

thread_local! {
    static OPEN: RefCell<Option<Open>> = const { RefCell::new(None) };
}

/// An open capture on the current thread; it closes when dropped.
pub struct Capture {
    /// Tied to the thread it was opened on.
    _thread: PhantomData<*const ()>,
}

impl Capture {
    /// Opens a capture on this thread: from now on launchers called here see `device` instead
    /// of their client's properties and build kernels for it instead of launching them.
    ///
    /// # Panics
    ///
    /// If a capture is already open on this thread.
    pub fn open(device: DeviceProperties, target: TargetProperties) -> Self {
        OPEN.with_borrow_mut(|open| {
            assert!(open.is_none(), "a capture is already open on this thread");
            *open = Some(Open {
                device: Arc::new(device),
                target: Arc::new(target),
                launches: Vec::new(),
            });
        });
        Self {
            _thread: PhantomData,
        }
    }

    /// The launches built since the capture opened or since the last `take`, in launch order.
    pub fn take(&self) -> Vec<Captured> {
        OPEN.with_borrow_mut(|open| {
            std::mem::take(&mut open.as_mut().expect("the capture is open").launches)
        })
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        OPEN.with_borrow_mut(|open| *open = None);
    }
}

/// The properties a launcher decides by: the open capture's, else `client`'s.
pub(crate) fn properties(client: &Client) -> Arc<DeviceProperties> {
    OPEN.with_borrow(|open| open.as_ref().map(|open| open.device.clone()))
        .unwrap_or_else(|| client.properties_shared())
}

/// The open capture's device and target properties, which a kernel is built with instead of
/// being launched; `None` outside a capture.
pub(crate) fn building() -> Option<(Arc<DeviceProperties>, Arc<TargetProperties>)> {
    OPEN.with_borrow(|open| {
        open.as_ref()
            .map(|open| (open.device.clone(), open.target.clone()))
    })
}

/// Hands a built kernel and its cube count to the open capture.
pub(crate) fn record(kernel: impl CubeKernel + 'static, cube_count: CubeCount) {
    OPEN.with_borrow_mut(|open| {
        open.as_mut()
            .expect("a kernel is built only while a capture is open")
            .launches
            .push(Captured {
                kernel: Box::new(kernel),
                cube_count,
            });
    });
}

/// Launches `kernel(client, cube_count, cube_dim, address_type, arguments...)` with the
/// kernel's `launch_unchecked`, or, while a [`Capture`] is open on this thread, builds it with
/// the capture's properties (its `create_dummy_kernel`) and records it. Used inside the
/// caller's `unsafe` block, which states why the launch stays inside its buffers.
macro_rules! launch_unchecked {
    ($kernel:ident($client:expr, $count:expr, $dim:expr, $address:expr $(, $arg:expr)* $(,)?)) => {
        match $crate::capture::building() {
            Some((device, target)) => {
                let count: cubecl::CubeCount = $count;
                $crate::capture::record(
                    $kernel::create_dummy_kernel(
                        device, target, count.clone(), $dim, $address $(, $arg)*
                    ),
                    count,
                )
            }
            None => $kernel::launch_unchecked($client, $count, $dim, $address $(, $arg)*),
        }
    };
}

pub(crate) use launch_unchecked;
