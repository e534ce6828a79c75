//! The crate's error type.

use core::fmt;

use burn::tensor::DType;

/// What went wrong in a call to one of the crate's operators.
///
/// Every message names the operator and the dtypes, shapes or values involved, and says what
/// to do about it.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum DmlOpsError {
    /// The device cannot hold or process a dtype that the operator needs.
    UnsupportedDType {
        /// The operator that was called, as DirectML names it.
        operator: &'static str,
        /// The dtype that cannot be used.
        dtype: DType,
        /// The device, as Burn prints it.
        device: String,
        /// Why, and what to use instead.
        detail: String,
    },
    /// An argument or option is outside what the operator allows.
    InvalidArgument {
        /// The operator that was called, as DirectML names it.
        operator: &'static str,
        /// What was wrong, with the values and shapes involved, and what is allowed.
        detail: String,
    },
}

impl fmt::Display for DmlOpsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnsupportedDType {
                operator,
                dtype,
                device,
                detail,
            } => write!(
                f,
                "{operator}: dtype {dtype:?} is not supported on device {device}: {detail}"
            ),
            Self::InvalidArgument { operator, detail } => write!(f, "{operator}: {detail}"),
        }
    }
}

impl std::error::Error for DmlOpsError {}
