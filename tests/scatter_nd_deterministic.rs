//! Deterministic ScatterND (`deterministic: true`): the same bits on every call and on every
//! device as on Flex; float `Add` correctly rounded for terms anywhere in the format's range (an
//! exact integer oracle here), so never less accurate than adding in index order; `Assign`'s latest
//! duplicate in index order wins, against a host loop; float `Mul` is the exact product rounded
//! once (an exact integer oracle here), or the index-order product where its tree cannot tell
//! the rounding; `f64` `Add`/`Mul` combine in index order, against a host loop.

mod common;

use burn::tensor::{DType, Device, Distribution, Int, Tensor, TensorData};
use burn_dml_ops::prelude::*;
use common::scatter::{data, fit, scatter, values};
use common::*;
use proptest::prelude::*;

/// A xorshift stream.
struct Stream(u64);

impl Stream {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    /// A value of either sign whose exponent lies in `[-span, span]`, with a full `f32`
    /// significand.
    fn spread(&mut self, span: i32) -> f32 {
        let exponent = self.below(2 * span as u64 + 1) as i32 - span;
        let significand = 1.0 + (self.below(1 << 23) as f32) / (1u32 << 23) as f32;
        let sign = if self.below(2) == 0 { 1.0 } else { -1.0 };
        sign * significand * 2f32.powi(exponent)
    }
}

/// Index patterns with duplicates: `(name, tuple per row)` for `rows` rows onto `targets`.
fn patterns(rows: usize, targets: usize, seed: u64) -> Vec<(&'static str, Vec<i64>)> {
    let mut stream = Stream(seed | 1);
    let hot: Vec<i64> = (0..rows)
        .map(|r| ((r * 3 + 1) % 7 * (targets / 7).max(1)) as i64)
        .collect();
    let one: Vec<i64> = vec![(targets / 2) as i64; rows];
    // Power law: target t with weight about 1 / (t + 1).
    let skewed: Vec<i64> = (0..rows)
        .map(|_| {
            let u = (stream.below(1 << 20) as f64 + 1.0) / (1 << 20) as f64;
            (((targets as f64 + 1.0).powf(u) - 1.0) as usize).min(targets - 1) as i64
        })
        .collect();
    let negative: Vec<i64> = (0..rows).map(|r| -1 - (r % 3) as i64).collect();
    vec![
        ("7 hot targets", hot),
        ("one target", one),
        ("power law", skewed),
        ("negative indices", negative),
    ]
}

fn deterministic(reduction: Reduction) -> ScatterNdOptions {
    ScatterNdOptions {
        reduction,
        deterministic: true,
        ..Default::default()
    }
}

/// The bits of `data`'s elements, whatever its dtype.
fn bits(data: &TensorData) -> Vec<u64> {
    let bytes = data.as_bytes();
    let width = data.dtype().size();
    bytes
        .chunks_exact(width)
        .map(|chunk| {
            let mut word = [0u8; 8];
            word[..width].copy_from_slice(chunk);
            u64::from_le_bytes(word)
        })
        .collect()
}

/// Runs the scatter `runs` times on `device` and checks every run gives the same bits; returns
/// them.
fn repeated(
    device: &Device,
    runs: usize,
    run: &dyn Fn(&Device) -> TensorData,
    case: &str,
) -> TensorData {
    let first = run(device);
    for attempt in 1..runs {
        let again = run(device);
        assert_eq!(
            bits(&again),
            bits(&first),
            "{case} on {device:?}: call {attempt} differs from call 0"
        );
    }
    first
}

/// `input` (`[targets, slice]`) with `rows` update rows scattered at `tuples` on every device:
/// the same bits on each of `runs` calls and on every device as on Flex. Returns Flex's result.
#[allow(clippy::too_many_arguments)]
fn same_everywhere(
    input: &[f32],
    tuples: &[i64],
    updates: &[f32],
    slice: usize,
    dtype: DType,
    reduction: Reduction,
    runs: usize,
    case: &str,
) -> TensorData {
    let targets = input.len() / slice;
    let rows = tuples.len();
    let run = |device: &Device| {
        scatter::<2, 2, 2>(
            device,
            TensorData::new(input.to_vec(), [targets, slice]).convert_dtype(dtype),
            TensorData::new(tuples.to_vec(), [rows, 1]).convert_dtype(DType::I32),
            TensorData::new(updates.to_vec(), [rows, slice]).convert_dtype(dtype),
            deterministic(reduction),
        )
        .unwrap()
    };
    let reference = repeated(&flex(), 2, &run, case);
    if let Some(device) = gpu().filter(|device| holds(device, dtype, case)) {
        let result = repeated(&device, runs, &run, case);
        let (ours, flex) = (bits(&result), bits(&reference));
        let differ: Vec<usize> = (0..ours.len()).filter(|&i| ours[i] != flex[i]).collect();
        assert!(
            differ.is_empty(),
            "{case} ({dtype:?} {reduction:?}) on {device:?}: {} elements differ from Flex, first \
             {:?}: {:?} against Flex's {:?}",
            differ.len(),
            differ.first(),
            differ.first().map(|&i| values(&result)[i]),
            differ.first().map(|&i| values(&reference)[i]),
        );
    }
    reference
}

/// The magnitude of the sum of `terms` (finite `f32` values, every one a multiple of 2^-149
/// below 2^128) in 32-bit digits, digit `i` worth 2^(32 i - 149), carried.
fn magnitude(terms: impl Iterator<Item = f32>) -> [u64; 12] {
    let mut digits = [0u64; 12];
    for term in terms {
        let bits = term.abs().to_bits();
        let exponent = bits >> 23;
        let significand = u64::from(bits & 0x7F_FFFF | if exponent != 0 { 0x80_0000 } else { 0 });
        let shift = exponent.max(1) - 1;
        let value = significand << (shift % 32);
        let digit = (shift / 32) as usize;
        digits[digit] += value & 0xFFFF_FFFF;
        digits[digit + 1] += value >> 32;
    }
    let mut carry = 0;
    for digit in &mut digits {
        *digit += carry;
        carry = *digit >> 32;
        *digit &= 0xFFFF_FFFF;
    }
    digits
}

/// The exact sum of `terms` (finite values of `dtype`, as `f32`), rounded once to `dtype`: the
/// positive and negative terms summed apart in 32-bit digits, their difference's top 96 bits
/// with a sticky bit made an f64 by rounding to odd (more than two bits beyond any target
/// format, so the second rounding is correct), then rounded to `dtype`.
fn exact_rounded(terms: &[f32], dtype: DType) -> f64 {
    assert!(terms.iter().all(|t| t.is_finite()), "finite terms only");
    let positive = magnitude(terms.iter().copied().filter(|t| t.is_sign_positive()));
    let negative = magnitude(terms.iter().copied().filter(|t| t.is_sign_negative()));
    let (sign, large, small) = if positive.iter().rev().ge(negative.iter().rev()) {
        (1.0, positive, negative)
    } else {
        (-1.0, negative, positive)
    };
    let mut difference = [0u64; 12];
    let mut borrow = 0;
    for i in 0..12 {
        let d = (large[i] + (1 << 32)) - small[i] - borrow;
        difference[i] = d & 0xFFFF_FFFF;
        borrow = u64::from(d >> 32 == 0);
    }
    let Some(top) = (0..12).rev().find(|&i| difference[i] != 0) else {
        let all_negative_zero = terms.iter().all(|t| t.to_bits() == 0x8000_0000);
        return if all_negative_zero { -0.0 } else { 0.0 };
    };
    let low = top.saturating_sub(2);
    let window = (low..=top)
        .rev()
        .fold(0u128, |acc, i| acc << 32 | u128::from(difference[i]));
    let mut sticky = difference[..low].iter().any(|&d| d != 0);
    let width = 128 - window.leading_zeros() as i32;
    let shift = (width - 53).max(0);
    sticky |= shift > 0 && window & ((1u128 << shift) - 1) != 0;
    let odd = ((window >> shift) as u64 | u64::from(sticky)) as f64;
    let value = odd * 2f64.powi(shift + 32 * low as i32 - 149);
    fit(dtype, sign * value)
}

/// The sum of `terms` one by one in index order in `dtype`.
fn sequential(terms: &[f32], dtype: DType) -> f64 {
    terms
        .iter()
        .skip(1)
        .fold(fit(dtype, f64::from(terms[0])), |acc, &t| {
            fit(dtype, acc + f64::from(t))
        })
}

/// Float `Add` with heavy duplication, values of both signs spanning 2^-10..2^10: the same bits
/// on every call and device as Flex, and exactly the correctly rounded sum (so never further
/// from it than index-order summation).
#[test]
fn float_add_is_reproducible_and_correctly_rounded() {
    let (targets, slice, rows) = (21usize, 8usize, 3000usize);
    for dtype in [DType::F32, DType::F16, DType::BF16] {
        for (name, tuples) in patterns(rows, targets, 7) {
            let mut stream = Stream(11);
            // f16 holds 2^-10..2^10 but not sums of thousands of 2^10: a narrower span there.
            let span = if dtype == DType::F16 { 4 } else { 10 };
            let round = |v: f32| fit(dtype, f64::from(v)) as f32;
            let input: Vec<f32> = (0..targets * slice)
                .map(|_| round(stream.spread(span)))
                .collect();
            let updates: Vec<f32> = (0..rows * slice)
                .map(|_| round(stream.spread(span)))
                .collect();
            let case = format!("Add, {name}");
            let result = same_everywhere(
                &input,
                &tuples,
                &updates,
                slice,
                dtype,
                Reduction::Add,
                4,
                &case,
            );
            let result = values(&result);
            for element in 0..targets * slice {
                let (target, col) = (element / slice, element % slice);
                let mut terms = vec![input[element]];
                for (row, &tuple) in tuples.iter().enumerate() {
                    let t = if tuple < 0 {
                        tuple + targets as i64
                    } else {
                        tuple
                    } as usize;
                    if t == target {
                        terms.push(updates[row * slice + col]);
                    }
                }
                let exact = exact_rounded(&terms, dtype);
                assert_eq!(
                    result[element].to_bits(),
                    exact.to_bits(),
                    "{case} {dtype:?}: element {element} ({} terms) is {}, the correctly rounded \
                     sum is {exact} (index order gives {})",
                    terms.len(),
                    result[element],
                    sequential(&terms, dtype)
                );
            }
        }
    }
}

/// One element hit 2^16 times: reproducible, equal to Flex and to the correctly rounded sum.
#[test]
fn one_element_hit_65536_times() {
    let rows = 1usize << 16;
    let mut stream = Stream(5);
    let input = vec![0.5f32; 4];
    let updates: Vec<f32> = (0..rows).map(|_| stream.spread(10)).collect();
    let tuples = vec![2i64; rows];
    let result = same_everywhere(
        &input,
        &tuples,
        &updates,
        1,
        DType::F32,
        Reduction::Add,
        3,
        "2^16 hits",
    );
    let mut terms = vec![0.5f32];
    terms.extend(&updates);
    assert_eq!(values(&result)[2], exact_rounded(&terms, DType::F32));
    assert_eq!(values(&result)[0], 0.5);
}

/// The largest finite value, the smallest normal and the smallest subnormal of a float `dtype`,
/// as `f32`.
fn format_edges(dtype: DType) -> (f32, f32, f32) {
    match dtype {
        DType::F16 => (65504.0, 2f32.powi(-14), 2f32.powi(-24)),
        DType::BF16 => (
            f32::from_bits(0x7F7F_0000),
            f32::MIN_POSITIVE,
            2f32.powi(-133),
        ),
        _ => (f32::MAX, f32::MIN_POSITIVE, f32::from_bits(1)),
    }
}

/// A finite value of `dtype` with random bits: any exponent of the format, either sign.
fn any_finite(stream: &mut Stream, dtype: DType) -> f32 {
    loop {
        let bits = stream.next() as u32;
        let value = match dtype {
            DType::F16 => half::f16::from_bits(bits as u16).to_f32(),
            DType::BF16 => half::bf16::from_bits(bits as u16).to_f32(),
            _ => f32::from_bits(bits),
        };
        if value.is_finite() {
            return value;
        }
    }
}

/// Float `Add` whose terms span the whole format, with large terms that cancel: each column a
/// case that a window of binades below the largest term, or index order, gets wrong (the
/// largest values cancelling around a small one, two largest values whose sum overflows before
/// a third brings it back, subnormals beside normals, halfway cases), then rows of random bits
/// over every exponent, each followed by its negation on another target. Exactly the correctly
/// rounded sum, the same bits everywhere as on Flex.
#[test]
fn float_add_is_exact_across_the_whole_range() {
    for dtype in [DType::F32, DType::BF16, DType::F16] {
        let (max, normal, tiny) = format_edges(dtype);
        // Column by column: the input value, then the updates of three rows onto target 0.
        let columns: [[f32; 4]; 8] = [
            [max, tiny, -max, 0.0],
            [max, max, -max, 0.0],
            [-max, -max, max, -0.0],
            [max / 2.0, tiny, -max / 2.0, normal],
            [1.0, tiny, -1.0, tiny],
            [normal, -tiny, 0.0, -0.0],
            [max, max, 0.0, 0.0],
            [-max, -max, -0.0, 0.0],
        ];
        let slice = columns.len();
        let mut stream = Stream(41);
        let (targets, random_rows) = (6usize, 600usize);
        let mut input: Vec<f32> = (0..targets * slice)
            .map(|_| any_finite(&mut stream, dtype))
            .collect();
        let mut tuples = vec![0i64; 3];
        let mut updates = vec![0f32; 3 * slice];
        for (col, case) in columns.iter().enumerate() {
            input[col] = case[0];
            for row in 0..3 {
                updates[row * slice + col] = case[row + 1];
            }
        }
        for row in 0..random_rows {
            // Every other pair cancels on one target, the rest spread over two.
            let apart = row % 2 * (row / 2 % 2) * 3;
            let target = 1 + (row / 2 * 7 + apart) % (targets - 1);
            tuples.push(target as i64);
            if row % 2 == 0 {
                updates.extend((0..slice).map(|_| any_finite(&mut stream, dtype)));
            } else {
                let last = updates.len() - slice;
                let negated: Vec<f32> = updates[last..].iter().map(|v| -v).collect();
                updates.extend(negated);
            }
        }
        let case = format!("Add across the range {dtype:?}");
        let result = same_everywhere(
            &input,
            &tuples,
            &updates,
            slice,
            dtype,
            Reduction::Add,
            2,
            &case,
        );
        let out = bits(&result);
        let result = values(&result);
        for element in 0..targets * slice {
            let (target, col) = (element / slice, element % slice);
            let mut terms = vec![input[element]];
            for (row, &t) in tuples.iter().enumerate() {
                if t as usize == target {
                    terms.push(updates[row * slice + col]);
                }
            }
            let exact = exact_rounded(&terms, dtype);
            assert!(
                result[element].to_bits() == exact.to_bits(),
                "{case}: element {element} ({} terms) is {} (bits {:#x}), the correctly rounded \
                 sum is {exact} (index order gives {})",
                terms.len(),
                result[element],
                out[element],
                sequential(&terms, dtype)
            );
        }
        // The cases whose answers the oracle could share a mistake with, by hand.
        let edge = |col: usize| result[col];
        assert_eq!(edge(0), f64::from(tiny), "{case}: max + tiny - max");
        assert_eq!(edge(1), f64::from(max), "{case}: max + max - max");
        assert_eq!(edge(2), -f64::from(max), "{case}: -max - max + max");
        assert_eq!(edge(6), f64::INFINITY, "{case}: max + max overflows");
        assert_eq!(edge(7), f64::NEG_INFINITY, "{case}: -max - max overflows");
    }
}

/// Subnormals, infinities and NaN: Flex's bits everywhere; NaN stays NaN, opposite infinities
/// give NaN, one infinity wins over finite terms, a sum of subnormals is exact.
#[test]
fn special_values_give_flex_bits() {
    let subnormal = f32::from_bits(3);
    let slice = 6usize;
    let input = vec![0.0f32, -0.0, 1.0, 0.0, subnormal, -0.0];
    let rows: Vec<[f32; 6]> = vec![
        [subnormal, -0.0, f32::INFINITY, f32::NAN, subnormal, -0.0],
        [subnormal, -0.0, f32::NEG_INFINITY, 1.0, -subnormal, -0.0],
        [f32::MIN_POSITIVE, 0.0, 2.0, 3.0, 1e-40, -0.0],
    ];
    let updates: Vec<f32> = rows.iter().flatten().copied().collect();
    let tuples = vec![0i64; rows.len()];
    let result = same_everywhere(
        &input,
        &tuples,
        &updates,
        slice,
        DType::F32,
        Reduction::Add,
        3,
        "specials",
    );
    let out = result.iter::<f32>().collect::<Vec<_>>();
    assert_eq!(
        out[0].to_bits(),
        (f32::MIN_POSITIVE + f32::from_bits(6)).to_bits()
    );
    assert_eq!(
        out[1].to_bits(),
        0.0f32.to_bits(),
        "-0.0 + -0.0 + -0.0 + 0.0 is +0.0"
    );
    assert!(out[2].is_nan(), "+inf + -inf is NaN");
    assert!(out[3].is_nan(), "NaN stays NaN");
    assert_eq!(out[4], subnormal + 1e-40);
    assert_eq!(
        out[5].to_bits(),
        (-0.0f32).to_bits(),
        "a sum of -0.0 alone is -0.0"
    );
    for dtype in [DType::F16, DType::BF16] {
        let input = vec![0.0f32; 8];
        let updates = [f32::INFINITY, 1.0, 6e-8, 2.0, 6e-8, 6e-8, 6e-8, 1.0];
        let result = same_everywhere(
            &input,
            &[1, 1],
            &updates,
            4,
            dtype,
            Reduction::Add,
            3,
            "16-bit specials",
        );
        let out = values(&result);
        assert_eq!(out[4], f64::INFINITY);
        assert_eq!(out[5], fit(dtype, 1.0 + fit(dtype, 6e-8)));
        assert_eq!(
            out[6],
            2.0 * fit(dtype, 6e-8),
            "a sum of two subnormals is exact"
        );
        assert_eq!(out[7], 3.0);
    }
}

/// `p` (an exact product of two values of `dtype`) rounded once to `dtype`: directly for `f32`,
/// else first to `f32` with round-to-odd (more than two bits beyond any 16-bit format, so the
/// second rounding is correct).
fn round_once(p: f64, dtype: DType) -> f64 {
    let nearest = p as f32;
    if dtype == DType::F32 || !p.is_finite() || f64::from(nearest) == p {
        return fit(dtype, f64::from(nearest));
    }
    let toward_zero = if f64::from(nearest).abs() > p.abs() {
        f32::from_bits(nearest.to_bits() - 1)
    } else {
        nearest
    };
    let odd = f32::from_bits(toward_zero.to_bits() | 1);
    match dtype {
        DType::F16 => half::f16::from_f32(odd).to_f64(),
        _ => half::bf16::from_f32(odd).to_f64(),
    }
}

/// Each element's terms: its value in `input` (`[targets, slice]`), then the updates of its
/// rows at `tuples`, in row order.
fn terms_of(input: &[f32], tuples: &[i64], updates: &[f32], slice: usize) -> Vec<Vec<f32>> {
    let targets = input.len() / slice;
    let mut terms: Vec<Vec<f32>> = input.iter().map(|&v| vec![v]).collect();
    for (row, &tuple) in tuples.iter().enumerate() {
        let Some(target) = oracle_index(tuple, targets, false) else {
            continue;
        };
        for col in 0..slice {
            terms[target * slice + col].push(updates[row * slice + col]);
        }
    }
    terms
}

/// Each element of `input` (`[targets, slice]`) times the updates of its rows in row order,
/// every product rounded once to `dtype`: what index order gives.
fn products_in_order(
    input: &[f32],
    tuples: &[i64],
    updates: &[f32],
    slice: usize,
    dtype: DType,
) -> Vec<f64> {
    terms_of(input, tuples, updates, slice)
        .iter()
        .map(|terms| {
            terms[1..].iter().fold(f64::from(terms[0]), |acc, &t| {
                round_once(acc * f64::from(t), dtype)
            })
        })
        .collect()
}

/// The exact product of `terms` (values of `dtype`, as `f32`) rounded once to `dtype`: NaN for
/// a NaN term or an infinity with a zero, else a signed infinity or zero where a term is one;
/// otherwise the significands multiplied exactly in 32-bit digits, the top 53 bits with a
/// sticky bit made an f64 by rounding to odd (more than two bits beyond any format, so the
/// second rounding is correct), then rounded to `dtype`.
fn exact_product(terms: &[f32], dtype: DType) -> f64 {
    let negative = terms.iter().filter(|t| t.is_sign_negative()).count() % 2 == 1;
    let sign = if negative { -1.0 } else { 1.0 };
    let infinite = terms.iter().any(|t| t.is_infinite());
    let zero = terms.contains(&0.0);
    if terms.iter().any(|t| t.is_nan()) || (infinite && zero) {
        return f64::NAN;
    }
    if infinite || zero {
        return sign * if infinite { f64::INFINITY } else { 0.0 };
    }
    let mut digits = vec![1u64];
    // The product is `digits * 2^exponent`.
    let mut exponent = 0i64;
    for term in terms {
        let bits = term.to_bits();
        let field = (bits >> 23) & 0xFF;
        let significand = u64::from(bits & 0x7F_FFFF | if field != 0 { 0x80_0000 } else { 0 });
        exponent += i64::from(field.max(1)) - 150;
        let mut carry = 0;
        for digit in &mut digits {
            let product = *digit * significand + carry;
            *digit = product & 0xFFFF_FFFF;
            carry = product >> 32;
        }
        if carry != 0 {
            digits.push(carry);
        }
    }
    let bit = |i: usize| (digits[i / 32] >> (i % 32)) & 1;
    let top = digits.len() - 1;
    let width = 32 * top + 64 - digits[top].leading_zeros() as usize;
    let shift = width.saturating_sub(53);
    let kept = (shift..width).rev().fold(0u64, |acc, i| acc << 1 | bit(i));
    let sticky = (0..shift).any(|i| bit(i) == 1);
    let odd = (kept | u64::from(sticky)) as f64;
    let scale = shift as i64 + exponent;
    // Beyond f64's range the product is far beyond every format's.
    let value = match scale {
        ..-1200 => 0.0,
        1100.. => f64::INFINITY,
        _ => odd * 2f64.powi(scale as i32),
    };
    fit(dtype, sign * value)
}

/// Each element of `input` (`[targets, slice]`) times the updates of its rows: the exact
/// product rounded once to `dtype`, what deterministic `Mul` gives wherever its tree can tell
/// the rounding (every element of these tests).
fn products_rounded_once(
    input: &[f32],
    tuples: &[i64],
    updates: &[f32],
    slice: usize,
    dtype: DType,
) -> Vec<f64> {
    terms_of(input, tuples, updates, slice)
        .iter()
        .map(|t| exact_product(t, dtype))
        .collect()
}

/// Deterministic `Mul` of `updates` into `input` at `tuples`: the same bits on every device as
/// Flex ([`same_everywhere`], `runs` calls), and Flex's values the exact products rounded once.
/// Returns Flex's values.
fn products_everywhere(
    input: &[f32],
    tuples: &[i64],
    updates: &[f32],
    slice: usize,
    dtype: DType,
    runs: usize,
    case: &str,
) -> Vec<f64> {
    let result = same_everywhere(
        input,
        tuples,
        updates,
        slice,
        dtype,
        Reduction::Mul,
        runs,
        case,
    );
    let out = values(&result);
    let expected = products_rounded_once(input, tuples, updates, slice, dtype);
    let first = (0..out.len()).find(|&i| !same_values(&out[i..=i], &expected[i..=i]));
    assert!(
        same_values(&out, &expected),
        "{case}: Flex is not the product rounded once; first at {first:?}: {:?} against {:?}",
        first.map(|i| out[i]),
        first.map(|i| expected[i]),
    );
    out
}

/// The oracle's own rounding: long products of 16-bit values often lie a hair above a tie,
/// where rounding twice (through `f32`, or dropping low bits first) gives the tie's even
/// neighbour instead of the value above.
#[test]
fn the_oracle_rounds_a_hair_above_a_tie_up() {
    let hair = 2f64.powi(-40);
    for (dtype, unit) in [(DType::BF16, 2f64.powi(-7)), (DType::F16, 2f64.powi(-10))] {
        assert_eq!(fit(dtype, 1.0 + unit / 2.0 + hair), 1.0 + unit, "{dtype:?}");
        assert_eq!(
            fit(dtype, -1.0 - unit / 2.0 - hair),
            -1.0 - unit,
            "{dtype:?}"
        );
        assert_eq!(
            fit(dtype, 1.0 + unit / 2.0),
            1.0,
            "{dtype:?}: a tie goes to even"
        );
        assert_eq!(fit(dtype, 1.0 + unit / 2.0 - hair), 1.0, "{dtype:?}");
    }
    let smallest = half::bf16::from_bits(1).to_f64();
    assert_eq!(fit(DType::BF16, smallest / 2.0 + hair * smallest), smallest);
    assert_eq!(fit(DType::BF16, f64::MAX), f64::INFINITY);
}

/// `a` and `b` equal as floats, NaN equal to NaN (the bits of NaN are checked by Flex).
fn same_values(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x == y || (x.is_nan() && y.is_nan()))
}

/// Float `Mul` with heavy duplication, factors of both signs near 1: the same bits on every
/// call and device as Flex, and each element the exact product rounded once, which index order
/// (rounding every step) misses in many elements.
#[test]
fn float_mul_rounds_the_exact_product_once() {
    let (targets, slice, rows) = (21usize, 8usize, 3000usize);
    let mut out_of_range = Stream(19);
    // Tuples from -2 * targets to 2 * targets: half wrap or land, the rest are skipped.
    let scattered: Vec<i64> = (0..rows)
        .map(|_| out_of_range.below(4 * targets as u64) as i64 - 2 * targets as i64)
        .collect();
    for dtype in [DType::F32, DType::F16, DType::BF16] {
        let mut cases = patterns(rows, targets, 13);
        cases.push(("skipped tuples", scattered.clone()));
        for (name, tuples) in cases {
            let mut stream = Stream(17);
            let round = |v: f32| fit(dtype, f64::from(v)) as f32;
            let factor = |stream: &mut Stream| {
                let sign = if stream.below(2) == 0 { 1.0 } else { -1.0 };
                round(sign * (0.75 + stream.below(1 << 20) as f32 / (1u32 << 21) as f32))
            };
            let input: Vec<f32> = (0..targets * slice).map(|_| factor(&mut stream)).collect();
            let updates: Vec<f32> = (0..rows * slice).map(|_| factor(&mut stream)).collect();
            let case = format!("Mul {name} {dtype:?}");
            let out = products_everywhere(&input, &tuples, &updates, slice, dtype, 3, &case);
            let in_order = products_in_order(&input, &tuples, &updates, slice, dtype);
            assert!(
                !same_values(&out, &in_order),
                "{case}: index order gives the same values, so the test cannot tell them apart"
            );
        }
    }
}

/// Products at the edges: subnormal results (rounded once, ties to even), underflow to a
/// signed zero, overflow to infinity, infinity times zero and NaN operands (the canonical quiet
/// NaN), in each float dtype.
#[test]
fn mul_special_values_give_flex_bits() {
    let slice = 8usize;
    for dtype in [DType::F32, DType::F16, DType::BF16] {
        let tiny = match dtype {
            DType::F16 => 2f32.powi(-24),
            _ => {
                f32::from_bits(1)
                    * if dtype == DType::BF16 {
                        2f32.powi(16)
                    } else {
                        1.0
                    }
            }
        };
        let huge = match dtype {
            DType::F16 => 60000.0,
            _ => 3e38,
        };
        let input = vec![
            tiny * 3.0,
            -tiny,
            huge,
            f32::INFINITY,
            -f32::NAN,
            -0.0,
            1.5,
            tiny,
        ];
        let rows: Vec<[f32; 8]> = vec![
            [0.5, 0.5, 2.0, 0.0, 1.0, 5.0, tiny, 0.75],
            [0.5, 3.0, 1.0, 1.0, 2.0, 1.0, 1e-3, 1.0],
        ];
        let updates: Vec<f32> = rows.iter().flatten().copied().collect();
        let tuples = [0i64, 0];
        let case = format!("Mul specials {dtype:?}");
        let result = same_everywhere(
            &input,
            &tuples,
            &updates,
            slice,
            dtype,
            Reduction::Mul,
            2,
            &case,
        );
        let rounded = |v: &[f32]| v.iter().map(|&x| fit(dtype, f64::from(x)) as f32).collect();
        let (input, updates): (Vec<f32>, Vec<f32>) = (rounded(&input), rounded(&updates));
        let expected = products_rounded_once(&input, &tuples, &updates, slice, dtype);
        let out = values(&result);
        assert!(
            same_values(&out, &expected),
            "{case}: {out:?} against {expected:?}"
        );
        assert!(out[3].is_nan(), "{case}: infinity times zero is NaN");
        let canonical: u64 = match dtype {
            DType::F32 => 0x7FC0_0000,
            DType::F16 => 0x7E00,
            _ => 0x7FC0,
        };
        assert_eq!(bits(&result)[3], canonical, "{case}: the canonical NaN");
        assert_eq!(bits(&result)[4], canonical, "{case}: the canonical NaN");
        assert_eq!(out[2], f64::INFINITY, "{case}: overflow");
    }
}

/// The columns of [`mul_at_the_edges_of_every_format`] for a format whose largest value,
/// smallest normal and smallest subnormal are given: the input value and two factors each.
fn product_edges<F: Copy + std::ops::Mul<Output = F> + From<f32>>(
    max: F,
    normal: F,
    tiny: F,
    special: [F; 3],
) -> Vec<[F; 3]> {
    let [infinity, nan, zero] = special;
    let f = F::from;
    vec![
        // Far below the smallest subnormal: +0, -0.
        [tiny, tiny, f(1.0)],
        [tiny, f(-1.0) * tiny, f(1.0)],
        [normal, normal, f(0.5)],
        // Subnormal results: exact, a tie to even (0), a tie to even (2 tiny), rounded up.
        [normal, f(0.5), f(1.0)],
        [tiny, f(0.5), f(1.0)],
        [tiny * f(3.0), f(0.5), f(1.0)],
        [tiny, f(0.75), f(1.0)],
        // Past the largest value and back (index order overflows), the largest value kept,
        // back from the edge in one step.
        [max, f(2.0), f(0.25)],
        [max, f(-1.0), f(1.0)],
        [max, tiny, f(1.0)],
        // Infinity times zero, NaN, infinities of both signs.
        [infinity, zero, f(1.0)],
        [nan, f(1.0), f(1.0)],
        [f(-1.0) * infinity, f(-2.0), f(1.0)],
        [infinity, f(-1.0), normal],
    ]
}

/// Float `Mul` at the edges of f16, bf16, f32 and f64: products that underflow to zero, to a
/// subnormal (ties to even), pass the largest value and come back, infinities and NaN; each
/// element the exact product rounded once in the element's type, and Flex's bits everywhere.
/// `f64` `Mul` and `Add` in index order, every step rounded.
#[test]
fn mul_at_the_edges_of_every_format() {
    for dtype in [DType::F32, DType::F16, DType::BF16] {
        let (max, normal, tiny) = format_edges(dtype);
        let columns = product_edges(max, normal, tiny, [f32::INFINITY, f32::NAN, 0.0]);
        let slice = columns.len();
        let input: Vec<f32> = columns.iter().map(|c| c[0]).collect();
        let updates: Vec<f32> = (1..3)
            .flat_map(|r| columns.iter().map(move |c| c[r]))
            .collect();
        let case = format!("Mul at the edges {dtype:?}");
        let tuples = [0i64, 0];
        let out = products_everywhere(&input, &tuples, &updates, slice, dtype, 2, &case);
        assert_eq!(out[0].to_bits(), 0f64.to_bits(), "{case}: +0");
        assert_eq!(out[1].to_bits(), (-0f64).to_bits(), "{case}: -0");
        assert_eq!(
            out[4], 0.0,
            "{case}: half the smallest subnormal, a tie, is 0"
        );
        assert_eq!(
            out[5],
            2.0 * f64::from(tiny),
            "{case}: 1.5 tiny, a tie, is 2 tiny"
        );
        assert_eq!(
            out[7],
            f64::from(max) / 2.0,
            "{case}: past the largest value and back is the exact product"
        );
    }
    // f64 `Mul` and `Add` (index order in the runtime's f64 arithmetic) where the device
    // computes it: the same columns, and sums that cancel, overflow or stay subnormal.
    let columns = product_edges(
        f64::MAX,
        f64::MIN_POSITIVE,
        f64::from_bits(1),
        [f64::INFINITY, f64::NAN, 0.0],
    );
    let slice = columns.len();
    let input: Vec<f64> = columns.iter().map(|c| c[0]).collect();
    let updates: Vec<f64> = (1..3)
        .flat_map(|r| columns.iter().map(move |c| c[r]))
        .collect();
    let mut devices = vec![flex()];
    devices.extend(gpu().filter(|device| holds(device, DType::F64, "edges F64")));
    for (reduction, combine) in [
        (Reduction::Mul, (|a, b| a * b) as fn(f64, f64) -> f64),
        (Reduction::Add, |a, b| a + b),
    ] {
        let expected: Vec<f64> = columns
            .iter()
            .map(|c| combine(combine(c[0], c[1]), c[2]))
            .collect();
        let run = |device: &Device| {
            scatter::<2, 2, 2>(
                device,
                TensorData::new(input.clone(), [1, slice]),
                TensorData::new(vec![0i32, 0], [2, 1]),
                TensorData::new(updates.clone(), [2, slice]),
                deterministic(reduction),
            )
            .unwrap()
        };
        for device in &devices {
            let case = format!("f64 {reduction:?} at the edges on {device:?}");
            let out = values(&repeated(device, 2, &run, &case));
            assert!(
                same_values(&out, &expected),
                "{case}: {out:?} against {expected:?}"
            );
            let signs = |values: &[f64]| -> Vec<bool> {
                values
                    .iter()
                    .map(|v| v.is_sign_negative() && !v.is_nan())
                    .collect()
            };
            assert_eq!(
                signs(&out),
                signs(&expected),
                "{case}: the signs, zeros included"
            );
        }
    }
}

/// Operands made on the device, as a model feeds them: random data, updates from a fused chain
/// with a comparison (large terms that cancel beside small ones, zeros where it says), index
/// tuples from integer arithmetic. Deterministic `Add` and `Assign` give the bits Flex gives
/// for the same operands read back.
#[test]
fn device_made_operands_give_flex_bits() {
    let Some(device) = gpu() else { return };
    let (targets, slice, rows) = (13usize, 8usize, 2000usize);
    let input = Tensor::<2>::random([targets, slice], Distribution::Uniform(-1.0, 1.0), &device);
    let noise = Tensor::<2>::random([rows, slice], Distribution::Normal(0.0, 1e3), &device);
    let updates = noise
        .clone()
        .mul_scalar(3.0)
        .add_scalar(0.25)
        .mask_fill(noise.lower_elem(-1e3), 0.0);
    let indices = Tensor::<1, Int>::arange(0..rows as i64, &device)
        .mul_scalar(5)
        .remainder_scalar(targets as i64)
        .reshape([rows, 1]);
    let host = flex();
    for reduction in [Reduction::Add, Reduction::Assign] {
        let options = deterministic(reduction);
        let ours = input
            .clone()
            .try_scatter_nd(indices.clone(), updates.clone(), options.clone())
            .unwrap()
            .into_data();
        let expected = Tensor::<2>::from_data(input.to_data(), &host)
            .try_scatter_nd(
                Tensor::<2, Int>::from_data(indices.to_data(), &host),
                Tensor::<2>::from_data(updates.to_data(), &host),
                options,
            )
            .unwrap()
            .into_data();
        assert_eq!(bits(&ours), bits(&expected), "{reduction:?} on {device:?}");
    }
}

/// Three `f32` factors whose exact product lies just below a midpoint, closer than the tree's
/// error bound: index order decides (it rounds the first product up, and so the last, where the
/// product rounded once is the value below).
const UNCERTAIN: [u32; 3] = [0x3F80_25D5, 0x3FA3_E702, 0x3FA1_1561];
const UNCERTAIN_IN_ORDER: u32 = 0x3FCE_80E8;

/// Long walks in index order: one element multiplied 70,000 times, and two targets of two
/// columns 40,000 times each (as many long walks as the resumed launches have room for), each
/// by [`UNCERTAIN`]'s factors then powers of two, so the tree cannot tell the rounding. More
/// than CPU drivers let one shader loop run, so the walks resume over launches there; the
/// value index order gives, one bit above the product rounded once, shows they ran.
#[test]
fn elements_multiplied_more_than_65535_times() {
    let [value, first, second] = UNCERTAIN.map(f32::from_bits);
    let factor = |r: usize| match r {
        0 => first,
        1 => second,
        _ if r.is_multiple_of(1000) => 2.0,
        _ if r % 1000 == 500 => 0.25,
        _ => 1.0,
    };
    let in_order = |rows: usize| {
        let scale: f64 = (2..rows).map(|r| f64::from(factor(r))).product();
        f64::from(f32::from_bits(UNCERTAIN_IN_ORDER)) * scale
    };
    let rows = 70_000usize;
    let updates: Vec<f32> = (0..rows).map(factor).collect();
    let result = same_everywhere(
        &[1.0, value, 1.0],
        &vec![1i64; rows],
        &updates,
        1,
        DType::F32,
        Reduction::Mul,
        2,
        "70,000 products",
    );
    assert_eq!(values(&result), vec![1.0, in_order(rows), 1.0]);

    let rows = 80_000usize;
    let tuples: Vec<i64> = (0..rows).map(|r| 2 * (r % 2) as i64).collect();
    // Column 0 of target 0 (even rows) and column 1 of target 2 (odd rows) take the factors.
    let updates: Vec<f32> = (0..rows)
        .flat_map(|r| match r % 2 {
            0 => [factor(r / 2), 1.0],
            _ => [1.0, factor(r / 2)],
        })
        .collect();
    let result = same_everywhere(
        &[value, 1.0, 1.0, 1.0, 1.0, value],
        &tuples,
        &updates,
        2,
        DType::F32,
        Reduction::Mul,
        2,
        "two long walks of two columns",
    );
    let low = in_order(rows / 2);
    assert_eq!(values(&result), vec![low, 1.0, 1.0, 1.0, 1.0, low]);
}

/// `f64` `Add` and `Mul` in index order with NaN made canonical, on every device that computes
/// `f64` (Flex at least), against a host loop.
#[test]
fn f64_combines_in_index_order() {
    let (targets, rows) = (5usize, 400usize);
    let mut stream = Stream(29);
    let tuples: Vec<i64> = (0..rows)
        .map(|_| stream.below(targets as u64) as i64)
        .collect();
    let mut updates: Vec<f32> = (0..rows).map(|_| stream.spread(20)).collect();
    // Opposite infinities on one target: a NaN sum (x86 makes it negative; the rule positive).
    let mut tuples = tuples;
    (tuples[7], tuples[9]) = (0, 0);
    updates[7] = f32::INFINITY;
    updates[9] = f32::NEG_INFINITY;
    let input = vec![1.0f32; targets];
    for reduction in [Reduction::Add, Reduction::Mul] {
        let result = same_everywhere(
            &input,
            &tuples,
            &updates,
            1,
            DType::F64,
            reduction,
            2,
            "f64",
        );
        let mut expected = vec![1.0f64; targets];
        for (&t, &u) in tuples.iter().zip(&updates) {
            let u = f64::from(u);
            let e = &mut expected[t as usize];
            *e = if reduction == Reduction::Add {
                *e + u
            } else {
                *e * u
            };
        }
        for (i, (&out, want)) in result
            .iter::<f64>()
            .collect::<Vec<_>>()
            .iter()
            .zip(expected)
            .enumerate()
        {
            if want.is_nan() {
                assert_eq!(
                    out.to_bits(),
                    0x7FF8_0000_0000_0000,
                    "{reduction:?} {i}: canonical NaN"
                );
            } else {
                assert_eq!(out.to_bits(), want.to_bits(), "{reduction:?} element {i}");
            }
        }
    }
    // Integer Mul is exact in any order and keeps its strategy.
    for device in devices() {
        let out = scatter::<1, 2, 1>(
            &device,
            TensorData::new(vec![1i32; 4], [4]),
            TensorData::new(vec![1i32, 1, 1], [3, 1]),
            TensorData::new(vec![2i32, 3, 5], [3]),
            deterministic(Reduction::Mul),
        )
        .unwrap();
        assert_eq!(to_i64(&out), vec![1, 30, 1, 1], "{device:?}");
    }
}

/// `Assign` with duplicates: the update latest in index order lands, on Float, Int and Bool
/// data, with negative and clamped indices, against a host loop.
#[test]
fn assign_takes_the_latest_duplicate() {
    let (targets, slice, rows) = (10usize, 3usize, 500usize);
    let mut stream = Stream(23);
    let tuples: Vec<i64> = (0..rows).map(|_| stream.below(30) as i64 - 15).collect();
    for clamp in [false, true] {
        let mut expected: Vec<f64> = (0..targets * slice).map(|i| -(i as f64)).collect();
        let updates: Vec<f64> = (0..rows * slice).map(|i| (i % 251) as f64).collect();
        for (row, &tuple) in tuples.iter().enumerate() {
            if let Some(t) = oracle_index(tuple, targets, clamp) {
                expected[t * slice..(t + 1) * slice]
                    .copy_from_slice(&updates[row * slice..(row + 1) * slice]);
            }
        }
        let mut options = deterministic(Reduction::Assign);
        options.out_of_bounds = if clamp {
            OutOfBounds::Clamp
        } else {
            OutOfBounds::Skip
        };
        for dtype in [
            DType::F32,
            DType::I32,
            DType::F16,
            DType::I64,
            DType::U8,
            DType::Bool(burn::tensor::BoolStore::Native),
        ] {
            let input: Vec<f64> = (0..targets * slice).map(|i| -(i as f64)).collect();
            let (input, updates, expected) = match dtype {
                DType::U8 | DType::Bool(_) => {
                    let m = |v: &Vec<f64>| {
                        v.iter()
                            .map(|x| (x.abs() as u64 % 2) as f64)
                            .collect::<Vec<_>>()
                    };
                    let e: Vec<f64> = expected
                        .iter()
                        .map(|x| (x.abs() as u64 % 2) as f64)
                        .collect();
                    (m(&input), m(&updates), e)
                }
                _ => (input, updates.clone(), expected.clone()),
            };
            for device in devices() {
                if !holds(&device, dtype, "Assign") {
                    continue;
                }
                let run = |device: &Device| {
                    scatter::<2, 2, 2>(
                        device,
                        data(&input, &[targets, slice], dtype),
                        TensorData::new(tuples.clone(), [rows, 1]).convert_dtype(DType::I64),
                        data(&updates, &[rows, slice], dtype),
                        options.clone(),
                    )
                    .unwrap()
                };
                let result = repeated(&device, 3, &run, "Assign");
                assert_eq!(
                    values(&result),
                    expected,
                    "Assign {dtype:?} clamp {clamp} on {device:?}: not the latest duplicate"
                );
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Random shapes, duplicate patterns and reductions: Flex's bits on every device and call.
    #[test]
    fn random_cases_match_flex(
        targets in 1usize..40,
        slice in 1usize..12,
        rows in 1usize..700,
        hot in 1usize..8,
        span in 0i32..12,
        seed in any::<u64>(),
        op in 0usize..3,
        dtype in prop::sample::select(vec![DType::F32, DType::F16, DType::BF16, DType::F64]),
    ) {
        let mut stream = Stream(seed | 1);
        let reduction = [Reduction::Add, Reduction::Assign, Reduction::Mul][op];
        let tuples: Vec<i64> = (0..rows)
            .map(|_| (stream.below(hot.min(targets) as u64) * (targets / hot.min(targets)) as u64) as i64)
            .collect();
        let round = |v: f32| fit(dtype, f64::from(v)) as f32;
        let span = if dtype == DType::F16 { span.min(3) } else { span };
        let input: Vec<f32> = (0..targets * slice).map(|_| round(stream.spread(span))).collect();
        let updates: Vec<f32> = (0..rows * slice).map(|_| round(stream.spread(span))).collect();
        let result =
            same_everywhere(&input, &tuples, &updates, slice, dtype, reduction, 2, "random case");
        if reduction == Reduction::Mul && dtype != DType::F64 {
            let expected = products_rounded_once(&input, &tuples, &updates, slice, dtype);
            prop_assert!(
                same_values(&values(&result), &expected),
                "Flex's Mul is not the exact product rounded once"
            );
        }
    }
}
