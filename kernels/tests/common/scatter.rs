//! One `launch_scatter_nd` or `launch_gather_nd` on host bytes, for the scatter tests: the
//! buffers, the index tuples and the layout built from plain slices, the output read back.

use burn_dml_ops_kernels::KernelError;
use burn_dml_ops_kernels::capture::Capture;
use burn_dml_ops_kernels::scatter_nd::{
    OutOfRange, ScatterNdData, ScatterNdIndices, ScatterNdLayout, ScatterReduction,
    ScatterStrategy, launch_gather_nd, launch_scatter_nd, scatter_strategy,
};
use cubecl::ir::{ElemType, IntKind};
use cubecl::prelude::*;

/// A scatter to launch: [`Scatter::new`] for one-coordinate i32 tuples onto every element of
/// the output with the strategy the runtime picks, then override what a test needs.
pub struct Scatter<'a> {
    /// The data's element type.
    pub elem: ElemType,
    /// The output buffer before the launch; it may hold bytes past the elements `dims` and
    /// `slice` cover (guard bytes), which the launch must leave alone.
    pub output: &'a [u8],
    /// The update rows' bytes.
    pub updates: &'a [u8],
    /// The index tuples' bytes, of `index_elem`, `dims.len()` per tuple (the buffer may run on
    /// past the last tuple, to a whole word).
    pub indices: &'a [u8],
    /// The number of index tuples (update rows).
    pub rows: usize,
    /// The indices' element type.
    pub index_elem: ElemType,
    /// What a tuple out of range does.
    pub out_of_range: OutOfRange,
    /// The indexed dimensions.
    pub dims: Vec<usize>,
    /// Elements per target slice.
    pub slice: usize,
    /// How the updates combine.
    pub reduction: ScatterReduction,
    /// The strategy to ask for; `None` for `scatter_strategy`'s choice.
    pub strategy: Option<ScatterStrategy>,
}

impl<'a> Scatter<'a> {
    /// `updates` at one-coordinate i32 `indices` (skipping those out of range) onto the
    /// `output.len() / elem.size()` elements of `output`, with `reduction`. With more
    /// coordinates per tuple, set `dims` and `rows` too.
    pub fn new(
        elem: ElemType,
        output: &'a [u8],
        indices: &'a [i32],
        updates: &'a [u8],
        reduction: ScatterReduction,
    ) -> Self {
        Self {
            elem,
            output,
            updates,
            indices: i32::as_bytes(indices),
            rows: indices.len(),
            index_elem: ElemType::Int(IntKind::I32),
            out_of_range: OutOfRange::Skip,
            dims: vec![output.len() / elem.size()],
            slice: 1,
            reduction,
            strategy: None,
        }
    }

    /// Launches the scatter and reads the whole output buffer back, with the strategy that ran.
    pub fn run(&self, client: &Client) -> Result<(Vec<u8>, ScatterStrategy), KernelError> {
        let output = client.create_from_slice(self.output);
        let strategy = self
            .strategy
            .unwrap_or_else(|| scatter_strategy(client, self.elem, self.reduction));
        let ran = launch_scatter_nd(
            client,
            &ScatterNdData {
                output: output.clone(),
                updates: client.create_from_slice(self.updates),
                elem: self.elem,
            },
            &ScatterNdIndices {
                handle: client.create_from_slice(self.indices),
                elem: self.index_elem,
                out_of_range: self.out_of_range,
            },
            ScatterNdLayout {
                dims: &self.dims,
                rows: self.rows,
                slice: self.slice,
            },
            self.reduction,
            strategy,
        )?;
        Ok((
            client.read_one(output).expect("read the output").to_vec(),
            ran,
        ))
    }

    /// The kernels the scatter launches, by type name, in order: built, not launched, under a
    /// capture with the client's properties.
    pub fn built_kernels(&self, client: &Client) -> Vec<String> {
        let capture = Capture::open((*client.properties()).clone(), Default::default());
        self.run(client).unwrap();
        capture
            .take()
            .iter()
            .map(|launch| {
                let id = format!("{:?}", launch.kernel.id());
                let name = id.split("type: ").nth(1).unwrap_or_default();
                let name = name.split(',').next().unwrap_or_default();
                name.rsplit("::").next().unwrap_or_default().to_string()
            })
            .collect()
    }
}

/// The gather (ScatterND's adjoint) of the `[dims[0], slice]` `input` of `elem` at
/// one-coordinate i32 `indices` (skipped out of range) into a buffer that starts as `output`;
/// returns that buffer read back.
pub fn gather(
    client: &Client,
    elem: ElemType,
    input: &[u8],
    output: &[u8],
    indices: &[i32],
    dims: &[usize],
    slice: usize,
) -> Result<Vec<u8>, KernelError> {
    let handle = client.create_from_slice(output);
    launch_gather_nd(
        client,
        client.create_from_slice(input),
        handle.clone(),
        elem,
        &ScatterNdIndices {
            handle: client.create_from_slice(i32::as_bytes(indices)),
            elem: ElemType::Int(IntKind::I32),
            out_of_range: OutOfRange::Skip,
        },
        ScatterNdLayout {
            dims,
            rows: indices.len(),
            slice,
        },
    )?;
    Ok(client.read_one(handle).expect("read the output").to_vec())
}
