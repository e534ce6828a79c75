//! The order-free float sum of deterministic ScatterND `Add` on the host, bit for bit what the
//! kernels compute: each term an integer on a fixed-point grid that holds every value of its
//! format (bit 0 is worth the format's smallest subnormal, or less), the integers added exactly,
//! the total rounded once to nearest even. Exact for every input, whatever the terms' spread.
//! [`round_product`] rounds the exact product of two values the same way (deterministic `Mul`).

/// A float format a sum rounds to: its field widths, and the `f32` exponent field of its
/// grid's bit 0 (a term of field `e` is its significand times `2^(max(e, origin) - origin)`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Format {
    pub(crate) exponent_bits: u32,
    pub(crate) mantissa_bits: u32,
    origin: u32,
}

pub(crate) const F16: Format = Format {
    exponent_bits: 5,
    mantissa_bits: 10,
    // 2^-24, f16's smallest subnormal, as an f32 has exponent field 103.
    origin: 103,
};
pub(crate) const BF16: Format = Format {
    exponent_bits: 8,
    mantissa_bits: 7,
    origin: 1,
};
pub(crate) const F32: Format = Format {
    exponent_bits: 8,
    mantissa_bits: 23,
    origin: 1,
};

/// Limbs of [`Wide`]: the largest `f32` term on the grid is below 2^277, and a sum of 2^32 of
/// them, with its sign, fits 320 bits.
const LIMBS: usize = 5;

/// A 320-bit integer, least significant limb first: two's complement for a sum, or a
/// magnitude.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Wide([u64; LIMBS]);

impl Wide {
    fn from_u128(value: u128) -> Self {
        let mut wide = Self::default();
        wide.0[0] = value as u64;
        wide.0[1] = (value >> 64) as u64;
        wide
    }

    /// `significand << shift` (`shift` below 256).
    fn shifted(significand: u64, shift: u32) -> Self {
        let mut wide = Self::default();
        let (limb, offset) = ((shift / 64) as usize, shift % 64);
        wide.0[limb] = significand << offset;
        if offset > 0 {
            wide.0[limb + 1] = significand >> (64 - offset);
        }
        wide
    }

    fn add(&mut self, other: &Self) {
        let mut carry = false;
        for (limb, &addend) in self.0.iter_mut().zip(&other.0) {
            let (sum, first) = limb.overflowing_add(addend);
            let (sum, second) = sum.overflowing_add(u64::from(carry));
            *limb = sum;
            carry = first || second;
        }
    }

    fn negated(&self) -> Self {
        let mut negated = Self(self.0.map(|limb| !limb));
        negated.add(&Self::from_u128(1));
        negated
    }

    fn is_negative(&self) -> bool {
        self.0[LIMBS - 1] >> 63 != 0
    }

    /// The highest set bit, or `None` for zero.
    fn top(&self) -> Option<u32> {
        (0..LIMBS)
            .rev()
            .find(|&i| self.0[i] != 0)
            .map(|i| 64 * i as u32 + 63 - self.0[i].leading_zeros())
    }

    /// The 64 bits from bit `start` up (zeros past the top).
    fn bits_from(&self, start: u32) -> u64 {
        let (limb, offset) = ((start / 64) as usize, start % 64);
        let low = self.0.get(limb).copied().unwrap_or(0);
        let high = self.0.get(limb + 1).copied().unwrap_or(0);
        if offset == 0 {
            low
        } else {
            (low >> offset) | (high << (64 - offset))
        }
    }

    /// Whether any bit below bit `end` is set.
    fn any_below(&self, end: u32) -> bool {
        self.0.iter().enumerate().any(|(i, &limb)| {
            let base = 64 * i as u32;
            match end.saturating_sub(base) {
                0 => false,
                bits if bits >= 64 => limb != 0,
                bits => limb & ((1u64 << bits) - 1) != 0,
            }
        })
    }
}

/// A sum of terms given as `f32` bits: the special values seen and the exact total of the
/// finite ones on the format's grid.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Sum {
    total: Wide,
    nan: bool,
    positive_infinity: bool,
    negative_infinity: bool,
    not_negative_zero: bool,
}

impl Sum {
    /// Adds a term given as `f32` bits (a value of `format`).
    pub(crate) fn add(&mut self, term: u32, format: Format) {
        let exponent = (term >> 23) & 0xFF;
        self.not_negative_zero |= term != 0x8000_0000;
        if exponent == 0xFF {
            if term & 0x7F_FFFF != 0 {
                self.nan = true;
            } else if term >> 31 != 0 {
                self.negative_infinity = true;
            } else {
                self.positive_infinity = true;
            }
            return;
        }
        let significand = u64::from(term & 0x7F_FFFF | if exponent != 0 { 0x80_0000 } else { 0 });
        let magnitude = Wide::shifted(significand, exponent.max(format.origin) - format.origin);
        let term = if term >> 31 != 0 {
            magnitude.negated()
        } else {
            magnitude
        };
        self.total.add(&term);
    }

    /// The sum rounded to nearest even in `format`, as its bits: a quiet NaN when a term is
    /// NaN or both infinities occur, an infinity when one does, otherwise the exact total
    /// rounded (overflow gives an infinity; a zero total is `-0.0` only when every term is).
    pub(crate) fn round(&self, format: Format) -> u32 {
        let Format {
            exponent_bits,
            mantissa_bits,
            origin,
        } = format;
        let infinity = ((1u32 << exponent_bits) - 1) << mantissa_bits;
        let sign_bit = 1u32 << (exponent_bits + mantissa_bits);
        if self.nan || (self.positive_infinity && self.negative_infinity) {
            return infinity | (1 << (mantissa_bits - 1));
        }
        if self.positive_infinity {
            return infinity;
        }
        if self.negative_infinity {
            return sign_bit | infinity;
        }
        let (sign, magnitude) = if self.total.is_negative() {
            (sign_bit, self.total.negated())
        } else {
            (0, self.total)
        };
        if magnitude.top().is_none() {
            return if self.not_negative_zero { 0 } else { sign_bit };
        }
        // Grid bit 0 is worth 2^(origin - 150).
        sign | round_magnitude(&magnitude, origin as i32 - 150, format)
    }
}

/// The non-zero magnitude `total * 2^grid` rounded to nearest even in `format`, as that
/// format's bits without the sign: an infinity on overflow, a subnormal or zero below the
/// normal range.
fn round_magnitude(total: &Wide, grid: i32, format: Format) -> u32 {
    let Format {
        exponent_bits,
        mantissa_bits,
        ..
    } = format;
    let infinity = ((1u32 << exponent_bits) - 1) << mantissa_bits;
    let top = total.top().expect("a non-zero magnitude") as i32;
    let min_exponent = 2 - (1i32 << (exponent_bits - 1));
    // The exponent of grid bit 0 minus the exponent of the format's smallest subnormal.
    let offset = grid - min_exponent + mantissa_bits as i32;
    // The grid bit of the result's lowest mantissa bit: below the top by the mantissa's width,
    // or the smallest subnormal's, however far above the top that is.
    let low = (top - mantissa_bits as i32).max(-offset);
    let (significand, round_up) = if low <= 0 {
        ((total.bits_from(0) << -low) as u32, 0)
    } else {
        let low = low as u32;
        let significand = total.bits_from(low) as u32 & ((1u32 << (mantissa_bits + 1)) - 1);
        let half = total.bits_from(low - 1) & 1 == 1;
        let sticky = total.any_below(low - 1);
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
/// kernels'. A NaN operand, or an infinity times a zero, gives the format's positive quiet NaN;
/// a product below half the smallest subnormal gives a zero of its sign.
pub(crate) fn round_product(a: u32, b: u32, format: Format) -> u32 {
    let Format {
        exponent_bits,
        mantissa_bits,
        ..
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
    let total = Wide::from_u128(u128::from(a_significand) * u128::from(b_significand));
    // Each operand is its significand times 2^(max(exponent, 1) - 150).
    let grid = a_exponent.max(1) as i32 + b_exponent.max(1) as i32 - 300;
    sign | round_magnitude(&total, grid, format)
}
