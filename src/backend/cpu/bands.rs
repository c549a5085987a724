//! How `cpu-par` shares a plane's output rows among its threads. The plane starts as one band
//! per thread ([`first_bands`]), or, where the separable path splits its rows into column
//! strips, as bands of each strip, `threads / strips` a strip, their rows numbered from strip ×
//! height so that a span tells its strip ([`first_bands_in_strips`]); each band's runner claims
//! its rows a group at a time from a [`Span`]. A thread whose band is done takes a band no
//! thread has started (where a thread was slow to start); when none is left, it splits the
//! fullest band still running and takes its lower part ([`Span::split`]). Each band's rows cost
//! a start-up (the `kh − 1` source rows above them, converted or passed horizontally into a
//! fresh ring), so more fixed bands buy balance
//! with start-up rows; splitting only where a thread is idle pays that start-up only where it
//! buys balance. On the 16-core Xeon of the GPU host, a thread now and then ran its band at half
//! the others' speed (moved or sharing a core), and with fixed bands the whole plane waited for
//! it (docs/PERFORMANCE.md).
//!
//! `CONVFLOW_CPU_BANDS=static` keeps the earlier fixed bands ([`band_rows`]), without
//! splitting, to compare.

use std::marker::PhantomData;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Fewest rows a split hands to another thread.
const MIN_SPLIT: usize = 8;

/// Output rows `next .. end` of one band that no runner has claimed yet, packed in one atomic
/// word. The band's runner alone moves `next` down, a group at a time ([`Span::claim`]); an
/// idle thread may pull `end` up and take the rows below it ([`Span::split`]). Each row is thus
/// claimed exactly once.
pub(super) struct Span {
    rows: AtomicU64,
    /// Whether a runner took the span ([`Span::start`]).
    started: AtomicBool,
}

fn pack(rows: Range<usize>) -> u64 {
    debug_assert!(rows.end <= u32::MAX as usize);
    (rows.start as u64) << 32 | rows.end as u64
}

fn unpack(v: u64) -> Range<usize> {
    (v >> 32) as usize..(v & 0xffff_ffff) as usize
}

impl Span {
    pub fn new(rows: Range<usize>) -> Span {
        Span {
            rows: AtomicU64::new(pack(rows)),
            started: AtomicBool::new(false),
        }
    }

    /// Takes the span for the calling runner: whether no runner had taken it before.
    fn start(&self) -> bool {
        !self.started.swap(true, Ordering::AcqRel)
    }

    /// The rows not yet claimed.
    pub fn left(&self) -> Range<usize> {
        unpack(self.rows.load(Ordering::Acquire))
    }

    /// Claims up to `most` rows from the top of the span: the rows, or `None` when none are left.
    pub fn claim(&self, most: usize) -> Option<Range<usize>> {
        let mut cur = self.rows.load(Ordering::Acquire);
        loop {
            let Range { start, end } = unpack(cur);
            if start >= end {
                return None;
            }
            let next = start + most.min(end - start);
            let new = pack(next..end);
            match self
                .rows
                .compare_exchange_weak(cur, new, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return Some(start..next),
                Err(v) => cur = v,
            }
        }
    }

    /// Takes the lower rows of the span for another runner, whose fresh ring costs about `warm`
    /// rows' work: `(left − warm) / 2` rows, so that both runners end together, or `None` when
    /// that is under [`MIN_SPLIT`].
    pub fn split(&self, warm: usize) -> Option<Range<usize>> {
        let mut cur = self.rows.load(Ordering::Acquire);
        loop {
            let Range { start, end } = unpack(cur);
            let take = end.saturating_sub(start).saturating_sub(warm) / 2;
            if take < MIN_SPLIT {
                return None;
            }
            let mid = end - take;
            let new = pack(start..mid);
            match self
                .rows
                .compare_exchange_weak(cur, new, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return Some(mid..end),
                Err(v) => cur = v,
            }
        }
    }

    /// Gives an exhausted span new rows (split off another), for its runner to run next.
    fn refill(&self, rows: Range<usize>) {
        debug_assert!(self.left().is_empty());
        self.rows.store(pack(rows), Ordering::Release);
    }
}

/// Whether bands are split when threads run out of rows (the default), or fixed.
pub(super) fn splitting() -> bool {
    std::env::var("CONVFLOW_CPU_BANDS").map_or(true, |v| v != "static")
}

/// The bands a plane of `h` rows starts as, on `threads` threads under a kernel `kh` rows high:
/// one per thread (no fewer than 16 rows or the kernel's height each) when idle threads split
/// them, so that start-up rows are paid only where a split buys balance; else [`band_rows`]'
/// fixed bands. Against `band_rows`' bands, both split (H100 host's Xeon, best of 3, geomean per
/// thread count): 1.03 / 1.19 / 1.08× faster separable at 16 / 8 / 4 threads, 1.00 / 1.11 /
/// 1.07× full; 2 threads on the development VM 1.01× (docs/PERFORMANCE.md).
pub(super) fn first_bands(h: usize, threads: usize, kh: usize, split: bool) -> Vec<Span> {
    let band = match split {
        true => h.div_ceil(threads.max(1)).max(kh.max(16)).min(h),
        false => band_rows(h, threads, kh),
    };
    (0..h)
        .step_by(band.max(1))
        .map(|y| Span::new(y..(y + band).min(h)))
        .collect()
}

/// [`first_bands`] for each of `strips` column strips of the plane, `threads / strips` threads
/// a strip (rounded up): strip `s`'s rows are numbered from `s · h`, so that a span, and any
/// span split off it, tells its strip by its rows.
pub(super) fn first_bands_in_strips(
    h: usize,
    strips: usize,
    threads: usize,
    kh: usize,
    split: bool,
) -> Vec<Span> {
    let per_strip = threads.div_ceil(strips.max(1));
    (0..strips)
        .flat_map(|s| {
            first_bands(h, per_strip, kh, split)
                .into_iter()
                .map(move |b| {
                    let r = b.left();
                    Span::new(s * h + r.start..s * h + r.end)
                })
        })
        .collect()
}

/// Runs every band of `spans`, each through `run` (which claims its rows from the span), on the
/// current rayon pool. With `split`, a thread whose band is done first takes a band no thread
/// has started, whole; when none is left, it splits the fullest band running, as long as one is
/// worth splitting, and runs the rows it took in a spare span of its own. `warm`: what a fresh
/// ring costs, in rows.
pub(super) fn run_all<S>(spans: &[Span], split: bool, warm: usize, run: S)
where
    S: Fn(&Span) + Sync,
{
    use rayon::prelude::*;
    // One spare span per worker thread, for the rows it splits off.
    let spares: Vec<Span> = (0..rayon::current_num_threads())
        .map(|_| Span::new(0..0))
        .collect();
    let all = || spans.iter().chain(&spares);
    spans.par_iter().for_each(|first| {
        let mut next = first.start().then_some(first);
        while split || next.is_some() {
            if let Some(span) = next {
                run(span);
            }
            if !split {
                return;
            }
            next = spans.iter().find(|s| s.start());
            if next.is_none() {
                let spare = &spares[rayon::current_thread_index().unwrap_or(0) % spares.len()];
                let fullest = all().max_by_key(|s| s.left().len());
                let rows = fullest.and_then(|s| s.split(warm));
                next = rows.map(|rows| {
                    spare.refill(rows);
                    spare
                });
                if next.is_none() {
                    return;
                }
            }
        }
    });
}

/// Rows per fixed band of a plane `h` rows high filtered by `threads` threads under a kernel
/// `kh` rows high (`CONVFLOW_CPU_BANDS=static`). Every band starts its ring afresh with `kh − 1`
/// rows (source rows converted, or horizontal passes) that the band above computes too, so
/// four bands per thread (for balance) only while those rows stay within a quarter of a band,
/// else two, else one. Against four always, alternated call by call (H100 host's Xeon,
/// separable gaussian, median of 40): 16 threads 1080p gray 15 / 25 1.20 / 1.43× faster, RGB
/// 15 / 25 1.29 / 1.36×, 4K 25 1.17×; 8 threads 1080p RGB 25 1.26×; every other point
/// 0.98–1.09× (docs/PERFORMANCE.md).
pub(super) fn band_rows(h: usize, threads: usize, kh: usize) -> usize {
    let per_thread = h.div_ceil(threads.max(1));
    let n = [4, 2, 1]
        .into_iter()
        .find(|&n| 4 * (kh - 1) <= per_thread / n)
        .unwrap_or(1);
    per_thread.div_ceil(n).max(kh.max(16)).min(h)
}

/// A plane's output rows, handed out a group at a time to the thread that claimed the group's
/// rows from a [`Span`]: whole rows ([`Rows::group`]) where the plane has one strip, so the
/// rows of different claims never overlap; else each row's bytes of the claim's strip
/// ([`Rows::part`]), which no other strip's claims cover. Either way the slices never alias.
pub(super) struct Rows<'a> {
    ptr: *mut u8,
    len: usize,
    stride: usize,
    _plane: PhantomData<&'a mut [u8]>,
}

// SAFETY: `Rows` only hands out slices of rows (or of a strip's bytes of rows) claimed through a
// `Span` (see `Rows::group` and `Rows::part`), which no two threads claim alike.
unsafe impl Send for Rows<'_> {}
unsafe impl Sync for Rows<'_> {}

impl<'a> Rows<'a> {
    /// The rows of `data`, `stride` bytes apart.
    pub fn new(data: &'a mut [u8], stride: usize) -> Rows<'a> {
        Rows {
            ptr: data.as_mut_ptr(),
            len: data.len(),
            stride,
            _plane: PhantomData,
        }
    }

    /// Bytes `bytes` of output row `y`.
    ///
    /// # Safety
    /// The caller claimed row `y` of the column strip these bytes are from its band's
    /// [`Span`], and holds no other slice of them.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn part(&self, y: usize, bytes: Range<usize>) -> &mut [u8] {
        let a = y * self.stride + bytes.start;
        let b = y * self.stride + bytes.end;
        assert!(a <= b && b <= self.len && bytes.end <= self.stride);
        // SAFETY: within the plane (asserted); the caller's claim makes the bytes its own.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(a), b - a) }
    }

    /// Output rows `rows`, from the first's start to the last's end (or the plane's).
    ///
    /// # Safety
    /// The caller claimed `rows` from its band's [`Span`], and holds no other slice of them.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn group(&self, rows: Range<usize>) -> &mut [u8] {
        let a = rows.start * self.stride;
        let b = (rows.end * self.stride).min(self.len);
        assert!(a <= b && b <= self.len);
        // SAFETY: within the plane (asserted); the caller's claim makes the rows exclusively its.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(a), b - a) }
    }
}

#[cfg(test)]
mod tests {
    use super::{band_rows, first_bands, run_all, Span};
    use std::collections::HashSet;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn claims_and_splits_hand_out_every_row_once() {
        let s = Span::new(0..100);
        assert_eq!(s.claim(8), Some(0..8));
        // 92 left, 4 rows' start-up: the lower 44 go.
        assert_eq!(s.split(4), Some(56..100));
        assert_eq!(s.left(), 8..56);
        assert_eq!(s.claim(100), Some(8..56));
        assert_eq!(s.claim(8), None);
        // Too few rows to be worth a split.
        let s = Span::new(0..30);
        assert_eq!(s.split(15), None);
        assert_eq!(s.split(14), Some(22..30));
    }

    #[test]
    fn every_row_runs_exactly_once_however_threads_interleave() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(6)
            .build()
            .unwrap();
        for (h, kh, split) in [
            (1080, 25, true),
            (1081, 3, true),
            (37, 7, true),
            (500, 5, false),
        ] {
            // Which runner ran each row, by the address of the span it claimed the row from.
            let ran: Vec<AtomicUsize> = (0..h).map(|_| AtomicUsize::new(0)).collect();
            let spans = first_bands(h, 6, kh, split);
            let slow = spans[0].left();
            pool.install(|| {
                run_all(&spans, split, kh / 2, |span| {
                    while let Some(rows) = span.claim(8) {
                        // The first band's first runner is slow: others should split its rows.
                        if slow.contains(&rows.start) && std::ptr::eq(span, &spans[0]) {
                            std::thread::sleep(std::time::Duration::from_millis(2));
                        }
                        for y in rows {
                            let prev = ran[y].swap(span as *const Span as usize, Ordering::Relaxed);
                            assert_eq!(prev, 0, "row {y} ran twice");
                        }
                    }
                })
            });
            assert!(ran.iter().all(|c| c.load(Ordering::Relaxed) != 0), "h {h}");
            let runners: HashSet<usize> = slow.map(|y| ran[y].load(Ordering::Relaxed)).collect();
            assert_eq!(runners.len() > 1, split && h > 100, "h {h}: {runners:?}");
        }
    }

    #[test]
    fn fixed_bands_shrink_in_number_as_their_start_up_rows_grow() {
        // 1080 rows on 16 threads: 68 rows each. 3 taps: four bands each (2 start-up rows of
        // 17); 7 taps: two (6 of 34); 15 and 25 taps: one.
        assert_eq!(band_rows(1080, 16, 3), 17);
        assert_eq!(band_rows(1080, 16, 7), 34);
        assert_eq!(band_rows(1080, 16, 15), 68);
        assert_eq!(band_rows(1080, 16, 25), 68);
        // One or two threads on 1080 rows keep four bands each up to 25 taps.
        assert_eq!(band_rows(1080, 1, 25), 270);
        assert_eq!(band_rows(1080, 2, 25), 135);
        // Never under 16 rows or the kernel's height, never over the plane.
        assert_eq!(band_rows(40, 16, 3), 16);
        assert_eq!(band_rows(720, 16, 63), 63);
        assert_eq!(band_rows(10, 1, 3), 10);
        assert_eq!(band_rows(1, 4, 1), 1);
        // Split bands start one per thread.
        assert_eq!(first_bands(1080, 16, 3, true).len(), 16);
        assert_eq!(first_bands(1080, 16, 3, false).len(), 64);
        assert_eq!(first_bands(40, 16, 3, true).len(), 3);
    }
}
