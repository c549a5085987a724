//! `--segment I/N`: one of N equal parts of an input, so that N independent processes (a
//! Slurm array, a Kubernetes Indexed Job, GNU parallel) filter a long input between them and
//! `convflow concat` joins their outputs. Parts are numbered from 0 (Kubernetes'
//! `JOB_COMPLETION_INDEX`, `--array=0-3`). Inputs of frames (directories, y4m files,
//! synthetic) are cut by frame index; video files by time, at cut points every process
//! computes alike from the stream's start and duration, so every frame belongs to exactly one
//! part whichever process decodes it.

/// Part `index` of `count` (0 ≤ index < count).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    /// Which part, from 0.
    pub index: usize,
    /// How many parts.
    pub count: usize,
}

impl Segment {
    /// Parses `I/N` with 0 ≤ I < N (N at most 1 000 000).
    pub fn parse(s: &str) -> Result<Self, String> {
        let bad = |why: &str| {
            format!(
                "bad segment '{}': {why} (write I/N for part I of N, counted from 0: 0/4 … 3/4)",
                crate::quote::quote(s)
            )
        };
        let (i, n) = s.trim().split_once('/').ok_or_else(|| bad("no '/'"))?;
        let parse = |v: &str| {
            v.trim()
                .parse::<usize>()
                .map_err(|_| bad("not whole numbers"))
        };
        let (index, count) = (parse(i)?, parse(n)?);
        if count == 0 || count > 1_000_000 {
            return Err(bad("N must be 1 to 1000000"));
        }
        if index >= count {
            return Err(bad("I must be below N"));
        }
        Ok(Segment { index, count })
    }

    /// The frames `start..end` of this part of `len` frames (empty when `len < count` leaves
    /// this part nothing).
    pub fn range(&self, len: usize) -> std::ops::Range<usize> {
        let at = |k: usize| ((len as u128 * k as u128) / self.count as u128) as usize;
        at(self.index)..at(self.index + 1)
    }

    /// The time this part starts at (`None`: the beginning, before any frame) and the time the
    /// next one starts at (`None`: the end), for a stream starting at `start` lasting `duration`
    /// (both in the stream's time base).
    pub fn times(&self, start: i64, duration: i64) -> (Option<i64>, Option<i64>) {
        let at = |k: usize| {
            let t = i128::from(start) + i128::from(duration) * k as i128 / self.count as i128;
            t.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
        };
        let lo = (self.index > 0).then(|| at(self.index));
        let hi = (self.index + 1 < self.count).then(|| at(self.index + 1));
        (lo, hi)
    }
}

impl std::fmt::Display for Segment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

#[cfg(test)]
mod tests {
    use super::Segment;

    #[test]
    fn parts_tile_the_input_for_every_count() {
        for len in [0, 1, 5, 7, 50, 101] {
            for count in 1..=9 {
                let mut next = 0;
                for index in 0..count {
                    let r = Segment { index, count }.range(len);
                    assert_eq!(r.start, next, "{len} {index}/{count}");
                    next = r.end;
                }
                assert_eq!(next, len);
                let mut at = None;
                for index in 0..count {
                    let (lo, hi) = Segment { index, count }.times(-3, 1001);
                    assert_eq!(lo, at, "{index}/{count}");
                    at = hi;
                }
                assert_eq!(at, None);
            }
        }
    }

    #[test]
    fn bad_segments_say_how_to_write_one() {
        assert_eq!(Segment::parse("2/4"), Ok(Segment { index: 2, count: 4 }));
        assert_eq!(Segment::parse(" 0/1 "), Ok(Segment { index: 0, count: 1 }));
        for bad in [
            "4/4",
            "1",
            "-1/4",
            "a/b",
            "1/0",
            "/",
            "1/4/5",
            "",
            "0/2000000",
        ] {
            let e = Segment::parse(bad).unwrap_err();
            assert!(e.contains("I/N"), "{bad}: {e}");
        }
    }
}
