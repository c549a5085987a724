//! [`Plan::saturation_free`]: where it holds, no window of samples, searched exhaustively for
//! three taps and at the extremes and at random for larger kernels, gives a sum outside the
//! range rounding alone keeps in `0…max`; and it holds for the blurs and fails for the kernels
//! whose sums leave the range.

use super::*;

/// The contract's `v` on one window (row-major, kernel-sized): the sum, offset and `|v|`, before
/// rounding and saturation, as cpu-seq computes it.
fn value(plan: &Plan, s: &[u16]) -> f32 {
    let v = test_window_sum(plan, s) + plan.kernel.offset();
    if plan.abs {
        v.abs()
    } else {
        v
    }
}

/// Rounding alone gives the contract's output: `v` rounds into `0…max`.
fn rounds_in_range(v: f32, max: u16) -> bool {
    let r = v.round_ties_even();
    (0.0..=f32::from(max)).contains(&r)
}

fn plan_of(spec: &str, mode: Mode, abs: bool, offset: f64) -> Plan {
    let mut f = Filter::new(spec::parse_spec(spec).unwrap());
    f.mode = mode;
    f.abs = abs;
    f.kernel = f.kernel.clone().with_offset(offset).unwrap();
    f.plan().unwrap()
}

#[test]
fn three_tap_plans_that_are_saturation_free_round_every_window_in_range() {
    let mut free = 0;
    for spec in [
        "box:3x1",
        "gaussian:3x1",
        "custom:3x1:1/3,1/3,1/3",
        "custom:3x1:0.5,0.5,0.0001",
        "custom:3x1:-1,2,-1",
        "custom:3x1:-0.25,0.5,0.25",
    ] {
        for abs in [false, true] {
            for offset in [0.0, 127.5, 255.0] {
                let p = plan_of(spec, Mode::Full, abs, offset);
                if !p.saturation_free(255, 255) {
                    continue;
                }
                free += 1;
                for a in 0..=255u16 {
                    for b in 0..=255u16 {
                        for c in 0..=255u16 {
                            let v = value(&p, &[a, b, c]);
                            assert!(rounds_in_range(v, 255), "{spec} {abs} {offset}: {v}");
                        }
                    }
                }
            }
        }
    }
    // Offset 0, with and without --abs: box, gaussian, 1/3 and 0.5/0.5/0.0001 (sums up to
    // 255.03); -0.25/0.5/0.25 only under --abs (|v| ≤ 191.25). Not: any of them with an offset
    // of 127.5 or 255, the second difference (|v| up to 510).
    assert_eq!(free, 9, "saturation-free plans");
}

#[test]
fn saturation_free_plans_stay_in_range_at_the_extremes_and_at_random() {
    let mut next = test_rng(0x9E37_79B9_7F4A_7C15);
    let depths = [
        (255u16, 255u16),
        (1023, 1023),
        (65535, 1023),
        (65535, 65535),
    ];
    let mut free = 0;
    for spec in [
        "gaussian:3",
        "gaussian:5",
        "gaussian:7",
        "gaussian:9",
        "gaussian:15",
        "gaussian:25",
        "box:4",
        "box:7",
        "binomial:5",
        "sharpen",
        "laplacian",
        "emboss",
        "sobel-x",
    ] {
        for mode in [Mode::Full, Mode::Separable] {
            let mut f = Filter::new(spec::parse_spec(spec).unwrap());
            f.mode = mode;
            if f.plan().is_err() {
                continue;
            }
            for (abs, offset) in [(false, 0.0), (true, 0.0), (false, 128.0)] {
                let p = plan_of(spec, mode, abs, offset);
                let n = p.kernel.width() * p.kernel.height();
                for &(largest, max) in &depths {
                    if !p.saturation_free(largest, max) {
                        continue;
                    }
                    free += 1;
                    for t in 0..2000 {
                        // Extreme windows (every sample 0 or the largest), then random ones.
                        let s: Vec<u16> = (0..n)
                            .map(|_| match (t < 1000, next() % 2) {
                                (true, 0) => 0,
                                (true, _) => largest,
                                _ => (next() % (u64::from(largest) + 1)) as u16,
                            })
                            .collect();
                        let v = value(&p, &s);
                        assert!(
                            rounds_in_range(v, max),
                            "{spec} {mode:?} {abs} {offset}: {v}"
                        );
                    }
                }
            }
        }
    }
    assert!(free > 20, "only {free} cases were saturation-free");
}

#[test]
fn blurs_are_saturation_free_and_kernels_that_leave_the_range_are_not() {
    for spec in [
        "gaussian:3",
        "gaussian:9",
        "gaussian:25",
        "box:5",
        "binomial:7",
    ] {
        for mode in [Mode::Full, Mode::Separable] {
            let p = plan_of(spec, mode, false, 0.0);
            assert!(p.saturation_free(255, 255), "{spec} {mode:?}");
            assert!(p.saturation_free(65535, 65535), "{spec} {mode:?} 16-bit");
            // Low-aligned 10-bit words may hold 16 bits: a blur of them can leave 0…1023.
            assert!(
                !p.saturation_free(65535, 1023),
                "{spec} {mode:?} low-aligned 10-bit"
            );
        }
    }
    for (spec, abs, offset) in [
        ("sharpen", false, 0.0),
        ("laplacian", true, 0.0),
        ("sobel-x", false, 128.0),
        ("emboss", false, 0.0),
        ("gaussian:5", false, 1.0),
    ] {
        let p = plan_of(spec, Mode::Full, abs, offset);
        assert!(
            !p.saturation_free(255, 255),
            "{spec} abs {abs} offset {offset}"
        );
    }
}
