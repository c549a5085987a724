//! Shared test helpers: a seeded random generator (fresh seed per run, printed on failure),
//! random frames with padded strides, and the independent brute-force f64 oracle.
#![allow(dead_code)]

use convflow::filter::{Decomposition, Plan};
use convflow::frame::{Frame, PixelFormat};
use convflow::Border;

/// `CONVFLOW_TEST_SHARD=i/n`: a long randomized body runs only its cases c (counted from 1)
/// with c % n == i, so that n processes (on several GPUs) share it; (0, 1), every case, when
/// unset. A shard draws only its own cases' inputs, so a failure reproduces with the same
/// `CONVFLOW_TEST_SEED` and shard, not the seed alone. A malformed value panics rather than
/// silently running everything or nothing.
pub fn shard() -> (usize, usize) {
    match std::env::var("CONVFLOW_TEST_SHARD") {
        Err(_) => (0, 1),
        Ok(v) => {
            let parsed = v
                .split_once('/')
                .and_then(|(i, n)| Some((i.parse().ok()?, n.parse().ok()?)));
            match parsed {
                Some((i, n)) if i < n => (i, n),
                _ => panic!("CONVFLOW_TEST_SHARD={v:?}: expected i/n with i < n"),
            }
        }
    }
}

/// xorshift64*; seeded from CONVFLOW_TEST_SEED or the clock, so every run draws fresh inputs.
pub struct Rng(pub u64);

impl Rng {
    pub fn fresh(salt: u64) -> (Rng, u64) {
        let seed = std::env::var("CONVFLOW_TEST_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_nanos() as u64
            })
            ^ salt.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        (Rng(seed | 1), seed)
    }
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform in lo..=hi.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next() % (hi - lo + 1) as u64) as usize
    }
    pub fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    pub fn pick<T: Copy>(&mut self, v: &[T]) -> T {
        v[self.range(0, v.len() - 1)]
    }
    pub fn bytes(&mut self, buf: &mut [u8]) {
        for b in buf {
            *b = self.next() as u8;
        }
    }
}

/// A random frame whose planes have random stride padding (padding bytes random too). Samples
/// are random valid values of the format's depth (a 10-bit sample is at most 1023; a P010
/// sample has its low 6 bits zero); one frame in four is biased to the extremes (0 and max).
pub fn random_frame(rng: &mut Rng, format: PixelFormat, w: usize, h: usize) -> Frame {
    let depth = format.depth();
    let strides: Vec<usize> = (0..format.plane_count())
        .map(|p| {
            let (pw, _) = format.plane_size(p, w, h);
            (pw * format.plane_channels(p) + rng.pick(&[0, 0, 1, 3, 16, 61])) * depth.bytes()
        })
        .collect();
    let len: usize = (0..format.plane_count())
        .map(|p| strides[p] * format.plane_size(p, w, h).1)
        .sum();
    let mut data = vec![0u8; len];
    rng.bytes(&mut data);
    let mut f = Frame::from_parts(format, w, h, &strides, data).unwrap();
    let extremes = rng.range(0, 3) == 0;
    for p in 0..format.plane_count() {
        let n = f.planes()[p].row_samples();
        for y in 0..f.planes()[p].height {
            for i in 0..n {
                let v = match rng.next() % 8 {
                    0 | 1 if extremes => 0,
                    2 | 3 if extremes => depth.max(),
                    _ => (rng.next() >> 16) as u16 & depth.max(),
                };
                depth.put(f.row_mut(p, y), i, v);
            }
        }
    }
    f
}

/// Sample `i` of row `y` of plane `p`, as its value.
pub fn sample(f: &Frame, p: usize, y: usize, i: usize) -> u16 {
    f.planes()[p].depth.get(f.row(p, y), i)
}

/// A destination with different padding, filled with random bytes (poisoned), so unwritten
/// pixels are caught.
pub fn poisoned_like(rng: &mut Rng, src: &Frame) -> Frame {
    random_frame(rng, src.format(), src.width(), src.height())
}

/// Border mapping written independently of `convflow::border` (loops instead of modular
/// arithmetic).
pub fn oracle_index(b: Border, i: i64, n: i64) -> Option<i64> {
    match b {
        Border::Clamp => Some(i.clamp(0, n - 1)),
        Border::Zero => (0..n).contains(&i).then_some(i),
        Border::Wrap => {
            let mut j = i;
            while j < 0 {
                j += n;
            }
            while j >= n {
                j -= n;
            }
            Some(j)
        }
        Border::Reflect => {
            if n == 1 {
                return Some(0);
            }
            let mut j = i;
            loop {
                if j < 0 {
                    j = -j;
                } else if j >= n {
                    j = 2 * (n - 1) - j;
                } else {
                    return Some(j);
                }
            }
        }
    }
}

/// Checks every sample of `got` against the exact f64 result of `plan` on `src`.
///
/// Samples of filtered channels must equal round-half-even(clamp(v)) of the exact value v,
/// except where v lies within a rounding margin of a .5 tie: there either neighbour is accepted
/// (f32 accumulation may land on either side). Pass-through channels must equal the source.
/// Returns a description of the first failure.
pub fn check_against_oracle(plan: &Plan, src: &Frame, got: &Frame) -> Result<usize, String> {
    let k = &plan.kernel;
    let (kw, kh) = (k.width(), k.height());
    let (ax, ay) = (kw / 2, kh / 2);
    let weights: Vec<f64> = match &plan.decomposition {
        Decomposition::Full => k.weights().iter().map(|&w| w as f64).collect(),
        Decomposition::Separable { col, row } => col
            .iter()
            .flat_map(|&c| row.iter().map(move |&r| c as f64 * r as f64))
            .collect(),
    };
    let abs_sum: f64 = weights.iter().map(|w| w.abs()).sum();
    let passes = if matches!(plan.decomposition, Decomposition::Full) {
        1.0
    } else {
        2.0
    };
    let max = src.format().depth().max() as f64;
    let margin = if exact_in_f32(plan, src.format().depth().max()) {
        0.0 // every f32 partial sum is exact: a tie must round to even
    } else {
        passes * (kw * kh + 4) as f64 * 1.2e-7 * (abs_sum * max + k.offset().abs() as f64) + 1e-9
    };
    let mut ties = 0;
    for (p, l) in src.planes().iter().enumerate() {
        let mask = plan.channel_mask(src.format(), p);
        let ch = l.channels;
        for y in 0..l.height {
            for x in 0..l.width {
                for c in 0..ch {
                    let g = sample(got, p, y, x * ch + c);
                    let s = sample(src, p, y, x * ch + c);
                    if mask == 0 || mask & (1 << c) == 0 {
                        if g != s {
                            return Err(format!(
                                "plane {p} ({x},{y}) ch {c}: pass-through {g} != source {s}"
                            ));
                        }
                        continue;
                    }
                    let mut v = 0f64;
                    for ky in 0..kh {
                        let Some(sy) = oracle_index(
                            plan.border,
                            y as i64 + ky as i64 - ay as i64,
                            l.height as i64,
                        ) else {
                            continue;
                        };
                        for kx in 0..kw {
                            let Some(sx) = oracle_index(
                                plan.border,
                                x as i64 + kx as i64 - ax as i64,
                                l.width as i64,
                            ) else {
                                continue;
                            };
                            v += weights[ky * kw + kx]
                                * sample(src, p, sy as usize, sx as usize * ch + c) as f64;
                        }
                    }
                    v += k.offset() as f64;
                    if plan.abs {
                        v = v.abs();
                    }
                    let exact = v.clamp(0.0, max);
                    let want = exact.round_ties_even();
                    if g as f64 == want {
                        continue;
                    }
                    let near_tie = margin > 0.0 && (exact.fract() - 0.5).abs() <= margin;
                    if near_tie && (g as f64 - exact).abs() <= 0.5 + margin {
                        ties += 1;
                        continue;
                    }
                    return Err(format!(
                        "plane {p} ({x},{y}) ch {c}: got {g}, exact value {v:.6} rounds to \
                        {want} (margin {margin:.2e})"
                    ));
                }
            }
        }
    }
    Ok(ties)
}

/// Smallest e ≤ 12 with every `v·2^e` an integer.
fn dyadic_exponent(values: &[f32]) -> Option<i32> {
    (0..=12).find(|&e| {
        values
            .iter()
            .all(|&v| (v as f64 * 2f64.powi(e)).fract() == 0.0)
    })
}

/// True when the contract's f32 arithmetic is exact for this plan on any input of samples up
/// to `max`: dyadic weights with few enough bits that no partial sum needs more than f32's
/// 24-bit significand.
pub fn exact_in_f32(plan: &Plan, max: u16) -> bool {
    let k = &plan.kernel;
    let max = max as f64;
    let limit = (1u64 << 24) as f64;
    let abs_sum = |v: &[f32]| v.iter().map(|w| w.abs() as f64).sum::<f64>();
    let Some(eo) = dyadic_exponent(&[k.offset()]) else {
        return false;
    };
    match &plan.decomposition {
        Decomposition::Full => dyadic_exponent(k.weights()).is_some_and(|e| {
            (abs_sum(k.weights()) * max + k.offset().abs() as f64) * 2f64.powi(e.max(eo)) < limit
        }),
        Decomposition::Separable { col, row } => match (dyadic_exponent(col), dyadic_exponent(row))
        {
            (Some(ec), Some(er)) => {
                let e = (ec + er).max(eo);
                e <= 12
                    && (abs_sum(col) * abs_sum(row) * max + k.offset().abs() as f64) * 2f64.powi(e)
                        < limit
            }
            _ => false,
        },
    }
}

/// Plane-by-plane comparison of the stored pixels (padding ignored); the first difference, if
/// any, as sample values.
pub fn first_difference(a: &Frame, b: &Frame) -> Option<String> {
    for (p, l) in a.planes().iter().enumerate() {
        for y in 0..l.height {
            let (ra, rb) = (a.row(p, y), b.row(p, y));
            if ra != rb {
                let n = l.row_samples();
                let differ = |i: &usize| sample(a, p, y, *i) != sample(b, p, y, *i);
                let i = (0..n).find(differ).unwrap_or(0);
                let count = (0..n).filter(differ).count();
                return Some(format!(
                    "plane {p} row {y} sample {i}: {} vs {} ({count} differing samples in that \
                     row)",
                    sample(a, p, y, i),
                    sample(b, p, y, i)
                ));
            }
        }
    }
    None
}

/// For a GPU test whose CUDA backend could not be created: fails when CONVFLOW_REQUIRE_GPU=1
/// (the GPU host), else reports the skip.
pub fn skip_without_gpu(e: impl std::fmt::Display) {
    let required = std::env::var("CONVFLOW_REQUIRE_GPU").is_ok_and(|v| v == "1");
    assert!(
        !required,
        "CONVFLOW_REQUIRE_GPU=1 but the CUDA backend is unavailable: {e}"
    );
    eprintln!("skipped (no GPU): {e}");
}

/// The convflow binary under test.
pub fn bin() -> std::process::Command {
    std::process::Command::new(env!("CARGO_BIN_EXE_convflow"))
}

/// Runs convflow with `args`, capturing its output.
pub fn run(args: &[&str]) -> std::process::Output {
    bin().args(args).output().unwrap()
}

/// A path as &str (test paths are ASCII).
pub fn s(p: &std::path::Path) -> &str {
    p.to_str().unwrap()
}

/// Asserts failure with exactly one line on stderr containing every `needle`.
pub fn assert_fails(out: &std::process::Output, needles: &[&str]) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "expected failure, got success; stderr: {err}"
    );
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "one-line cause expected, got:\n{err}"
    );
    for n in needles {
        assert!(err.contains(n), "expected '{n}' in: {err}");
    }
}

/// A fresh scratch directory per test, removed on drop.
pub struct Scratch(pub std::path::PathBuf);

impl Scratch {
    pub fn new(tag: &str) -> Scratch {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let p = std::env::temp_dir().join(format!(
            "convflow-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Scratch(p)
    }
    pub fn path(&self, name: &str) -> std::path::PathBuf {
        self.0.join(name)
    }
    /// Everything in the scratch directory, recursively, hidden files included (to prove
    /// nothing was left behind).
    pub fn listing(&self) -> Vec<String> {
        fn walk(dir: &std::path::Path, base: &std::path::Path, out: &mut Vec<String>) {
            for e in std::fs::read_dir(dir).unwrap() {
                let p = e.unwrap().path();
                out.push(p.strip_prefix(base).unwrap().to_string_lossy().into_owned());
                if p.is_dir() && !p.is_symlink() {
                    walk(&p, base, out);
                }
            }
        }
        let mut v = Vec::new();
        walk(&self.0, &self.0, &mut v);
        v.sort();
        v
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Writes a small deterministic PNG (gray or RGB).
pub fn write_png(path: &std::path::Path, w: u32, h: u32, rgb: bool) {
    let n = (w * h * if rgb { 3 } else { 1 }) as usize;
    let data: Vec<u8> = (0..n).map(|i| (i * 37 % 251) as u8).collect();
    let color = if rgb {
        image::ExtendedColorType::Rgb8
    } else {
        image::ExtendedColorType::L8
    };
    image::save_buffer(path, &data, w, h, color).unwrap();
}

/// True when the ffmpeg and ffprobe CLIs are installed; without them a test skips, unless
/// CONVFLOW_REQUIRE_FFMPEG=1 (set by scripts/test.sh), which makes it fail.
pub fn have_ffmpeg() -> bool {
    use std::process::Command;
    let ok = Command::new("ffmpeg").arg("-version").output().is_ok()
        && Command::new("ffprobe").arg("-version").output().is_ok();
    if !ok {
        let required = std::env::var("CONVFLOW_REQUIRE_FFMPEG").is_ok_and(|v| v == "1");
        assert!(
            !required,
            "CONVFLOW_REQUIRE_FFMPEG=1 but the ffmpeg/ffprobe CLIs are not installed"
        );
        eprintln!("skipped: no ffmpeg");
    }
    ok
}

/// ffprobe's answer for `entries` (csv, no section names), all streams unless `select`.
pub fn ffprobe(path: &std::path::Path, select: Option<&str>, entries: &str) -> String {
    let mut c = std::process::Command::new("ffprobe");
    c.args(["-v", "error"]);
    if let Some(sel) = select {
        c.args(["-select_streams", sel]);
    }
    let out = c
        .args(["-show_entries", entries, "-of", "csv=p=0", s(path)])
        .output()
        .unwrap();
    // Sections with nothing to show (side data lists) leave empty fields and lines.
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text
        .lines()
        .map(|l| l.trim().trim_end_matches(','))
        .filter(|l| !l.is_empty())
        .collect();
    lines.join("\n")
}

/// Running a command that must succeed: its output, or a panic naming the command with its
/// stderr.
pub trait Succeed {
    fn succeed(&mut self) -> std::process::Output;
}

impl Succeed for std::process::Command {
    fn succeed(&mut self) -> std::process::Output {
        let out = self.output().unwrap();
        assert!(
            out.status.success(),
            "{self:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }
}

/// Runs the ffmpeg CLI quietly; panics with its stderr on failure.
pub fn ffmpeg(args: &[&str]) {
    std::process::Command::new("ffmpeg")
        .args(["-hide_banner", "-loglevel", "error", "-y"])
        .args(args)
        .succeed();
}

/// Every frame of `path` as raw bytes in `pix`, decoded by the ffmpeg CLI.
pub fn decode_raw(path: &std::path::Path, pix: &str) -> Vec<u8> {
    let out = std::process::Command::new("ffmpeg")
        .args([
            "-v",
            "error",
            "-i",
            s(path),
            "-map",
            "0:v:0",
            "-f",
            "rawvideo",
            "-pix_fmt",
            pix,
            "-",
        ])
        .succeed();
    out.stdout
}

/// cpu-seq on each packed frame of `raw` (frames as ffmpeg decodes them to rawvideo).
pub fn cpu_seq_frames(format: PixelFormat, w: usize, h: usize, raw: &[u8], spec: &str) -> Vec<u8> {
    use convflow::backend::{Backend, CpuSeq};
    let strides = Frame::packed_strides(format, w);
    let size = Frame::packed_len(format, w, h).unwrap();
    let kernel = convflow::filter::spec::parse_spec(spec).unwrap();
    let plan = convflow::filter::Filter::new(kernel).plan().unwrap();
    let mut out = Vec::new();
    for chunk in raw.chunks(size) {
        let src = Frame::from_parts(format, w, h, &strides, chunk.to_vec()).unwrap();
        let mut dst = Frame::like(&src);
        CpuSeq::new().filter_frame(&plan, &src, &mut dst).unwrap();
        out.extend_from_slice(dst.data());
    }
    out
}

/// A testsrc2 clip, lossless (FFV1 in Matroska).
pub fn make_clip(path: &std::path::Path, size: &str, rate: &str, frames: usize, pix: &str) {
    let src = format!("testsrc2=size={size}:rate={rate}");
    let n = frames.to_string();
    ffmpeg(&[
        "-f",
        "lavfi",
        "-i",
        &src,
        "-frames:v",
        &n,
        "-pix_fmt",
        pix,
        "-c:v",
        "ffv1",
        s(path),
    ]);
}
