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
//! How many column strips the separable f32 path takes, and where they lie, is decided here too
//! ([`strips`]), and so is how a band walks its rows through its ring ([`Walk`], the one
//! schedule of the three band runners: `par.rs`'s f32 path, `int.rs` and `int_sep.rs`).
//!
//! `CONVFLOW_CPU_BANDS=static` keeps the earlier fixed bands ([`band_rows`]), without
//! splitting, to compare.

use std::marker::PhantomData;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::par::{Job, GROUP, LANES};

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

/// The column strips (pixel ranges, left to right) in which the separable f32 path runs a
/// plane `w` pixels of `ch` channels wide and `h` rows high on `threads` threads under a kernel
/// `kh` rows high: as many as the larger of two needs asks for, rounded up to a divisor or a
/// multiple of `threads` (so that the threads share strips and bands alike) where strips of 8
/// blocks at least allow one, else as many as they allow ([`split_columns`]).
/// - A band's ring of `kh + GROUP − 1` rows of horizontal sums stays within [`RING_BYTES`] a
///   strip: 4K RGB `gaussian:25`'s whole rows take 1.47 MB, more than Zen 4's L2.
/// - Each band pays `kh − 1` start-up rows of horizontal passes that the band above computes
///   too; strips give each band about `strips / threads` of the plane's rows, aiming at
///   [`BAND_TAPS`] times the start-up rows (1080 rows on 16 threads: 68-row bands of whole
///   rows, 24 start-up rows at 25 taps). A strip pays `kw − 1` columns of conversion instead.
///
/// `asked` (`CONVFLOW_CPU_STRIPS=N`) sets how many (1: whole rows), to compare.
pub(super) fn strips(
    w: usize,
    ch: usize,
    h: usize,
    threads: usize,
    kh: usize,
    asked: Option<usize>,
) -> Vec<Range<usize>> {
    let ring = (kh + GROUP - 1) * w * ch * std::mem::size_of::<f32>();
    let for_ring = ring.div_ceil(RING_BYTES);
    let for_bands = (threads * BAND_TAPS * (kh - 1)).div_ceil(h.max(1));
    let (want, most, t) = (for_ring.max(for_bands), most_strips(w, ch), threads.max(1));
    let even = |s: &usize| match *s <= t {
        true => t.is_multiple_of(*s),
        false => s.is_multiple_of(t),
    };
    let n = (want..=most).find(even).unwrap_or(want);
    split_columns(w, ch, asked.unwrap_or(n))
}

/// Bytes of a band's ring [`strips`] aims under: half of Zen 4's L2, a quarter of the Xeon's.
/// With 256 KiB, 4K gray `gaussian:25` (491 KB) ran in two strips, 0.82× as fast as whole rows
/// on 2 Xeon threads.
const RING_BYTES: usize = 512 << 10;

/// A band's rows [`strips`] aims at, in start-up rows (`kh − 1`).
const BAND_TAPS: usize = 8;

/// Pixels between boundaries of whole 64-sample blocks in rows of `ch` channels (LANES /
/// gcd(LANES, ch)).
fn strip_unit(ch: usize) -> usize {
    LANES
        / (1..=ch)
            .rev()
            .find(|&d| LANES.is_multiple_of(d) && ch.is_multiple_of(d))
            .unwrap_or(1)
}

/// The most strips of 8 blocks at least a row of `w` pixels of `ch` channels takes (1 at
/// least).
fn most_strips(w: usize, ch: usize) -> usize {
    let unit = strip_unit(ch);
    (w / unit / (8 * LANES).div_ceil(unit * ch)).max(1)
}

/// `w` pixels of `ch` channels in `n` strips of whole 64-sample blocks (the last takes the
/// rest), no more than [`most_strips`].
pub(super) fn split_columns(w: usize, ch: usize, n: usize) -> Vec<Range<usize>> {
    let (unit, n) = (strip_unit(ch), n.clamp(1, most_strips(w, ch)));
    let units = w / unit;
    let mut cols = Vec::with_capacity(n);
    let mut x = 0;
    for i in 1..=n {
        let end = if i == n { w } else { units * i / n * unit };
        cols.push(x..end);
        x = end;
    }
    cols
}

/// `slots[r·kh + ky]`: the ring offset of the row that tap row `ky` of output row `top + ay + r`
/// reads (source row `top + r + ky`), in a ring of `slots_n` rows of `ring_row` elements.
#[inline(always)]
fn slot_offsets(slots: &mut [usize], top: isize, kh: usize, slots_n: usize, ring_row: usize) {
    for (i, slot) in slots.iter_mut().enumerate() {
        let sy = top + (i / kh) as isize + (i % kh) as isize;
        *slot = sy.rem_euclid(slots_n as isize) as usize * ring_row;
    }
}

/// How a band walks its output rows, claimed from its [`Span`] a group at a time, through a ring
/// of `kh + group − 1` rows of `ring_row` elements: the `kh − 1` source rows above the first
/// output row fill the ring first ([`Walk::warmup`]), then each group of up to `group` output rows
/// adds the source rows it is the first to read and finds its taps in the ring
/// ([`Walk::next_group`]). The walk ends where the span does, which another thread may pull up
/// ([`Span::split`]). One schedule for the three band runners (the f32 path here, `int` and
/// `int_sep`); what a ring row holds is theirs.
pub(super) struct Walk<'s> {
    kh: usize,
    ay: usize,
    group: usize,
    ring_row: usize,
    span: &'s Span,
    /// What the span's rows are numbered from.
    base: usize,
    /// The next output row: the span's first (less `base`), as only this walk claims from its
    /// top.
    y: usize,
    /// The current group's taps ([`Walk::next_group`]).
    slots: Vec<usize>,
}

/// One group of a [`Walk`]: output rows `y .. y + g`, which add source rows `new_rows` (some
/// maybe outside the image) to the ring.
pub(super) struct Group {
    pub y: usize,
    pub g: usize,
    pub new_rows: std::ops::Range<isize>,
}

impl<'s> Walk<'s> {
    pub fn new(job: &Job<'_>, span: &'s Span, group: usize, ring_row: usize) -> Walk<'s> {
        Walk::of(job.kh, job.ay, span, group, ring_row, 0)
    }

    /// A walk of a span whose rows are numbered from `base` (a column strip's, see
    /// [`first_bands_in_strips`]); its groups give the plane's rows.
    pub fn in_strip(
        job: &Job<'_>,
        span: &'s Span,
        group: usize,
        ring_row: usize,
        base: usize,
    ) -> Walk<'s> {
        Walk::of(job.kh, job.ay, span, group, ring_row, base)
    }

    /// A walk for a kernel `kh` rows high anchored at row `ay`.
    fn of(
        kh: usize,
        ay: usize,
        span: &'s Span,
        group: usize,
        ring_row: usize,
        base: usize,
    ) -> Walk<'s> {
        Walk {
            kh,
            ay,
            group,
            ring_row,
            span,
            base,
            y: span.left().start - base,
            slots: vec![0; group * kh],
        }
    }

    /// Rows in the ring.
    pub fn slots_n(&self) -> usize {
        self.kh + self.group - 1
    }

    /// The source rows (some maybe outside the image) the ring holds before the first group:
    /// none if the span has no rows left.
    pub fn warmup(&self) -> std::ops::Range<isize> {
        if self.span.left().is_empty() {
            return 0..0;
        }
        let first = self.y as isize - self.ay as isize;
        first..first + self.kh as isize - 1
    }

    /// Claims the next group, and gives its taps: `slots[r·kh + ky]` is the ring offset of the
    /// row that tap row `ky` of output row `y + r` reads (see [`slot_offsets`]).
    pub fn next_group(&mut self) -> Option<(Group, &[usize])> {
        let rows = self.span.claim(self.group)?;
        debug_assert_eq!(rows.start, self.y + self.base);
        let g = rows.len();
        let top = self.y as isize - self.ay as isize;
        let first_new = top + self.kh as isize - 1;
        let group = Group {
            y: self.y,
            g,
            new_rows: first_new..first_new + g as isize,
        };
        self.y += g;
        let (kh, slots_n, ring_row) = (self.kh, self.slots_n(), self.ring_row);
        let slots = &mut self.slots[..g * kh];
        slot_offsets(slots, top, kh, slots_n, ring_row);
        Some((group, slots))
    }
}

#[cfg(test)]
mod tests {
    use super::{band_rows, first_bands, run_all, split_columns, strips, Group, Span, Walk};
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

    #[test]
    fn strips_start_on_whole_blocks_and_cover_the_row() {
        // One channel: 64-pixel units; three: 64 pixels (192 samples); four: 16 pixels.
        assert_eq!(split_columns(1920, 1, 2), [0..960, 960..1920]);
        assert_eq!(split_columns(1921, 1, 3), [0..640, 640..1280, 1280..1921]);
        assert_eq!(split_columns(1000, 3, 2), [0..448, 448..1000]);
        assert_eq!(split_columns(300, 4, 2), [0..144, 144..300]);
        // Eight blocks a strip at least, one strip at most for narrower rows.
        assert_eq!(split_columns(1000, 1, 4), [0..1000; 1]);
        assert_eq!(split_columns(1024, 1, 4), [0..512, 512..1024]);
        assert_eq!(split_columns(10, 2, 2), [0..10; 1]);
        // The rule. 1080p gray at 25 taps: a 246 KB ring, 16 threads' bands of 68 rows want
        // 2.8 strips for bands of 8 × 24 rows: three, as many as 1920 pixels take (four would
        // share 16 threads evenly; three give 6 bands a strip, of 180 rows); 8 threads' two.
        // 1080p RGB: four on 16 threads.
        assert_eq!(strips(1920, 1, 1080, 16, 25, None).len(), 3);
        assert_eq!(strips(1920, 3, 1080, 16, 25, None).len(), 4);
        assert_eq!(strips(1920, 1, 1080, 12, 25, None).len(), 3);
        assert_eq!(strips(1920, 1, 1080, 8, 25, None).len(), 2);
        assert_eq!(strips(1920, 1, 1080, 2, 25, None).len(), 1);
        // 4K RGB: 25 taps' 1.47 MB ring takes three strips (four on two threads), 7 taps'
        // 645 KB two; 4K gray at 25 taps one (491 KB) on up to 8 threads, at 7 taps (215 KB)
        // on up to 32.
        assert_eq!(strips(3840, 3, 2160, 1, 25, None).len(), 3);
        assert_eq!(strips(3840, 3, 2160, 2, 25, None).len(), 4);
        assert_eq!(strips(3840, 3, 2160, 1, 7, None).len(), 2);
        assert_eq!(strips(3840, 1, 2160, 8, 25, None).len(), 1);
        assert_eq!(strips(3840, 1, 2160, 32, 7, None).len(), 1);
        // No even count within reach: as many as wanted, as far as the row allows.
        assert_eq!(strips(1100, 1, 1080, 16, 25, None).len(), 2);
        assert_eq!(strips(1920, 1, 1080, 16, 25, Some(1)).len(), 1);
    }

    #[test]
    fn a_walk_fills_each_source_row_once_and_finds_every_tap() {
        // Output rows 5..12 of a 3-row kernel anchored at row 1, groups of 3, a ring of 5 rows
        // of 10 elements.
        let span = Span::new(5..12);
        let mut walk = Walk::of(3, 1, &span, 3, 10, 0);
        assert_eq!(walk.slots_n(), 5);
        assert_eq!(walk.warmup(), 4..6);
        let mut filled: Vec<isize> = walk.warmup().collect();
        let mut groups = Vec::new();
        while let Some((Group { y, g, new_rows }, slots)) = walk.next_group() {
            filled.extend(new_rows.clone());
            // Output row y + r reads source rows y + r − 1 + ky, each from its ring slot.
            for r in 0..g {
                for ky in 0..3 {
                    let sy = (y + r) as isize - 1 + ky as isize;
                    assert!(filled.contains(&sy), "row {sy} read before it was filled");
                    assert_eq!(slots[r * 3 + ky], sy.rem_euclid(5) as usize * 10);
                }
            }
            groups.push((y, g, new_rows));
        }
        assert_eq!(groups, [(5, 3, 6..9), (8, 3, 9..12), (11, 1, 12..13)]);
        assert_eq!(filled, (4..13).collect::<Vec<_>>());
    }
}
