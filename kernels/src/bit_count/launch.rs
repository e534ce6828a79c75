//! Host-side launch over raw CubeCL handles.

use cubecl::ir::ElemType;
use cubecl::prelude::*;
use cubecl::server::Handle;

use super::kernel::bit_count_kernel;
use crate::launch::{
    elementwise_geometry, launch_vectors_then_tail, require_binding, require_len, vector_size_for,
};
use crate::{KernelError, StorageWidth};

/// Counts the set bits of each of the `len` elements in `input` and writes the counts, as
/// `output_elem` integers, into `output`.
///
/// Both buffers are contiguous and hold `len` elements. `input_width` is the storage width of
/// one input element; its dtype does not matter, since only its bits are read (a float buffer is
/// counted on its IEEE encoding). The work is enqueued on `client`'s stream; nothing is read
/// back.
///
/// # Errors
///
/// [`KernelError`] when `output_elem` is not an integer type, when the runtime cannot bind
/// buffers of the input's width or of `output_elem`, or when a handle is smaller than `len`
/// elements. Nothing is launched in those cases.
pub fn launch_bit_count(
    client: &Client,
    input: Handle,
    input_width: StorageWidth,
    output: Handle,
    output_elem: ElemType,
    len: usize,
) -> Result<(), KernelError> {
    if !matches!(output_elem, ElemType::Int(_) | ElemType::UInt(_)) {
        return Err(KernelError::NotAnInteger { elem: output_elem });
    }
    let input_elem = input_width.unsigned();
    require_binding(client, input_elem, "input")?;
    require_binding(client, output_elem, "output")?;
    require_len(&input, len, input_width.bytes(), "input")?;
    require_len(&output, len, output_elem.size(), "output")?;
    if len == 0 {
        return Ok(());
    }

    let vector = vector_size_for(client, &[input_width.bytes(), output_elem.size()]);
    let address = AddressType::from_len(len);
    let launch = |vector: usize, first: usize, units: usize| {
        let (count, dim) = elementwise_geometry(client, units);
        // SAFETY: both handles hold at least `len` elements (checked above) and the kernel
        // touches indices `first..first + units`, which the callers keep within `len / vector`
        // vectors of `vector` lanes.
        unsafe {
            bit_count_kernel::launch_unchecked(
                client,
                count,
                dim,
                address,
                vector,
                BufferArg::from_raw_parts(input.clone(), len),
                BufferArg::from_raw_parts(output.clone(), len),
                first,
                units,
                [input_elem, output_elem],
            );
        }
    };
    launch_vectors_then_tail(len, vector, launch);
    Ok(())
}
