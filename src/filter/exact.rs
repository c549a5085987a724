//! The exact integer form of a plan, and the proof that it gives the contract's bytes.
//!
//! Most named kernels are small integers over a divisor (box, binomial, the default Gaussians,
//! sobel, laplacian, sharpen, emboss, custom kernels such as `1/16`). For them an output can be
//! computed exactly as `round_half_even((Σ n·s + O) / D)` with integer weights `n`, divisor
//! `D` and offset numerator `O`, in integer arithmetic (`__dp4a` on the GPU's 8-bit samples,
//! `dp2a` on its 16-bit ones). That is only allowed where it gives the bytes of the f32
//! contract ([`super`]'s module doc) for **every** reachable input; [`IntegerForm::of`]
//! returns a form only when one of two proofs holds for the plan and the sample depth:
//!
//! 1. **Exact**: `D` is a power of two, every f32 weight (and the offset) is exactly `n / D`,
//!    and every partial sum of the contract is an integer multiple of `1/D` of at most
//!    2^24/D in magnitude. Then every product and sum of the contract is exact in f32, its
//!    accumulator is the rational sum itself, and the contract's rounding is the exact one.
//! 2. **Bounded**: `D` is odd and the contract's worst-case error against the rational value
//!    (weights rounded to f32, plus half an ulp per fused multiply-add and per offset add over
//!    every prefix of the tap order; [`contract_error_bound`]) is below `1/(2D)`. For odd `D`
//!    a rational `T/D` is never a tie, and its distance to the nearest half-integer is at
//!    least `1/(2D)`, so the contract's value lies on the same side of every rounding
//!    boundary: same rounding, same saturation, same `|·|`.
//!
//! Everything else (irrational Gaussians, even non-dyadic divisors, whose ties the f32 sum
//! misses by a hair, 16-bit samples under kernels too large for the error bound) keeps the f32
//! path. A separable plan's integer form is the outer product of its factors' forms with the
//! error bound of the two-pass contract; since both are proven equal to the same rational
//! rounding, the integer form may be computed as a full kernel.

use super::{Decomposition, Plan};

/// Largest divisor searched for. Kernels like `1/4096` are still found; beyond, the f32 path.
pub const MAX_DIVISOR: u32 = 1 << 16;

/// Largest |integer weight| taken.
pub const MAX_NUMERATOR: i64 = 1 << 15;

/// Most taps of a kernel with an integer form.
pub const MAX_TAPS: usize = 1024;

/// Half an ulp relative to the value: the error bound of one round-to-nearest f32 operation.
const UNIT_ROUNDOFF: f64 = 1.0 / (1u64 << 24) as f64;

/// A plan as integers: `out = saturate(round_half_even(|Σ weights·s + offset| / divisor))`
/// (`|·|` only with `--abs`), weights full and row-major in the contract's tap order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IntegerForm {
    /// Kernel width in taps.
    pub width: usize,
    /// Kernel height in taps.
    pub height: usize,
    /// `width × height` integer weights, row-major (a separable plan's outer product).
    pub weights: Vec<i32>,
    /// The common divisor `D` (≥ 1).
    pub divisor: u32,
    /// The plan's offset times the divisor.
    pub offset: i32,
}

/// A plan's weights as integers over a divisor, found once when the plan is made (the search
/// is the expensive part of [`IntegerForm::of`]): `parts` is `[weights]` for the full path,
/// `[column, row]` for the separable one, each `(numerators, divisor)` with the smallest
/// divisor ≤ [`MAX_DIVISOR`] such that every f32 weight is within the f32 rounding of `n / d`.
#[derive(Clone, Debug, PartialEq)]
pub struct Ratios {
    parts: Vec<(Vec<i64>, u32)>,
}

impl Ratios {
    /// Searches the ratios of `weights` (the plan's taps, laid out as `decomposition` reads
    /// them); `None` when a part has no divisor up to [`MAX_DIVISOR`] with numerators up to
    /// [`MAX_NUMERATOR`], or the kernel has more than [`MAX_TAPS`] taps.
    pub fn of(decomposition: &Decomposition, weights: &[f32]) -> Option<Ratios> {
        let parts = match decomposition {
            Decomposition::Full if weights.len() <= MAX_TAPS => vec![rational(weights)?],
            Decomposition::Separable { col, row } if col.len() * row.len() <= MAX_TAPS => {
                vec![rational(col)?, rational(row)?]
            }
            _ => return None,
        };
        Some(Ratios { parts })
    }
}

fn rational(w: &[f32]) -> Option<(Vec<i64>, u32)> {
    (1..=MAX_DIVISOR).find_map(|d| {
        let n = w
            .iter()
            .map(|&v| near_integer(v as f64 * d as f64))
            .collect::<Option<_>>()?;
        Some((n, d))
    })
}

/// `x` as an integer when it is one up to f32 rounding (relative 1e-6) and ≤ MAX_NUMERATOR.
fn near_integer(x: f64) -> Option<i64> {
    let n = x.round();
    ((x - n).abs() <= 1e-6 * n.abs().max(1.0) && n.abs() <= MAX_NUMERATOR as f64)
        .then_some(n as i64)
}

/// Worst-case |contract − rational| of one fused multiply-add chain over `w` (f32 weights, in
/// tap order) applied to inputs in `[-amax, amax]` that themselves carry an error of at most
/// `in_err` against the exact inputs, where the exact weights are `n[i] / d`. Returns
/// (error bound, bound on |exact result|).
fn chain_bound(w: &[f32], n: &[i64], d: u32, amax: f64, in_err: f64) -> (f64, f64) {
    let mut err = 0.0;
    let mut prefix = 0.0; // bound on |accumulator| after each tap
    for (&wf, &ni) in w.iter().zip(n) {
        let wf = wf as f64;
        // w·a − q·a' = w·(a − a') + (w − q)·a'; |w − q| as |w·d − n| / d, whose product and
        // difference are exact in f64 (24 + 17 bits), so no cancellation error enters.
        err += wf.abs() * in_err + (wf * d as f64 - ni as f64).abs() / d as f64 * amax;
        prefix += wf.abs() * (amax + in_err);
        // Rounding of this fused multiply-add: half an ulp of its result, whose magnitude is
        // at most the exact prefix plus the error carried so far.
        err += UNIT_ROUNDOFF * (prefix + err);
    }
    let exact = n
        .iter()
        .map(|&ni| (ni as f64 / d as f64).abs())
        .sum::<f64>()
        * amax;
    (err, exact)
}

/// Bound on |contract value before rounding − rational value| for the plan on samples in
/// `0…max`, given its weights as `n / d` (full: `n` row-major; separable: column and row
/// numerators with their divisors), including the offset add. Carries a safety factor (1e-6
/// relative) for the f64 arithmetic computing it: every term is a sum of non-negative f64
/// products (≤ 2^-52 relative error each, over ≤ 2·[`MAX_TAPS`] + 2 steps).
pub fn contract_error_bound(plan: &Plan, max: u16) -> Option<f64> {
    Some(proof(plan, max)?.1)
}

/// The integer form and its error bound, before deciding which proof applies; the bool says
/// whether the exact (dyadic) proof holds.
fn proof(plan: &Plan, max: u16) -> Option<(IntegerForm, f64, bool)> {
    let k = &plan.kernel;
    let m = max as f64;
    let exact_weights = |w: &[f32], n: &[i64], d: u32| {
        n.iter()
            .zip(w)
            .all(|(&n, &w)| n as f64 / d as f64 == w as f64)
    };
    let (weights, divisor, err, exact_sum, exact) =
        match (&plan.decomposition, &plan.ratios()?.parts[..]) {
            (Decomposition::Full, [(n, d)]) => {
                let w = k.weights();
                let (err, sum) = chain_bound(w, n, *d, m, 0.0);
                (n.clone(), *d as u64, err, sum, exact_weights(w, n, *d))
            }
            (Decomposition::Separable { col, row }, [(nc, dc), (nr, dr)]) => {
                let (eh, hmax) = chain_bound(row, nr, *dr, m, 0.0);
                let (ev, vmax) = chain_bound(col, nc, *dc, hmax, eh);
                // Exact also needs every horizontal sum below 2^24 units of 1/dr.
                let exact = exact_weights(row, nr, *dr)
                    && exact_weights(col, nc, *dc)
                    && (nr.iter().map(|n| n.abs()).sum::<i64>() as f64) * m <= (1u64 << 24) as f64;
                let full = nc
                    .iter()
                    .flat_map(|&c| nr.iter().map(move |&r| c * r))
                    .collect();
                (
                    full,
                    *dr as u64 * *dc as u64,
                    ev,
                    vmax,
                    exact && dr.is_power_of_two(),
                )
            }
            _ => return None,
        };
    if divisor > MAX_DIVISOR as u64 || weights.iter().any(|n: &i64| n.abs() > MAX_NUMERATOR) {
        return None;
    }
    // The offset over the same divisor.
    let offset = k.offset() as f64;
    let o = near_integer(offset * divisor as f64).or_else(|| {
        let o = (offset * divisor as f64).round();
        (o.abs() < (1u64 << 40) as f64).then_some(o as i64)
    })?;
    let offset_err = (offset * divisor as f64 - o as f64).abs() / divisor as f64;
    // The offset add rounds once more; a safety factor covers the f64 arithmetic of the bound.
    let total =
        (err + offset_err + UNIT_ROUNDOFF * (exact_sum + err + offset.abs())) * (1.0 + 1e-6);
    // Integer sums (and 2·sum + divisor in the rounding) must stay far inside i32.
    let reach = weights.iter().map(|n| n.abs()).sum::<i64>() * max as i64 + o.abs();
    if reach >= 1 << 29 {
        return None;
    }
    let exact = exact && divisor.is_power_of_two() && offset_err == 0.0 && reach <= 1 << 24;
    let form = IntegerForm {
        width: k.width(),
        height: k.height(),
        weights: weights.iter().map(|&n| n as i32).collect(),
        divisor: divisor as u32,
        offset: o as i32,
    };
    Some((form, total, exact))
}

/// Largest sample values of the formats' depths (8, 10, 12 and 16 bits), the ones
/// [`same_bytes_up_to`] tries.
const DEPTH_MAXIMA: [u16; 4] = [65535, 4095, 1023, 255];

/// The largest sample value of 16, 12, 10 or 8-bit samples up to which plans `a` and `b` give
/// the same bytes for every input: both have integer forms there ([`IntegerForm::of`], each
/// proven equal to its own plan's contract) and the forms are one function. A proof holding
/// for samples up to `max` holds for every smaller maximum (its sums and error bounds only grow
/// with `max`).
pub fn same_bytes_up_to(a: &Plan, b: &Plan) -> Option<u16> {
    DEPTH_MAXIMA.into_iter().find(
        |&max| match (IntegerForm::of(a, max), IntegerForm::of(b, max)) {
            (Some(fa), Some(fb)) => fa.same_function(&fb),
            _ => false,
        },
    )
}

fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

impl IntegerForm {
    /// The plan's integer form for samples in `0…max`, when one of the module's two proofs
    /// shows it gives the contract's outputs for every input; else `None`.
    pub fn of(plan: &Plan, max: u16) -> Option<IntegerForm> {
        let (form, err, exact) = proof(plan, max)?;
        let bounded = form.divisor % 2 == 1 && err < 0.5 / form.divisor as f64;
        (exact || bounded).then_some(form)
    }

    /// The row factor of a separable plan as integers over a power of two, where the
    /// contract's row pass (its horizontal sums, before the column pass) is exact for samples in
    /// `0…max`: every f32 row weight is exactly `n / d` with `d` a power of two, and
    /// `Σ|n| · max < 2^22`. Every partial sum of the row pass's fused multiply-adds is then a
    /// multiple of `1/d` whose numerator stays below 2^22 in magnitude, so each step is exact
    /// and the contract's horizontal sum is the rational `Σ n·s / d` itself: computed in any
    /// order, in integers say, and scaled by `1/d` (a power of two, exact), it is the same f32
    /// value bit for bit, and the column pass that follows is the contract's own. No proof is
    /// needed of the column factor or the offset. (2^22 rather than the 2^24 that exactness
    /// alone needs: `fast_sep` turns the integer sum into a float by adding it to 1.5 · 2^23.)
    /// The form has height 1, the row's numerators as weights, `d` as divisor and no offset;
    /// `None` for a full plan or where the proof fails (irrational Gaussians, `box:3`'s thirds).
    pub fn row_pass(plan: &Plan, max: u16) -> Option<IntegerForm> {
        let (Decomposition::Separable { row, .. }, [_, (n, d)]) =
            (&plan.decomposition, &plan.ratios()?.parts[..])
        else {
            return None;
        };
        let exact = d.is_power_of_two()
            && n.iter()
                .zip(row)
                .all(|(&n, &w)| n as f64 / *d as f64 == w as f64);
        let reach = n.iter().map(|n| n.abs()).sum::<i64>() * max as i64;
        (exact && reach < 1 << 22).then(|| IntegerForm {
            width: row.len(),
            height: 1,
            weights: n.iter().map(|&n| n as i32).collect(),
            divisor: *d,
            offset: 0,
        })
    }

    /// Whether `other` computes the same outputs: the same shape, and weights and offset over
    /// its divisor equal to these over this one (`n·D' = n'·D`: the same rationals, so the
    /// same rounding of every sum).
    pub fn same_function(&self, other: &IntegerForm) -> bool {
        let (d, e) = (self.divisor as i64, other.divisor as i64);
        (self.width, self.height) == (other.width, other.height)
            && self.offset as i64 * e == other.offset as i64 * d
            && self
                .weights
                .iter()
                .zip(&other.weights)
                .all(|(&n, &m)| n as i64 * e == m as i64 * d)
    }

    /// Largest |integer weight|: the GPU's `__dp4a` path needs it ≤ 127.
    pub fn max_weight(&self) -> i32 {
        self.weights.iter().map(|n| n.abs()).max().unwrap_or(0)
    }

    /// The weights as an outer product of integer vectors `(column, row)` (the row's entries
    /// without a common factor, its first nonzero one positive), when they are one: a
    /// separable plan's integer form always is, a full plan's may be.
    pub fn factors(&self) -> Option<(Vec<i32>, Vec<i32>)> {
        let (w, h) = (self.width, self.height);
        let rows = || self.weights.chunks(w);
        let first = rows().find(|r| r.iter().any(|&n| n != 0))?;
        let kx = first.iter().position(|&n| n != 0)?;
        let g = first.iter().fold(0u32, |g, &n| gcd(g, n.unsigned_abs())) as i32;
        let g = if first[kx] < 0 { -g } else { g };
        let row: Vec<i32> = first.iter().map(|&n| n / g).collect();
        let col: Vec<i32> = rows().map(|r| r[kx] / row[kx]).collect();
        let outer =
            (0..h * w).all(|i| col[i / w] as i64 * row[i % w] as i64 == self.weights[i] as i64);
        outer.then_some((col, row))
    }

    /// Sum of |integer weights|: sums of samples in `0…max` stay within ±this·max.
    pub fn abs_sum(&self) -> i64 {
        self.weights.iter().map(|&n| n.unsigned_abs() as i64).sum()
    }

    /// The output rule on an exact integer sum `Σ n·s`: `(sum + offset) / divisor`, `|·|` with
    /// `abs`, rounded half to even, saturated to `0…max` (`fast_int` computes the same function
    /// with compile-time divisors).
    #[inline(always)]
    pub fn finish(&self, sum: i32, abs: bool, max: u16) -> u16 {
        let mut t = sum as i64 + self.offset as i64;
        if abs {
            t = t.abs();
        }
        if t <= 0 {
            return 0;
        }
        let d = self.divisor as i64;
        let u = 2 * t + d; // round(t/d) = floor((2t + d) / 2d), ties to the even neighbour
        let mut q = u / (2 * d);
        if u % (2 * d) == 0 && q % 2 == 1 {
            q -= 1;
        }
        q.min(max as i64) as u16
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::test_plan as plan;
    use crate::filter::{finish, test_rng, test_window_sum, Mode};

    /// The contract on one window of samples (row-major, kernel-sized), as cpu-seq computes it.
    fn contract(plan: &Plan, s: &[u16], max: u16) -> u16 {
        finish(
            test_window_sum(plan, s),
            plan.kernel.offset(),
            plan.abs,
            max,
        )
    }

    fn integer(form: &IntegerForm, plan: &Plan, s: &[u16], max: u16) -> u16 {
        let sum: i32 = form
            .weights
            .iter()
            .zip(s)
            .map(|(&n, &s)| n * s as i32)
            .sum();
        form.finish(sum, plan.abs, max)
    }

    #[test]
    fn named_integer_kernels_have_forms() {
        for (spec, mode, d) in [
            ("box:3", Mode::Auto, 9),
            ("box:5", Mode::Full, 25),
            ("box:7", Mode::Auto, 49),
            ("gaussian:3", Mode::Auto, 16),
            ("gaussian:5", Mode::Full, 256),
            ("gaussian:7", Mode::Auto, 4096),
            ("binomial:5", Mode::Auto, 256),
            ("sobel-x", Mode::Auto, 1),
            ("laplacian", Mode::Auto, 1),
            ("sharpen", Mode::Auto, 1),
            ("emboss", Mode::Auto, 1),
            (
                "custom:3x3:1/16,2/16,1/16,2/16,4/16,2/16,1/16,2/16,1/16",
                Mode::Full,
                16,
            ),
        ] {
            let p = plan(spec, mode);
            let f = IntegerForm::of(&p, 255).unwrap_or_else(|| panic!("{spec} has a form"));
            assert_eq!(f.divisor, d, "{spec}");
        }
        let g7 = IntegerForm::of(&plan("gaussian:7", Mode::Auto), 255).unwrap();
        assert_eq!(&g7.weights[..7], &[4, 14, 28, 36, 28, 14, 4]);
    }

    #[test]
    fn kernels_without_a_proof_have_no_form() {
        // Irrational weights; even divisors that are not powers of two, whose ties the f32
        // sum misses by a hair.
        for spec in ["gaussian:5:1.3", "log:5", "custom:1x2:0.1,0.4", "box:3x2"] {
            assert_eq!(
                IntegerForm::of(&plan(spec, Mode::Full), 255),
                None,
                "{spec}"
            );
        }
        // Why: under box:3x2 (every weight f32(1/6)) this window sums to 1269, and 1269/6 =
        // 211.5 rounds to 212, but the f32 sum lands just below the tie and gives 211.
        let p = plan("box:3x2", Mode::Full);
        let form = IntegerForm {
            width: 3,
            height: 2,
            weights: vec![1; 6],
            divisor: 6,
            offset: 0,
        };
        let s = [209, 253, 255, 227, 71, 254];
        assert_eq!(
            (contract(&p, &s, 255), integer(&form, &p, &s, 255)),
            (211, 212)
        );
        // 16-bit samples under a wide box: the f32 sum's error passes 1/(2D).
        assert!(IntegerForm::of(&plan("box:25", Mode::Auto), 65535).is_none());
        assert!(IntegerForm::of(&plan("box:25", Mode::Auto), 255).is_some());
    }

    /// The rounding rule against i128 rationals at every sum a 3×3 box or 5×5 Gaussian can
    /// reach on 8-bit samples (and the 16-bit range of a 3-tap box), with and without `abs`
    /// and an offset.
    #[test]
    fn finish_rounds_every_reachable_sum_exactly() {
        let reference = |t: i128, d: i128, max: u16| -> u16 {
            // nearest integer to t/d, ties to even, by comparing 2t with (2q ± 1)d
            let q = t.div_euclid(d);
            let r2 = 2 * (t - q * d);
            let q = if r2 > d || (r2 == d && q % 2 != 0) {
                q + 1
            } else {
                q
            };
            q.clamp(0, max as i128) as u16
        };
        for (d, offset, lo, hi, max) in [
            (9u32, 0i32, -9 * 255, 9 * 255, 255u16),
            (256, 128 * 256, -256 * 255, 256 * 255, 255),
            (16, -7, -16 * 255, 16 * 255, 255),
            (3, 0, 0, 3 * 65535, 65535),
            (1, 0, -8 * 255, 8 * 255, 255),
        ] {
            let form = IntegerForm {
                width: 1,
                height: 1,
                weights: vec![1],
                divisor: d,
                offset,
            };
            for abs in [false, true] {
                for sum in lo..=hi {
                    let mut t = sum as i128 + offset as i128;
                    if abs {
                        t = t.abs();
                    }
                    assert_eq!(form.finish(sum, abs, max), reference(t, d as i128, max));
                }
            }
        }
    }

    /// Every window a 3-tap kernel can see on 8-bit samples (16.7 M), through the contract and
    /// the integer form: the proofs' conclusion checked by brute force where it is feasible.
    #[test]
    fn three_tap_kernels_agree_on_every_window() {
        for spec in [
            "box:3x1",
            "gaussian:3x1",
            "custom:3x1:-1,2,-1",
            "custom:3x1:1/3,1/3,1/3",
        ] {
            for abs in [false, true] {
                let mut p = plan(spec, Mode::Full);
                p.abs = abs;
                let form = IntegerForm::of(&p, 255).expect(spec);
                for a in 0..=255u16 {
                    for b in 0..=255u16 {
                        for c in 0..=255u16 {
                            let s = [a, b, c];
                            assert_eq!(
                                contract(&p, &s, 255),
                                integer(&form, &p, &s, 255),
                                "{spec} {s:?}"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn factors_split_outer_products_only() {
        let form = |w: usize, weights: Vec<i32>| IntegerForm {
            width: w,
            height: weights.len() / w,
            weights,
            divisor: 1,
            offset: 0,
        };
        // Rows 0, 2·[0 1 -2] and 3·[0 1 -2]; negated, the column takes the sign.
        let f = form(3, vec![0, 0, 0, 0, 2, -4, 0, 3, -6]);
        assert_eq!(f.factors(), Some((vec![0, 2, 3], vec![0, 1, -2])));
        let f = form(3, vec![0, 0, 0, 0, -2, 4, 0, -3, 6]);
        assert_eq!(f.factors(), Some((vec![0, -2, -3], vec![0, 1, -2])));
        assert_eq!(form(2, vec![1, 2, 3, 4]).factors(), None);
        assert_eq!(form(2, vec![1, 2, 2, 5]).factors(), None);
        assert_eq!(form(2, vec![0, 0, 0, 0]).factors(), None);
        for k in [3, 5, 7, 9] {
            let p = plan(&format!("gaussian:{k}"), Mode::Separable);
            let f = IntegerForm::of(&p, 255).expect("the default Gaussians up to 9 have one");
            let (col, row) = f
                .factors()
                .expect("a separable plan's form is an outer product");
            assert_eq!(col.len() * row.len(), f.weights.len());
            assert!(row.iter().all(|n| n.abs() <= 127), "{k}: {row:?}");
        }
    }

    /// The exact row pass: for every row factor with a form, the contract's horizontal sum
    /// (its fused multiply-adds in tap order) equals the integer sum over the divisor, as f32
    /// bits, on every window of samples 0 and max, ramps and random windows; kernels without an
    /// exact row (irrational Gaussians, thirds, deep samples past the bound) have none.
    #[test]
    fn exact_row_passes_give_the_contracts_horizontal_sums() {
        let mut next = test_rng(0x2545_f491_4f6c_dd1d);
        let mut checked = 0;
        for spec in [
            "gaussian:3",
            "gaussian:5",
            "gaussian:7",
            "gaussian:9",
            "binomial:7",
            "box:4",
            "box:16",
            "sobel-x",
            "sobel-y",
            "custom:3x3:1,-2,1,2,-4,2,1,-2,1",
        ] {
            for max in [255u16, 1023, 65535] {
                let p = plan(spec, Mode::Separable);
                let Some(form) = IntegerForm::row_pass(&p, max) else {
                    assert!(max > 255, "{spec} has an exact row pass on 8-bit samples");
                    continue;
                };
                let Decomposition::Separable { row, .. } = &p.decomposition else {
                    unreachable!()
                };
                assert_eq!((form.height, form.width, form.offset), (1, row.len(), 0));
                assert!(form.divisor.is_power_of_two());
                let n = row.len();
                let mut windows: Vec<Vec<u16>> = (0..1u32 << n.min(12))
                    .map(|bits| {
                        (0..n)
                            .map(|i| (bits >> (i % 12) & 1) as u16 * max)
                            .collect()
                    })
                    .collect();
                windows.push((0..n).map(|i| (i * max as usize / n) as u16).collect());
                for _ in 0..20_000 {
                    windows.push((0..n).map(|_| (next() % (max as u64 + 1)) as u16).collect());
                }
                for s in &windows {
                    let contract = row
                        .iter()
                        .zip(s)
                        .fold(0f32, |a, (&w, &s)| w.mul_add(f32::from(s), a));
                    let sum: i64 = form
                        .weights
                        .iter()
                        .zip(s)
                        .map(|(&w, &s)| w as i64 * s as i64)
                        .sum();
                    assert!(sum.abs() < 1 << 22);
                    // The kernel's conversion: 1.5·2^23 + sum as a float, scaled and offset.
                    let biased = f32::from_bits((0x4B40_0000_i64 + sum) as u32);
                    let inv = 1.0 / form.divisor as f32;
                    let h = biased.mul_add(inv, -12_582_912.0 * inv);
                    assert_eq!(h.to_bits(), contract.to_bits(), "{spec} max {max} {s:?}");
                }
                checked += 1;
            }
        }
        assert!(checked >= 14, "only {checked} row factors had exact forms");
        for spec in [
            "gaussian:15",
            "gaussian:25",
            "box:3",
            "box:7",
            "gaussian:7:2.5",
        ] {
            let p = plan(spec, Mode::Separable);
            assert_eq!(IntegerForm::row_pass(&p, 255), None, "{spec}");
        }
        assert_eq!(
            IntegerForm::row_pass(&plan("gaussian:7", Mode::Full), 255),
            None
        );
    }

    /// Windows that maximize the contract's rounding error (every sample 0 or max, in every
    /// pattern of a 3×3 kernel; ramps; random) for every named kernel with a form, full and
    /// separable, 8-bit and 16-bit.
    #[test]
    fn integer_forms_agree_with_the_contract_on_extreme_and_random_windows() {
        let mut next = test_rng(0x9e37_79b9_7f4a_7c15);
        let mut checked = 0;
        for spec in [
            "box:3",
            "box:5",
            "box:7",
            "box:9",
            "box:3x5",
            "gaussian:3",
            "gaussian:5",
            "gaussian:7",
            "gaussian:9",
            "binomial:5",
            "sobel-x",
            "sobel-y",
            "laplacian",
            "sharpen",
            "emboss",
            "edge",
            "custom:3x3:1,2,1,2,4,2,1,2,1",
            "custom:2x2:1/4,1/4,1/4,1/4",
        ] {
            for mode in [Mode::Full, Mode::Auto] {
                for max in [255u16, 1023, 65535] {
                    let mut p = plan(spec, mode);
                    p.abs = spec == "sobel-x";
                    let Some(form) = IntegerForm::of(&p, max) else {
                        continue;
                    };
                    let n = form.width * form.height;
                    let mut windows: Vec<Vec<u16>> = Vec::new();
                    if n <= 9 {
                        for bits in 0..1u32 << n {
                            windows.push((0..n).map(|i| (bits >> i & 1) as u16 * max).collect());
                        }
                    }
                    windows.push((0..n).map(|i| (i * max as usize / n) as u16).collect());
                    for _ in 0..20_000 {
                        let r = next();
                        windows.push(
                            (0..n)
                                .map(|i| match r >> 62 {
                                    0 => (next() % (max as u64 + 1)) as u16,
                                    _ => [0, max, max / 2, max / 2 + 1]
                                        [(next() >> (i % 8)) as usize % 4],
                                })
                                .collect(),
                        );
                    }
                    for s in &windows {
                        assert_eq!(
                            contract(&p, s, max),
                            integer(&form, &p, s, max),
                            "{spec} {mode:?} max {max} {s:?}"
                        );
                    }
                    checked += 1;
                }
            }
        }
        assert!(checked >= 40, "only {checked} plans had forms");
    }
}
