//! Which strategy applies a scatter's updates, and how the kernels hold its data.

use cubecl::features::{AtomicUsage, TypeUsage};
use cubecl::ir::{ElemType, FloatKind, Type};
use cubecl::prelude::*;

use crate::launch::{bits_elem, can_bind};
use crate::scatter_nd::{ReduceOp, WordKind};
use crate::{KernelError, StorageWidth};

/// How each update combines with the element it targets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScatterReduction {
    /// The update replaces the element; with duplicate targets, one candidate wins.
    Assign,
    /// The element becomes `op(element, update)` for every update that targets it.
    Reduce(ReduceOp),
}

/// How a launch applies the updates; see the [module docs](crate::scatter_nd).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScatterStrategy {
    /// Plain stores, for [`ScatterReduction::Assign`].
    Store,
    /// Native atomics on the data type.
    Atomic,
    /// The general design, for every reduction and dtype (the only one for data held in words,
    /// see [`data_in_words`]): the update rows sorted by target with the crate's radix sort, a
    /// fixed tree of nodes over the sorted rows reduced level by level, then one unit per target
    /// element folds its run of rows in index order through the tree's nodes. Needs 32-bit
    /// atomics only (the sort's histograms). `Assign` stores each target's latest row.
    Sorted,
    /// A result that is a function of the inputs alone: `Assign` keeps each target's latest row
    /// in index order (an atomic maximum per target), whose groups of columns move in vectors;
    /// a float `Add` sums each element's updates exactly on [`Sorted`](Self::Sorted)'s passes
    /// and rounds once; a float `Mul` multiplies them on the same passes with a wider
    /// significand and rounds once (index order where that rounding is uncertain); `f64` `Add`
    /// and `Mul` combine them in index order; the other reductions are exact in any order and
    /// take [`Sorted`](Self::Sorted)'s passes.
    Deterministic,
}

impl ScatterStrategy {
    /// Whether this strategy takes every reduction on every dtype ([`Sorted`](Self::Sorted)
    /// and [`Deterministic`](Self::Deterministic), which takes its passes where it has no
    /// method of its own).
    pub fn takes_any_reduction(self) -> bool {
        matches!(self, Self::Sorted | Self::Deterministic)
    }

    /// Whether this is the deterministic strategy.
    pub fn is_deterministic(self) -> bool {
        self == Self::Deterministic
    }
}

/// The strategy for a scatter whose result must not depend on timing:
/// [`ScatterStrategy::Deterministic`] for `Assign` and float `Add`/`Mul`, whose other
/// strategies combine duplicates in arrival order, and [`scatter_strategy`]'s choice for the
/// reductions that are exact in any order (integers, `Min`, `Max`). With it float `Add` sums
/// exactly (16- and 32-bit floats), float `Mul` rounds its tree's product once, and `f64`
/// `Add`/`Mul` combine in index order.
pub fn deterministic_strategy(
    client: &Client,
    data_elem: ElemType,
    reduction: ScatterReduction,
) -> ScatterStrategy {
    let timed = match reduction {
        ScatterReduction::Assign => true,
        ScatterReduction::Reduce(op) => {
            matches!(data_elem, ElemType::Float(_)) && matches!(op, ReduceOp::Add | ReduceOp::Mul)
        }
    };
    if timed {
        ScatterStrategy::Deterministic
    } else {
        scatter_strategy(client, data_elem, reduction)
    }
}

/// The strategy [`launch_scatter_nd`](crate::scatter_nd::launch_scatter_nd) should use for
/// `reduction` on data of `data_elem`: plain stores for `Assign`; native atomics when the runtime
/// reports the operation for `Atomic<data_elem>`; [`ScatterStrategy::Sorted`] otherwise.
pub fn scatter_strategy(
    client: &Client,
    data_elem: ElemType,
    reduction: ScatterReduction,
) -> ScatterStrategy {
    if data_in_words(client, data_elem, reduction) {
        return ScatterStrategy::Sorted;
    }
    let op = match reduction {
        ScatterReduction::Assign => return ScatterStrategy::Store,
        ScatterReduction::Reduce(op) => op,
    };
    if atomic_supports(client, compute_elem(data_elem, op), op) {
        ScatterStrategy::Atomic
    } else {
        ScatterStrategy::Sorted
    }
}

/// Whether [`launch_scatter_nd`](crate::scatter_nd::launch_scatter_nd) holds data of `elem` in
/// 32-bit words for `reduction`, because the runtime cannot bind the type the kernel would declare
/// or, for a reduction, compute with it: 8- and 16-bit elements packed two or four to a word (8-
/// and 16-bit integers and `bf16` on WGSL, and `f16` there for `Min`/`Max`, which choose on raw
/// bits as 16-bit integers WGSL does not have; those and `f16` on OpenGL), 64-bit ones as word
/// pairs (OpenGL). Such data always takes [`ScatterStrategy::Sorted`] or a deterministic strategy.
pub fn data_in_words(client: &Client, data_elem: ElemType, reduction: ScatterReduction) -> bool {
    matches!(
        data_binding(client, data_elem, reduction),
        Ok(DataBinding::Words { .. })
    )
}

/// How the kernels hold the data of a scatter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum DataBinding {
    /// Bound as this element type: the data's own, the unsigned type of its width (bools, and
    /// signed `Add`/`Mul`), whichever the kernel computes in.
    Typed(ElemType),
    /// 32-bit words: 8- and 16-bit elements `32 / bits` to a word, 64-bit ones as pairs of
    /// words, low word first.
    Words {
        /// The element width in bits: 8, 16 or 64.
        bits: u32,
        /// How arithmetic reads an element's bits.
        kind: WordKind,
    },
}

/// How the kernels bind data of `elem` for `reduction` on this runtime; see [`data_in_words`].
pub(super) fn data_binding(
    client: &Client,
    elem: ElemType,
    reduction: ScatterReduction,
) -> Result<DataBinding, KernelError> {
    let bits = 8 * elem.size() as u32;
    let typed = match reduction {
        ScatterReduction::Assign => {
            let typed = bits_elem(client, elem)?;
            can_bind(client, typed).then_some(typed)
        }
        ScatterReduction::Reduce(op) => {
            // A reduction needs numbers: bools have no sum or minimum.
            if !matches!(
                elem,
                ElemType::Int(_) | ElemType::UInt(_) | ElemType::Float(_)
            ) {
                return Err(KernelError::UnsupportedType { elem, role: "data" });
            }
            let compute = compute_elem(elem, op);
            // 8- and 16-bit data takes the packed kernel unless the runtime computes with the
            // type and, for float `Min`/`Max` (which choose on raw bits), with the unsigned type
            // of its width: a compare-and-select may compile to a `min` with the hardware's own
            // NaN and signed-zero rules (f16 on WGSL has no u16).
            let arithmetic = crate::capture::properties(client)
                .type_usage(compute)
                .contains(TypeUsage::Arithmetic);
            let float_selection =
                matches!(elem, ElemType::Float(_)) && matches!(op, ReduceOp::Min | ReduceOp::Max);
            let narrow_typed =
                arithmetic && (!float_selection || selection_bits(client, elem).is_some());
            (can_bind(client, compute) && (bits > 16 || narrow_typed)).then_some(compute)
        }
    };
    if let Some(typed) = typed {
        return Ok(DataBinding::Typed(typed));
    }
    let kind = match (reduction, elem) {
        (ScatterReduction::Assign, _) | (_, ElemType::UInt(_)) => WordKind::Unsigned,
        (_, ElemType::Int(_)) => WordKind::Signed,
        (_, ElemType::Float(FloatKind::F16)) => WordKind::F16,
        (_, ElemType::Float(FloatKind::BF16)) => WordKind::BF16,
        // f64 `Add`/`Mul` need the runtime's f64 arithmetic; `Min`/`Max` only compare bits.
        (
            ScatterReduction::Reduce(ReduceOp::Min | ReduceOp::Max),
            ElemType::Float(FloatKind::F64),
        ) => WordKind::F64,
        _ => return Err(KernelError::UnsupportedType { elem, role: "data" }),
    };
    match bits {
        8 | 16 | 64 => Ok(DataBinding::Words { bits, kind }),
        _ => Err(KernelError::UnsupportedType { elem, role: "data" }),
    }
}

/// How a deterministic float `Add` or `Mul` holds data of `elem` that [`data_binding`] binds
/// as `binding`: 16-bit floats as their bits, two to a 32-bit word, wherever the runtime binds
/// them, since a runtime's conversion between them and `f32` may change a NaN's payload or
/// flush a subnormal, and the kernels promise Flex's bits; other data as `binding`.
pub(super) fn deterministic_binding(
    binding: DataBinding,
    elem: ElemType,
    op: Option<ReduceOp>,
) -> DataBinding {
    let kind = match elem {
        ElemType::Float(FloatKind::F16) => WordKind::F16,
        ElemType::Float(FloatKind::BF16) => WordKind::BF16,
        _ => return binding,
    };
    match op {
        Some(ReduceOp::Add | ReduceOp::Mul) => DataBinding::Words { bits: 16, kind },
        _ => binding,
    }
}

/// The type a reduction `op` computes in for data of `elem`: the unsigned type of the same
/// width for a signed `Add` or `Mul` (the same two's-complement bits, and unsigned arithmetic
/// wraps on every runtime, where signed overflow is undefined behaviour in CUDA's C++), `elem`
/// otherwise.
pub(super) fn compute_elem(elem: ElemType, op: ReduceOp) -> ElemType {
    match (elem, op) {
        (ElemType::Int(_), ReduceOp::Add | ReduceOp::Mul) => StorageWidth::from_bytes(elem.size())
            .map(StorageWidth::unsigned)
            .unwrap_or(elem),
        _ => elem,
    }
}

/// Whether the runtime has a native atomic `op` on `elem` that keeps the crate's rule. Float
/// `Min`/`Max` atomics follow the hardware's NaN and signed-zero rules, so floats never use them.
pub(super) fn atomic_supports(client: &Client, elem: ElemType, op: ReduceOp) -> bool {
    let usage = crate::capture::properties(client).atomic_type_usage(Type::atomic(elem));
    match op {
        ReduceOp::Add => usage.contains(AtomicUsage::Add),
        ReduceOp::Min | ReduceOp::Max => {
            !matches!(elem, ElemType::Float(_)) && usage.contains(AtomicUsage::MinMax)
        }
        ReduceOp::Mul => false,
    }
}

/// The unsigned integer type `Min`/`Max` choose on for data of `elem`, where the runtime
/// computes with it (not 16-bit integers on WGSL): see the kernels' `combine`.
pub(super) fn selection_bits(client: &Client, elem: ElemType) -> Option<ElemType> {
    let bits = StorageWidth::from_bytes(elem.size())?.unsigned();
    crate::capture::properties(client)
        .type_usage(bits)
        .contains(TypeUsage::Arithmetic)
        .then_some(bits)
}
