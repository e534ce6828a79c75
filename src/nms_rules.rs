//! Non-maximum suppression's vocabulary, shared by every layer: how a box's four numbers are
//! laid out. A leaf: it imports nothing from the rest of the crate.

/// How a box's four numbers are laid out (ONNX `center_point_box` 0 and 1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum BoxFormat {
    /// `[y1, x1, y2, x2]`, either diagonal's corners.
    #[default]
    Corners,
    /// `[x_center, y_center, width, height]`.
    Center,
}
