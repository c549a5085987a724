//! Border modes: the one rule that says which source pixel a tap outside the image reads.
//!
//! Every backend (the CPU loops here and the CUDA kernels in `kernels/common.cuh`) maps
//! out-of-range coordinates through exactly this rule, so results agree at the edges too.
//! Coordinates may lie arbitrarily far outside the image: kernels larger than the image are
//! legal, so the rules are defined for every integer, not just for a halo of k/2 pixels.

use std::fmt;

/// How a tap that falls outside the image is resolved (named as OpenCV users know them).
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    Default,
    strum::EnumString,
    strum::IntoStaticStr,
    strum::VariantNames,
    strum::VariantArray,
    strum::EnumMessage,
)]
pub enum Border {
    /// Replicate the edge pixel: `aaa|abcd|ddd` (OpenCV `BORDER_REPLICATE`).
    #[default]
    #[strum(to_string = "clamp", serialize = "replicate")]
    Clamp,
    /// Constant zero outside: `000|abcd|000` (OpenCV `BORDER_CONSTANT`, value 0).
    #[strum(to_string = "zero", serialize = "constant")]
    Zero,
    /// Mirror without repeating the edge: `dcb|abcd|cba` (OpenCV `BORDER_REFLECT_101`).
    #[strum(
        to_string = "reflect",
        serialize = "reflect101",
        serialize = "reflect-101"
    )]
    Reflect,
    /// Periodic: `bcd|abcd|abc` (OpenCV `BORDER_WRAP`).
    #[strum(to_string = "wrap")]
    Wrap,
}

impl Border {
    /// Every border mode.
    pub const ALL: &'static [Border] = <Self as strum::VariantArray>::VARIANTS;

    /// The name users write (`clamp`, `zero`, `reflect`, `wrap`).
    pub fn name(self) -> &'static str {
        self.into()
    }

    /// Maps coordinate `i` on an axis of length `n` (n ≥ 1) to a coordinate inside `0..n`,
    /// or `None` when the tap reads the constant zero.
    ///
    /// Reflect-101 is periodic with period 2(n−1) (for n = 1 every index maps to 0); wrap is
    /// periodic with period n; clamp saturates.
    #[inline]
    pub fn map(self, i: isize, n: usize) -> Option<usize> {
        debug_assert!(n >= 1);
        let n = n as isize;
        if (0..n).contains(&i) {
            return Some(i as usize);
        }
        match self {
            Border::Clamp => Some(i.clamp(0, n - 1) as usize),
            Border::Zero => None,
            Border::Wrap => Some(i.rem_euclid(n) as usize),
            Border::Reflect => {
                if n == 1 {
                    return Some(0);
                }
                let period = 2 * (n - 1);
                let m = i.rem_euclid(period);
                Some(if m < n { m } else { period - m } as usize)
            }
        }
    }
}

impl fmt::Display for Border {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(b: Border, n: usize, from: isize, to: isize) -> Vec<Option<usize>> {
        (from..to).map(|i| b.map(i, n)).collect()
    }

    #[test]
    fn reflect_is_101_and_periodic() {
        // dcb|abcd|cba
        let got: Vec<_> = row(Border::Reflect, 4, -3, 7)
            .into_iter()
            .map(Option::unwrap)
            .collect();
        assert_eq!(got, vec![3, 2, 1, 0, 1, 2, 3, 2, 1, 0]);
        assert_eq!(Border::Reflect.map(-1000, 1), Some(0));
        assert_eq!(Border::Reflect.map(7, 2), Some(1));
        assert_eq!(Border::Reflect.map(-7, 2), Some(1));
    }

    #[test]
    fn clamp_wrap_zero() {
        assert_eq!(
            row(Border::Clamp, 3, -2, 5),
            [0, 0, 0, 1, 2, 2, 2].map(Some).to_vec()
        );
        assert_eq!(
            row(Border::Wrap, 3, -4, 4),
            [2, 0, 1, 2, 0, 1, 2, 0].map(Some).to_vec()
        );
        assert_eq!(
            row(Border::Zero, 2, -1, 3),
            vec![None, Some(0), Some(1), None]
        );
    }

    #[test]
    fn names_round_trip() {
        for b in Border::ALL {
            assert_eq!(b.name().parse::<Border>().unwrap(), *b);
        }
        assert!("mirror".parse::<Border>().is_err());
    }
}
