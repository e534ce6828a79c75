//! Host memory for the reference and the argument checks: a buffer sized from a tensor is
//! reserved first, so a host without the memory gets a panic that says so, never an abort.

/// An empty vector with room for `len` values of `T`, or a panic that names the operator, what
/// the memory was for and how many bytes it was: a failed `Vec` allocation would abort the
/// process instead. Every host buffer the references size from their inputs comes from here.
pub(crate) fn reserve<T>(operator: &str, what: &str, len: usize) -> Vec<T> {
    let mut values = Vec::new();
    if values.try_reserve_exact(len).is_err() {
        panic!(
            "{operator}: {what} needs {} bytes of host memory, which could not be allocated; \
             split the operands into smaller tensors",
            len.saturating_mul(size_of::<T>())
        );
    }
    values
}

#[cfg(test)]
mod tests {
    /// More than `isize::MAX` bytes can never be allocated: the request is a panic with the
    /// message, not the abort of a failed `Vec` allocation (which would end this test binary).
    #[test]
    #[should_panic(
        expected = "ScatterND: the output needs 18446744073709551608 bytes of host memory"
    )]
    fn a_buffer_the_host_cannot_hold_is_a_panic_with_the_size() {
        super::reserve::<u64>("ScatterND", "the output", usize::MAX / 8);
    }
}
