//! The order-free float sum of deterministic ScatterND `Add` on the host, bit for bit what the
//! kernels compute: each term on a 128-bit fixed-point grid set by the largest term (72 bits
//! below its lowest bit; smaller bits are dropped towards zero), the integers added, the total
//! rounded once to nearest even. Exact whenever the terms lie within 72 binades of the largest.
//! [`round_product`] rounds the exact product of two values the same way (deterministic `Mul`).

/// Bits of the grid below a term of the largest exponent.
const GUARD_BITS: i32 = 72;

/// A float format a sum rounds to: its exponent and mantissa field widths.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Format {
    pub exponent_bits: u32,
    pub mantissa_bits: u32,
}

pub(crate) const F16: Format = Format {
    exponent_bits: 5,
    mantissa_bits: 10,
};
pub(crate) const BF16: Format = Format {
    exponent_bits: 8,
    mantissa_bits: 7,
};
pub(crate) const F32: Format = Format {
    exponent_bits: 8,
    mantissa_bits: 23,
};

/// The special terms seen and the largest exponent field of a finite one: the first walk.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Scale {
    exponent: u32,
    nan: bool,
    positive_infinity: bool,
    negative_infinity: bool,
    not_negative_zero: bool,
}

impl Scale {
    /// Takes in a term given as `f32` bits.
    pub(crate) fn observe(&mut self, term: u32) {
        let exponent = (term >> 23) & 0xFF;
        if exponent == 0xFF {
            if term & 0x7F_FFFF != 0 {
                self.nan = true;
            } else if term >> 31 != 0 {
                self.negative_infinity = true;
            } else {
                self.positive_infinity = true;
            }
        } else {
            self.exponent = self.exponent.max(exponent.max(1));
        }
        self.not_negative_zero |= term != 0x8000_0000;
    }
}

/// The terms added on the grid of a [`Scale`]: the second walk.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Sum {
    positive: u128,
    negative: u128,
}

impl Sum {
    /// Adds a term given as `f32` bits on the grid of `scale`.
    pub(crate) fn add(&mut self, scale: &Scale, term: u32) {
        let exponent = (term >> 23) & 0xFF;
        if exponent == 0xFF {
            return;
        }
        let significand = u128::from(term & 0x7F_FFFF | if exponent != 0 { 0x80_0000 } else { 0 });
        let shift = exponent.max(1) as i32 + GUARD_BITS - scale.exponent as i32;
        let magnitude = if shift >= 0 {
            significand << shift
        } else if shift > -24 {
            significand >> -shift
        } else {
            0
        };
        if term >> 31 != 0 {
            self.negative = self.negative.wrapping_add(magnitude);
        } else {
            self.positive = self.positive.wrapping_add(magnitude);
        }
    }

    /// The sum rounded to nearest even in `format`, as its bits.
    pub(crate) fn round(&self, scale: &Scale, format: Format) -> u32 {
        let Format {
            exponent_bits,
            mantissa_bits,
        } = format;
        let infinity = ((1u32 << exponent_bits) - 1) << mantissa_bits;
        let sign_bit = 1u32 << (exponent_bits + mantissa_bits);
        if scale.nan || (scale.positive_infinity && scale.negative_infinity) {
            return infinity | (1 << (mantissa_bits - 1));
        }
        if scale.positive_infinity {
            return infinity;
        }
        if scale.negative_infinity {
            return sign_bit | infinity;
        }
        let (sign, total) = if self.positive >= self.negative {
            (0, self.positive - self.negative)
        } else {
            (sign_bit, self.negative - self.positive)
        };
        if total == 0 {
            return if scale.not_negative_zero { 0 } else { sign_bit };
        }
        // Grid bit 0 is worth 2^(scale - 150 - GUARD_BITS).
        sign | round_magnitude(total, scale.exponent as i32 - 150 - GUARD_BITS, format)
    }
}

/// The non-zero magnitude `total * 2^grid` rounded to nearest even in `format`, as that
/// format's bits without the sign: an infinity on overflow, a subnormal or zero below the
/// normal range.
fn round_magnitude(total: u128, grid: i32, format: Format) -> u32 {
    let Format {
        exponent_bits,
        mantissa_bits,
    } = format;
    let infinity = ((1u32 << exponent_bits) - 1) << mantissa_bits;
    let top = 127 - total.leading_zeros() as i32;
    let min_exponent = 2 - (1i32 << (exponent_bits - 1));
    // The exponent of grid bit 0 minus the exponent of the format's smallest subnormal.
    let offset = grid - min_exponent + mantissa_bits as i32;
    let low = (top - mantissa_bits as i32).max(-offset);
    let (significand, round_up) = if low <= 0 {
        ((total << -low) as u32, 0)
    } else {
        let significand = (total >> low) as u32;
        let half = (total >> (low - 1)) & 1 == 1;
        let sticky = total & ((1u128 << (low - 1)) - 1) != 0;
        (
            significand,
            u32::from(half && (sticky || significand & 1 == 1)),
        )
    };
    let field = (low + offset) as u32;
    ((field << mantissa_bits) + significand + round_up).min(infinity)
}

/// The product of the `f32` bits `a` and `b` (values of `format`, widened exactly) rounded once
/// to nearest even in `format`, as its bits: deterministic `Mul`'s step, bit for bit the
/// kernels'. A NaN operand, or an infinity times a zero, gives the format's positive quiet NaN.
pub(crate) fn round_product(a: u32, b: u32, format: Format) -> u32 {
    let Format {
        exponent_bits,
        mantissa_bits,
    } = format;
    let infinity = ((1u32 << exponent_bits) - 1) << mantissa_bits;
    let sign = ((a ^ b) >> 31) << (exponent_bits + mantissa_bits);
    let parts = |x: u32| {
        let exponent = (x >> 23) & 0xFF;
        let fraction = x & 0x7F_FFFF;
        let significand = fraction | if exponent != 0 { 0x80_0000 } else { 0 };
        (exponent, fraction, significand)
    };
    let ((a_exponent, a_fraction, a_significand), (b_exponent, b_fraction, b_significand)) =
        (parts(a), parts(b));
    let (a_zero, b_zero) = (a << 1 == 0, b << 1 == 0);
    let (a_special, b_special) = (a_exponent == 0xFF, b_exponent == 0xFF);
    if (a_special && a_fraction != 0)
        || (b_special && b_fraction != 0)
        || (a_special && b_zero)
        || (b_special && a_zero)
    {
        return infinity | (1 << (mantissa_bits - 1));
    }
    if a_special || b_special {
        return sign | infinity;
    }
    if a_zero || b_zero {
        return sign;
    }
    let total = u128::from(a_significand) * u128::from(b_significand);
    // Each operand is its significand times 2^(max(exponent, 1) - 150).
    let grid = a_exponent.max(1) as i32 + b_exponent.max(1) as i32 - 300;
    sign | round_magnitude(total, grid, format)
}
