//! Seeded inputs: the same values on every browser and every run, with the edge values each
//! operator has rules for (NaN, signed zeros, infinities, ties, out-of-range indices).

use burn::tensor::{DType, Device, Float, Int, Tensor, TensorData, f16};

/// SplitMix64: a seeded stream of 64-bit values.
pub struct Rng(u64);

impl Rng {
    /// The stream of `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 bits.
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A value in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next()) * u128::from(n)) >> 64) as u64
    }

    /// A value in `0.0..1.0`.
    pub fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f32) -> bool {
        self.unit() < p
    }
}

/// `len` floats, mostly spread over `-8..8` in steps of 1/16 (so that ties occur), with about
/// one in 16 drawn from the edge values: NaN, both zeros, both infinities, the extremes.
pub fn edgy_floats(rng: &mut Rng, len: usize) -> Vec<f32> {
    const EDGES: [f32; 7] = [
        f32::NAN,
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::MAX,
        f32::MIN_POSITIVE,
    ];
    (0..len)
        .map(|_| {
            if rng.below(16) == 0 {
                EDGES[rng.below(EDGES.len() as u64) as usize]
            } else {
                (rng.below(256) as f32 - 128.0) / 16.0
            }
        })
        .collect()
}

/// `len` floats in `-1..1` without edge values, where exact comparisons of arithmetic need them.
pub fn plain_floats(rng: &mut Rng, len: usize) -> Vec<f32> {
    (0..len).map(|_| rng.unit() * 2.0 - 1.0).collect()
}

/// `len` values that are zero except with probability `density`.
pub fn sparse_floats(rng: &mut Rng, len: usize, density: f32) -> Vec<f32> {
    (0..len)
        .map(|_| {
            if rng.chance(density) {
                1.0 + rng.below(4) as f32
            } else {
                0.0
            }
        })
        .collect()
}

/// A Float tensor of `values` in `dtype` (`F32`, or `F16` rounded on the host) on `device`.
pub fn float_tensor<const D: usize>(
    values: &[f32],
    shape: [usize; D],
    dtype: DType,
    device: &Device,
) -> Tensor<D, Float> {
    let data = match dtype {
        DType::F16 => TensorData::new(values.iter().map(|&v| f16::from_f32(v)).collect(), shape),
        _ => TensorData::new(values.to_vec(), shape),
    };
    Tensor::from_data(data, (device, dtype))
}

/// An Int tensor of `values` in `dtype` on `device`.
pub fn int_tensor<const D: usize>(
    values: &[i64],
    shape: [usize; D],
    dtype: DType,
    device: &Device,
) -> Tensor<D, Int> {
    let data = TensorData::new(values.to_vec(), shape).convert_dtype(dtype);
    Tensor::from_data(data, (device, dtype))
}

/// `len` random 32-bit patterns as `i32` values in `i64`.
pub fn random_i32(rng: &mut Rng, len: usize) -> Vec<i64> {
    (0..len)
        .map(|_| i64::from(rng.next() as u32 as i32))
        .collect()
}
