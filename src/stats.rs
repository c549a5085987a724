//! Order statistics shared by the benchmarks and the backends' own measurements (link
//! bandwidth, device ceilings): one median everywhere — the middle value of an odd count, the
//! mean of the two middle values of an even one (so two runs never report their maximum as
//! the median).

use std::time::Duration;

/// The median of sorted values: the middle one, or the mean of the two middle ones; NaN for
/// none.
pub fn median_of_sorted(v: &[f64]) -> f64 {
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// The median of values in any order (see [`median_of_sorted`]).
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    median_of_sorted(&v)
}

/// The median of sorted durations (mean of the two middle ones for an even count).
pub fn median_duration(v: &[Duration]) -> Duration {
    let secs: Vec<f64> = v.iter().map(Duration::as_secs_f64).collect();
    Duration::from_secs_f64(median_of_sorted(&secs).max(0.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_of_even_counts_are_the_mean_of_the_middle_two() {
        assert_eq!(median_of_sorted(&[1.0, 2.0, 3.0]), 2.0);
        assert_eq!(median_of_sorted(&[1.0, 2.0, 3.0, 10.0]), 2.5);
        assert_eq!(median_of_sorted(&[4.0, 6.0]), 5.0);
        assert_eq!(median_of_sorted(&[7.0]), 7.0);
        assert!(median_of_sorted(&[]).is_nan());
        assert_eq!(median(vec![10.0, 1.0, 3.0, 2.0]), 2.5);
        let d = [Duration::from_micros(10), Duration::from_micros(20)];
        assert_eq!(median_duration(&d), Duration::from_micros(15));
    }
}
