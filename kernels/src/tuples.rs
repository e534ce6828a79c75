//! Index tuples built on the device: each row of a `[rows, width]` integer tensor holds the
//! coordinates of its position in a shape, with a run of columns copied from an index tensor in
//! place of some of them. ONNX's ScatterElements (the element's coordinates, the axis's one
//! replaced by its index) and batched GatherND (the batch coordinates, then the tuple) become
//! ScatterND and GatherND of these. The indices are read and the tuples written as 32-bit words,
//! so 8-, 16- and 64-bit indices run where the runtime cannot bind or compute with them (int64
//! on OpenGL).

use cubecl::ir::ElemType;
use cubecl::prelude::*;
use cubecl::server::Handle;

use crate::KernelError;
use crate::capture::launch_unchecked;
use crate::launch::{elementwise_geometry, require_len, require_word_aligned};
use crate::sort::load_field;

/// Element `e` of the tuples: the source element of `indices` for a copied column, or the
/// coordinate itself, as `(copied, source, coordinate)`.
#[cube]
fn tuple_element(
    e: usize,
    positions: &Sequence<usize>,
    width: usize,
    copy_start: usize,
    copy_len: usize,
) -> (bool, usize, u32) {
    let row = e / width;
    let column = e % width;
    let copied = column >= copy_start && column < copy_start + copy_len;
    let rank = comptime!(positions.len());
    let mut rest = row;
    let mut coordinate = 0usize;
    #[unroll]
    for d in 0..rank {
        let axis = comptime!(rank - 1 - d);
        let size = positions[axis];
        if axis == column {
            coordinate = rest % size;
        }
        rest /= size;
    }
    (
        copied,
        row * copy_len + select(copied, column - copy_start, 0),
        coordinate as u32,
    )
}

/// Unit `w < words` writes word `w` of the `out_len` tuple elements of `bits` bits (a 64-bit
/// one as two words, low first): column `c` of row `r` is `indices[r * copy_len + c -
/// copy_start]` for `copy_start <= c < copy_start + copy_len`, else coordinate `c` of position
/// `r` in `positions`.
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn index_tuples(
    indices: &[u32],
    output: &mut [u32],
    positions: Sequence<usize>,
    out_len: usize,
    words: usize,
    width: usize,
    copy_start: usize,
    copy_len: usize,
    #[comptime] bits: u32,
) {
    let w = ABSOLUTE_POS;
    if w >= words {
        terminate!();
    }
    if comptime!(bits == 64) {
        let (copied, source, coordinate) =
            tuple_element(w / 2, &positions, width, copy_start, copy_len);
        let half = w % 2;
        output[w] = select(
            copied,
            indices[2 * source + half],
            select(half == 0, coordinate, 0u32),
        );
    } else if comptime!(bits == 32) {
        let (copied, source, coordinate) =
            tuple_element(w, &positions, width, copy_start, copy_len);
        output[w] = select(copied, indices[source], coordinate);
    } else {
        let per_word = comptime!((32 / bits) as usize);
        let mut packed = 0u32;
        #[unroll]
        for s in 0..per_word {
            let e = w * per_word + s;
            if e < out_len {
                let (copied, source, coordinate) =
                    tuple_element(e, &positions, width, copy_start, copy_len);
                let field = select(
                    copied,
                    load_field(indices, source, bits),
                    coordinate & comptime!((1u32 << bits) - 1),
                );
                packed |= field << comptime!(s as u32 * bits);
            }
        }
        output[w] = packed;
    }
}

/// Writes `rows * width` tuple elements of the integer type `elem` into `output`, where `rows`
/// is the product of `positions` and `width` covers the coordinates before and after the copied
/// columns: column `c` of row `r` is element `r * copy_len + c - copy_start` of `indices` for
/// `copy_start <= c < copy_start + copy_len`, else coordinate `c` of position `r` in `positions`
/// (so `positions` has at least `width - copy_len` dimensions before and around the copied run).
/// Both handles are read and written as 32-bit words and must start on a 4-byte boundary.
///
/// # Errors
///
/// [`KernelError`] when `elem` is not an integer type of 8 to 64 bits, a coordinate column has no
/// dimension of `positions`, a coordinate does not fit `elem`, or a handle is too small or
/// misaligned. Nothing is launched then.
pub fn launch_index_tuples(
    client: &Client,
    indices: Handle,
    output: Handle,
    elem: ElemType,
    positions: &[usize],
    (width, copy_start, copy_len): (usize, usize, usize),
) -> Result<(), KernelError> {
    let bits = 8 * elem.size() as u32;
    if !matches!(elem, ElemType::Int(_) | ElemType::UInt(_)) || !matches!(bits, 8 | 16 | 32 | 64) {
        return Err(KernelError::NotAnInteger { elem });
    }
    let coordinate_columns = (0..width).filter(|c| *c < copy_start || *c >= copy_start + copy_len);
    if coordinate_columns.clone().any(|c| c >= positions.len()) || copy_start + copy_len > width {
        return Err(KernelError::ShapeMismatch {
            detail: format!(
                "tuples of {width} columns, {copy_len} copied from column {copy_start}, need a \
                 dimension of the positions {positions:?} for every other column"
            ),
        });
    }
    let largest = coordinate_columns.map(|c| positions[c]).max().unwrap_or(1);
    if !crate::launch::fits_integer(largest.saturating_sub(1) as i64, elem) {
        return Err(KernelError::ValueOutOfRange {
            detail: format!("coordinates up to {} do not fit {elem}", largest - 1),
        });
    }
    let rows: usize = positions.iter().product();
    let out_len = rows * width;
    let in_len = rows * copy_len;
    require_word_aligned(&indices, "indices")?;
    require_word_aligned(&output, "tuples")?;
    require_len(&indices, in_len, elem.size(), "indices")?;
    require_len(&output, out_len, elem.size(), "tuples")?;
    let words = (out_len * bits as usize).div_ceil(32);
    if words == 0 {
        return Ok(());
    }
    let in_words = (in_len * bits as usize).div_ceil(32).max(1);
    let mut sequence = SequenceArg::new();
    for &size in positions {
        sequence.push(size.max(1));
    }
    let (cubes, dim) = elementwise_geometry(client, words);
    // SAFETY: unit `w < words` writes tuple word `w` (the words of `out_len` elements, which the
    // handle holds and CubeCL binds whole) and reads index elements `r * copy_len + j` with
    // `r < rows` and `j < copy_len`, below `in_len`, which the handle holds.
    unsafe {
        launch_unchecked!(index_tuples(
            client,
            cubes,
            dim,
            AddressType::from_len(2 * words.max(in_words)),
            BufferArg::from_raw_parts(indices, in_words),
            BufferArg::from_raw_parts(output, words),
            sequence,
            out_len,
            words,
            width,
            copy_start,
            copy_len,
            bits,
        ));
    }
    Ok(())
}
