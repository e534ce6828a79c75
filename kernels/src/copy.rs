//! A plain copy of a buffer's bits: what ScatterND does to its input first when it cannot
//! update it in place.

use cubecl::ir::ElemType;
use cubecl::prelude::*;
use cubecl::server::Handle;

use crate::KernelError;
use crate::launch::{
    bits_elem, elementwise_geometry, launch_vectors_then_tail, require_binding, require_len,
    vector_size_for,
};

/// `output[i] = input[i]` for `units` vectors starting at vector `first`.
#[cube(launch_unchecked, address_type = "dynamic")]
pub fn copy_kernel<T: Numeric, N: Size>(
    input: &[Vector<T, N>],
    output: &mut [Vector<T, N>],
    first: usize,
    units: usize,
    #[define(T)] _type: ElemType,
) {
    if ABSOLUTE_POS >= units {
        terminate!();
    }
    let position = first + ABSOLUTE_POS;
    output[position] = input[position];
}

/// Copies `len` elements of `elem` from `input` to `output` (distinct buffers), with the widest
/// vectors the runtime favours and a one-lane launch for the tail. Only bits move: `elem` may be
/// any type of a fixed width (bools included).
///
/// # Errors
///
/// [`KernelError`] when the runtime can bind neither `elem` nor the unsigned type of its width,
/// or a handle is smaller than `len` elements. Nothing is launched then.
pub fn launch_copy(
    client: &Client,
    input: Handle,
    output: Handle,
    elem: ElemType,
    len: usize,
) -> Result<(), KernelError> {
    let elem = bits_elem(client, elem)?;
    require_binding(client, elem, "data")?;
    require_len(&input, len, elem.size(), "input")?;
    require_len(&output, len, elem.size(), "output")?;
    let vector = vector_size_for(client, &[elem.size()]);
    let address = AddressType::from_len(len);
    let launch = |vector: usize, first: usize, units: usize| {
        let (count, dim) = elementwise_geometry(client, units);
        // SAFETY: both handles hold `len` elements (checked above); the kernel touches vectors
        // `first..first + units`, which the calls below keep within `len`.
        unsafe {
            copy_kernel::launch_unchecked(
                client,
                count,
                dim,
                address,
                vector,
                BufferArg::from_raw_parts(input.clone(), len),
                BufferArg::from_raw_parts(output.clone(), len),
                first,
                units,
                elem,
            );
        }
    };
    launch_vectors_then_tail(len, vector, launch);
    Ok(())
}
