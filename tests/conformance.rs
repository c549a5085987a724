//! Conformance: one test body, run for every backend by `backend_suite!` — cpu-seq, cpu-par,
//! and every row of the CUDA variant table (plus non-default block shapes and pageable copies).
//!
//! Each backend must match `cpu-seq` bit for bit (same plan) and agree with the independent
//! f64 oracle within the documented rounding, on random images with padded strides, every
//! border mode, odd/even/rectangular kernels 1…31, every pixel format, plane selection and
//! alpha mode. Random kernels (and offsets) go through every decomposition the backend runs, as
//! the backend itself declares ([`Backend::runs`], from the variant table for CUDA): the direct
//! variants get any kernel with `--mode full`, the two-pass variants random rank-1 kernels.
//! Outputs are poisoned before each run.

mod common;
#[path = "conformance/integer.rs"]
mod integer;
#[path = "conformance/large.rs"]
mod large;

use integer::{
    deep_integer_kernels, dyadic_separable_kernels, integer_kernels_every_shape_and_row_end,
    small_integer_kernels,
};
use large::awkward_large_frames;

use common::{check_against_oracle, first_difference, poisoned_like, random_frame, Rng};
use convflow::backend::{Backend, CpuPar, CpuSeq, Support};
use convflow::filter::Plan;
use convflow::filter::{library, AlphaMode, Decomposition, Filter, Kernel, Mode, PlaneSel};
use convflow::frame::{Frame, PixelFormat};
use convflow::Border;

/// Cost bound for one random case (taps × samples), so the suite stays fast on 2 cores.
const CASE_BUDGET: usize = 3_000_000;

/// A random kernel a backend that runs `runs` can take: any kernel for full paths, a rank-1
/// one (larger than 1 both ways) for separable-only ones; random offsets either way.
fn random_kernel(rng: &mut Rng, max_side: usize, runs: Support) -> Kernel {
    let min = if runs == Support::SeparableOnly { 2 } else { 1 };
    let kw = rng.range(min, max_side.max(min));
    let kh = if rng.range(0, 2) == 0 {
        rng.range(min, max_side.max(min))
    } else {
        kw
    };
    random_kernel_of(rng, kw, kh, runs)
}

/// A random kernel of kw × kh: Gaussian, rank 1 from random factors, or (for backends that
/// run full kernels) random weights; with a random offset.
fn random_kernel_of(rng: &mut Rng, kw: usize, kh: usize, runs: Support) -> Kernel {
    let kinds = if runs == Support::SeparableOnly { 1 } else { 2 };
    let kernel = match rng.range(0, kinds) {
        0 => library::gaussian(kw, kh, None, format!("gaussian:{kw}x{kh}")).unwrap(),
        1 => {
            // Rank 1 built from random factors: exercises numerical factorization.
            let col: Vec<f64> = (0..kh).map(|_| rng.unit() * 2.0 - 0.5).collect();
            let row: Vec<f64> = (0..kw).map(|_| rng.unit() * 2.0 - 0.5).collect();
            let w = col.iter().flat_map(|c| {
                row.iter()
                    .map(move |r| (c * r / (kw * kh) as f64 * 3.0) as f32)
            });
            Kernel::new("rank1", kw, kh, w.collect()).unwrap()
        }
        _ => {
            let n = kw * kh;
            let w = (0..n)
                .map(|_| ((rng.unit() * 2.0 - 0.7) * 4.0 / n as f64) as f32)
                .collect();
            Kernel::new("random", kw, kh, w).unwrap()
        }
    };
    let offset = rng.pick(&[0.0, 0.0, 128.0, -17.25]);
    kernel.with_offset(offset).unwrap()
}

/// A random filter of `kernel` in a mode the backend runs (`runs`).
fn random_filter(rng: &mut Rng, kernel: Kernel, border: Border, runs: Support) -> Filter {
    let mut f = Filter::new(kernel);
    f.border = border;
    f.abs = rng.range(0, 3) == 0;
    f.planes = rng.pick(&[PlaneSel::All, PlaneSel::Luma]);
    f.alpha = rng.pick(&[AlphaMode::Keep, AlphaMode::Filter]);
    f.mode = mode_for(rng, &f.kernel, runs);
    f
}

/// A mode whose plan for `kernel` a backend that runs `runs` can take.
fn mode_for(rng: &mut Rng, kernel: &Kernel, runs: Support) -> Mode {
    let thin = kernel.width() == 1 || kernel.height() == 1;
    match runs {
        Support::FullOnly => Mode::Full,
        Support::SeparableOnly => Mode::Separable,
        Support::Both if kernel.is_separable() && !thin => {
            rng.pick(&[Mode::Full, Mode::Separable, Mode::Auto])
        }
        Support::Both if kernel.is_separable() => rng.pick(&[Mode::Full, Mode::Separable]),
        Support::Both => Mode::Full,
    }
}

/// The one test body: `backend` on `src` vs cpu-seq (bit for bit) vs the oracle.
fn check_case(backend: &mut dyn Backend, filter: &Filter, src: &Frame, rng: &mut Rng, ctx: &str) {
    let plan = filter.plan().unwrap();
    assert!(
        backend.runs().runs(&plan.decomposition),
        "{ctx}: the test chose a plan {} does not run",
        backend.name()
    );
    let mut got = poisoned_like(rng, src);
    backend
        .filter_frame(&plan, src, &mut got)
        .unwrap_or_else(|e| panic!("{ctx}: {e}"));
    let mut want = poisoned_like(rng, src);
    CpuSeq::new().filter_frame(&plan, src, &mut want).unwrap();
    if let Some(d) = first_difference(&got, &want) {
        panic!("{ctx}: {} differs from cpu-seq at {d}", backend.name());
    }
    if let Err(e) = check_against_oracle(&plan, src, &got) {
        panic!("{ctx}: disagrees with the f64 oracle at {e}");
    }
}

/// check_case, naming the seed, filter and frame on failure.
fn check_seeded(backend: &mut dyn Backend, filter: &Filter, src: &Frame, rng: &mut Rng, seed: u64) {
    check_case(backend, filter, src, rng, &describe(seed, filter, src));
}

/// A random filter of `kernel` (in a mode the backend runs) on `src`, checked by check_case.
fn check_random_filter(
    backend: &mut dyn Backend,
    kernel: Kernel,
    border: Border,
    src: &Frame,
    rng: &mut Rng,
    seed: u64,
) {
    let filter = random_filter(rng, kernel, border, backend.runs());
    check_seeded(backend, &filter, src, rng, seed);
}

fn describe(seed: u64, filter: &Filter, src: &Frame) -> String {
    let k = &filter.kernel;
    format!(
        "seed {seed}: {} {}x{} kernel {} ({}x{}, offset {}) border {} mode {:?} abs {} planes \
        {:?} alpha {:?}",
        src.format(),
        src.width(),
        src.height(),
        k.name,
        k.width(),
        k.height(),
        k.offset(),
        filter.border,
        filter.mode,
        filter.abs,
        filter.planes,
        filter.alpha
    )
}

pub fn random_cases(backend: &mut dyn Backend, salt: u64) {
    let runs = backend.runs();
    let (mut rng, seed) = Rng::fresh(salt);
    let (shard, shards) = common::shard();
    let mut case = 0;
    for &format in PixelFormat::all() {
        // Every 8-bit format three times per border; every deeper format once per border.
        let reps = if format.depth().bits() == 8 { 3 } else { 1 };
        for &border in Border::ALL {
            for _ in 0..reps {
                case += 1;
                if case % shards != shard {
                    continue;
                }
                let kernel = random_kernel(&mut rng, 31, runs);
                let ch = format.plane_channels(0).max(2);
                let taps = kernel.width() * kernel.height() * ch;
                let max_area = (CASE_BUDGET / taps).clamp(1, 300 * 300);
                let w = if rng.range(0, 4) == 0 {
                    rng.range(1, 9)
                } else {
                    rng.range(1, max_area.min(300))
                };
                let h = rng.range(1, (max_area / w).clamp(1, 300));
                let src = random_frame(&mut rng, format, w, h);
                check_random_filter(backend, kernel, border, &src, &mut rng, seed);
            }
        }
    }
}

/// Every kernel shape up to 7×7 (the sizes the register kernels take) on frames whose rows
/// end anywhere relative to a thread's 16 bytes, with padded and odd strides, every format
/// and border: the aligned, word and sample-by-sample load paths and the partial last thread.
pub fn small_kernels_every_shape(backend: &mut dyn Backend, salt: u64) {
    let runs = backend.runs();
    let (mut rng, seed) = Rng::fresh(salt);
    let min = if runs == Support::SeparableOnly { 2 } else { 1 };
    for kw in min..=7 {
        for kh in min..=7 {
            for _ in 0..2 {
                let format = rng.pick(PixelFormat::all());
                let border = rng.pick(Border::ALL);
                let w = rng.pick(&[1, 2, 7, 16, 17, 31, 48, 64, 100, 129, 255, 257, 511, 700]);
                let h = rng.range(1, 24);
                let src = random_frame(&mut rng, format, w, h);
                let kernel = random_kernel_of(&mut rng, kw, kh, runs);
                check_random_filter(backend, kernel, border, &src, &mut rng, seed);
            }
        }
    }
}

pub fn tiny_images_and_kernels_larger_than_image(backend: &mut dyn Backend, salt: u64) {
    let runs = backend.runs();
    let (mut rng, seed) = Rng::fresh(salt);
    let sizes = [
        (1, 1),
        (2, 1),
        (1, 3),
        (17, 3),
        (3, 17),
        (5, 4),
        (1000, 1),
        (1, 200),
    ];
    for (w, h) in sizes {
        for &border in Border::ALL {
            for (kw, kh) in [(1, 1), (2, 2), (4, 3), (7, 7), (31, 31), (40, 9)] {
                let format = rng.pick(&[
                    PixelFormat::Gray8,
                    PixelFormat::Rgb8,
                    PixelFormat::Nv12,
                    PixelFormat::Gray16,
                    PixelFormat::P010,
                ]);
                let src = random_frame(&mut rng, format, w, h);
                if runs == Support::SeparableOnly && (kw == 1 || kh == 1) {
                    continue; // a 1-wide kernel is a full plan: nothing for a two-pass variant
                }
                let kernel = if rng.range(0, 1) == 0 || runs == Support::SeparableOnly {
                    library::box_filter(kw, kh, format!("box:{kw}x{kh}")).unwrap()
                } else {
                    let n = kw * kh;
                    Kernel::new(
                        "random",
                        kw,
                        kh,
                        (0..n)
                            .map(|_| (rng.unit() * 2.0 / n as f64) as f32)
                            .collect(),
                    )
                    .unwrap()
                };
                check_random_filter(backend, kernel, border, &src, &mut rng, seed);
            }
        }
    }
}

pub fn kernels_beyond_63_taps(backend: &mut dyn Backend, salt: u64) {
    let runs = backend.runs();
    let (mut rng, seed) = Rng::fresh(salt);
    for (k, border) in [
        (64, Border::Reflect),
        (67, Border::Zero),
        (65, Border::Wrap),
    ] {
        let src = random_frame(&mut rng, PixelFormat::Gray8, 70, 45);
        for mode in [Mode::Full, Mode::Separable] {
            if !runs_mode(runs, mode) {
                continue;
            }
            let mut filter =
                Filter::new(library::gaussian(k, k, None, format!("gaussian:{k}")).unwrap());
            filter.border = border;
            filter.mode = mode;
            check_seeded(backend, &filter, &src, &mut rng, seed);
        }
    }
}

/// The separable path equals the full path within ±1 LSB. A backend that runs one of them is
/// compared with cpu-seq's run of the other.
pub fn separable_within_one_lsb_of_full(backend: &mut dyn Backend, salt: u64) {
    let runs = backend.runs();
    let name = backend.name();
    let mut run = |plan: &Plan, src: &Frame| {
        let mut out = Frame::like(src);
        if runs.runs(&plan.decomposition) {
            backend.filter_frame(plan, src, &mut out).unwrap();
        } else {
            CpuSeq::new().filter_frame(plan, src, &mut out).unwrap();
        }
        out
    };
    let (mut rng, seed) = Rng::fresh(salt);
    for spec in [
        "gaussian:5",
        "gaussian:9:2.5",
        "box:7x3",
        "binomial:6",
        "sobel-x",
        "gaussian:15",
    ] {
        for &border in Border::ALL {
            let kernel = convflow::filter::spec::parse_spec(spec).unwrap();
            let format = rng.pick(&[
                PixelFormat::Gray8,
                PixelFormat::Rgb8,
                PixelFormat::Yuv420p,
                PixelFormat::Rgb16,
                PixelFormat::Yuv420p10,
            ]);
            let (w, h) = (rng.range(1, 150), rng.range(1, 120));
            let src = random_frame(&mut rng, format, w, h);
            let mut f = Filter::new(kernel);
            f.border = border;
            f.abs = spec.starts_with("sobel");
            f.mode = Mode::Full;
            let full = f.plan().unwrap();
            f.mode = Mode::Separable;
            let sep = f.plan().unwrap();
            assert!(matches!(sep.decomposition, Decomposition::Separable { .. }));
            let (a, b) = (run(&full, &src), run(&sep, &src));
            // Pixels only: the stride padding of an output is not the filter's to write.
            let worst = (0..a.planes().len())
                .flat_map(|p| (0..a.planes()[p].height).map(move |y| (p, y)))
                .flat_map(|(p, y)| {
                    let (a, b) = (&a, &b);
                    (0..a.planes()[p].row_samples()).map(move |i| {
                        common::sample(a, p, y, i).abs_diff(common::sample(b, p, y, i))
                    })
                })
                .max()
                .unwrap_or(0);
            assert!(
                worst <= 1,
                "seed {seed}: {spec} {border} {format} on {}: full vs separable differ by {worst}",
                name
            );
        }
    }
}

/// One backend object filters frames of changing shapes and formats in a row (buffers reused).
pub fn reused_across_shapes(backend: &mut dyn Backend, salt: u64) {
    let runs = backend.runs();
    let (mut rng, seed) = Rng::fresh(salt);
    for _ in 0..12 {
        let format = rng.pick(PixelFormat::all());
        let (w, h) = (rng.range(1, 90), rng.range(1, 90));
        let src = random_frame(&mut rng, format, w, h);
        let (kernel, border) = (random_kernel(&mut rng, 9, runs), rng.pick(Border::ALL));
        check_random_filter(backend, kernel, border, &src, &mut rng, seed);
    }
}

/// Frames filtered back to back as the kernel benchmark queues them: on a backend that times
/// itself (CUDA), `Measure::kernel_times`'s passes, which follow one another on the device with
/// nothing queued between (`fast` queues each launch as a programmatic dependent of the pass
/// before, whose blocks wait for it), leave the frame cpu-seq's output; a backend that does not
/// time itself filters the frame twice into one destination.
pub fn benchmark_passes(backend: &mut dyn Backend, salt: u64) {
    let runs = backend.runs();
    let (mut rng, seed) = Rng::fresh(salt);
    for &format in PixelFormat::all() {
        let (w, h) = (rng.range(1, 300), rng.range(1, 160));
        let src = random_frame(&mut rng, format, w, h);
        let (kernel, border) = (random_kernel(&mut rng, 9, runs), rng.pick(Border::ALL));
        let filter = random_filter(&mut rng, kernel, border, runs);
        let ctx = describe(seed, &filter, &src);
        let plan = filter.plan().unwrap();
        let mut got = poisoned_like(&mut rng, &src);
        match backend.measure() {
            Some(m) => {
                let t = m.kernel_times(&plan, &src, &mut got, 2, 3, 60.0);
                assert_eq!(
                    t.unwrap_or_else(|e| panic!("{ctx}: {e}")).times.len(),
                    3,
                    "{ctx}"
                );
            }
            None => {
                for _ in 0..2 {
                    backend.filter_frame(&plan, &src, &mut got).unwrap();
                }
            }
        }
        let mut want = poisoned_like(&mut rng, &src);
        CpuSeq::new().filter_frame(&plan, &src, &mut want).unwrap();
        if let Some(d) = first_difference(&got, &want) {
            panic!("{ctx}: {} differs from cpu-seq at {d}", backend.name());
        }
    }
}

/// Plans on one frame shape, one after the other on one backend, each twice, the next
/// differing only in the weights the kernels read from constant memory (integers over the same
/// divisor), or only in border, offset or `--abs`: a backend that keeps a frame's launches to
/// replay (CUDA `fast`) must replay them for the same plan, with the new frame's addresses, and
/// only for it.
pub fn alternating_plans_on_one_shape(backend: &mut dyn Backend, salt: u64) {
    let runs = backend.runs();
    let (mut rng, seed) = Rng::fresh(salt);
    let ninths = |name: &str, n: [i8; 9]| {
        Kernel::new(name, 3, 3, n.iter().map(|&v| f32::from(v) / 9.0).collect()).unwrap()
    };
    let kernels = [
        ninths("ninths-a", [0, 1, 2, 1, 1, 1, 2, 1, 0]),
        ninths("ninths-b", [2, 0, 1, 1, 1, 1, 1, 0, 2]),
        ninths("ninths-a", [0, 1, 2, 1, 1, 1, 2, 1, 0])
            .with_offset(7.0)
            .unwrap(),
        convflow::filter::spec::parse_spec("box:3").unwrap(),
        convflow::filter::spec::parse_spec("gaussian:5").unwrap(),
    ];
    for format in [
        PixelFormat::Gray8,
        PixelFormat::Nv12,
        PixelFormat::Yuv420p,
        PixelFormat::Rgb8,
        PixelFormat::Gray16,
    ] {
        let (w, h) = (rng.range(24, 80), rng.range(8, 40));
        // Kernel by kernel, each plan twice (the second frame replays the first's launches),
        // then the next plan, which differs from it in border only, in `--abs` only, or (from
        // one kernel to the next) in weights or offset only; at the end the first plan again.
        let mut plans = Vec::new();
        for (i, kernel) in kernels.iter().enumerate() {
            let mut each = [
                (Border::Clamp, false),
                (Border::Wrap, false),
                (Border::Wrap, true),
            ];
            // Every other kernel backwards: consecutive kernels meet on the same border and abs.
            if i % 2 == 1 {
                each.reverse();
            }
            for (border, abs) in each {
                let mut filter = Filter::new(kernel.clone());
                (filter.border, filter.abs) = (border, abs);
                match filter.plan() {
                    Ok(plan) if runs.runs(&plan.decomposition) => plans.push(filter),
                    _ => {}
                }
            }
        }
        let first = plans.first().cloned();
        for filter in plans.iter().flat_map(|f| [f, f]).chain(first.as_ref()) {
            let src = random_frame(&mut rng, format, w, h);
            check_seeded(backend, filter, &src, &mut rng, seed);
        }
    }
}

/// Dyadic kernels on integer inputs make exact .5 ties: they must round half to even.
pub fn exact_ties_round_half_to_even(backend: &mut dyn Backend, salt: u64) {
    let runs = backend.runs();
    let (mut rng, seed) = Rng::fresh(salt);
    let half_offset = Kernel::new("custom:2x1:1/2,1/2", 2, 1, vec![0.5, 0.5])
        .unwrap()
        .with_offset(0.5)
        .unwrap();
    let kernels = [
        convflow::filter::spec::parse_spec("binomial:2").unwrap(),
        convflow::filter::spec::parse_spec("box:4x2").unwrap(),
        convflow::filter::spec::parse_spec("gaussian:5").unwrap(),
        convflow::filter::spec::parse_spec("sobel-y").unwrap(),
        half_offset,
    ];
    for kernel in kernels {
        for mode in [Mode::Full, Mode::Auto, Mode::Separable] {
            let mut probe = Filter::new(kernel.clone());
            probe.mode = mode;
            match probe.plan() {
                Ok(plan) if runs.runs(&plan.decomposition) => {}
                _ => continue,
            }
            let (w, h) = (rng.range(1, 120), rng.range(1, 80));
            let format = rng.pick(&[
                PixelFormat::Rgb8,
                PixelFormat::Rgb16,
                PixelFormat::Yuv420p10,
            ]);
            let src = random_frame(&mut rng, format, w, h);
            let mut filter = Filter::new(kernel.clone());
            filter.mode = mode;
            filter.border = rng.pick(Border::ALL);
            assert!(
                common::exact_in_f32(&filter.plan().unwrap(), format.depth().max()),
                "{} should be exact",
                kernel.name
            );
            check_seeded(backend, &filter, &src, &mut rng, seed);
        }
    }
}

/// The deep formats users meet most (16-bit gray, rgb48, 10-bit planar and P010, and RGBA64
/// with its alpha passed through), every border, random kernels and offsets: outputs saturate
/// at the format's own maximum (1023 for 10 bits) and P010 keeps its low bits zero.
pub fn high_bit_depth_formats(backend: &mut dyn Backend, salt: u64) {
    let runs = backend.runs();
    let (mut rng, seed) = Rng::fresh(salt);
    for format in [
        PixelFormat::Gray16,
        PixelFormat::Rgb16,
        PixelFormat::Yuv420p10,
        PixelFormat::P010,
        PixelFormat::Rgba16,
    ] {
        for &border in Border::ALL {
            let kernel = random_kernel(&mut rng, 11, runs);
            let (w, h) = (rng.range(1, 160), rng.range(1, 100));
            let src = random_frame(&mut rng, format, w, h);
            let filter = random_filter(&mut rng, kernel, border, runs);
            let ctx = describe(seed, &filter, &src);
            check_case(backend, &filter, &src, &mut rng, &ctx);
            // What check_case compared was written within range, in the format's storage.
            let plan = filter.plan().unwrap();
            let mut out = Frame::like(&src);
            backend.filter_frame(&plan, &src, &mut out).unwrap();
            let depth = format.depth();
            for (p, l) in out.planes().iter().enumerate() {
                for y in 0..l.height {
                    let row = out.row(p, y);
                    for i in 0..l.row_samples() {
                        let raw = u16::from_le_bytes([row[2 * i], row[2 * i + 1]]);
                        assert!(
                            raw & ((1 << depth.shift()) - 1) == 0
                                && (raw >> depth.shift()) <= depth.max(),
                            "{ctx}: stored sample {raw:#06x} out of range for {format}"
                        );
                    }
                }
            }
        }
    }
}

/// True when a backend that runs `runs` takes a rank-1 kernel larger than 1 in `mode`.
fn runs_mode(runs: Support, mode: Mode) -> bool {
    match mode {
        Mode::Full => runs != Support::SeparableOnly,
        Mode::Separable | Mode::Auto => runs != Support::FullOnly,
    }
}

/// The plan follows from the filter alone: in `--mode auto` a rank-1 kernel is separable on
/// every backend, which then either gives cpu-seq's bytes for that plan or refuses it up front
/// (never a silent switch to the other decomposition).
pub fn auto_mode_plans_the_same_on_every_backend(backend: &mut dyn Backend, salt: u64) {
    let (mut rng, seed) = Rng::fresh(salt);
    for spec in [
        "gaussian:15",
        "box:5x3",
        "sobel-x",
        "custom:3x3:1,2,1,2,4,2,1,2,1",
    ] {
        let mut f = Filter::new(convflow::filter::spec::parse_spec(spec).unwrap());
        f.border = rng.pick(Border::ALL);
        let plan = f.plan().unwrap();
        assert!(
            plan.is_separable(),
            "{spec}: auto takes the separable path for a rank-1 kernel"
        );
        let (w, h) = (rng.range(20, 200), rng.range(20, 120));
        let src = random_frame(&mut rng, PixelFormat::Rgb8, w, h);
        match backend.check_plan(&plan) {
            Ok(()) => {
                let mut got = poisoned_like(&mut rng, &src);
                backend.filter_frame(&plan, &src, &mut got).unwrap();
                let mut want = poisoned_like(&mut rng, &src);
                CpuSeq::new().filter_frame(&plan, &src, &mut want).unwrap();
                if let Some(d) = first_difference(&got, &want) {
                    panic!(
                        "seed {seed}: {spec} auto on {}: differs from cpu-seq at {d}",
                        backend.name()
                    );
                }
            }
            Err(e) => {
                assert_eq!(backend.runs(), Support::FullOnly, "{}: {e}", backend.name());
                let msg = e.to_string();
                assert!(
                    msg.contains("full kernels only") && msg.contains("--mode full"),
                    "{msg}"
                );
                let mut got = Frame::like(&src);
                assert!(
                    backend.filter_frame(&plan, &src, &mut got).is_err(),
                    "refused at run time too"
                );
            }
        }
    }
}

/// One module of tests per backend list: each test runs its body on every backend `make`
/// returns (the CUDA list is the variant table), naming the backend on failure.
macro_rules! backend_suite {
    ($($name:ident => $make:expr;)*) => {$(
        mod $name {
            use super::*;
            /// Each backend on a thread of its own (the CUDA list has a dozen: their NVRTC
            /// compiles and cpu-seq references then use every core); a failure on any of them
            /// fails the test once all have finished.
            fn each(body: fn(&mut dyn Backend, u64), salt: u64) {
                let backends: Vec<Box<dyn Backend>> = $make;
                std::thread::scope(|s| {
                    for mut b in backends {
                        // The thread's name (the backend's) heads any panic message.
                        std::thread::Builder::new()
                            .name(b.name())
                            .spawn_scoped(s, move || body(b.as_mut(), salt))
                            .expect("a test thread");
                    }
                });
            }
            #[test]
            fn random_images_every_format_border_and_kernel() {
                each(random_cases, 1);
            }
            #[test]
            fn small_kernels_every_shape_and_row_end() {
                each(super::small_kernels_every_shape, 9);
            }
            #[test]
            fn integer_kernels_every_shape_and_row_end() {
                each(super::integer_kernels_every_shape_and_row_end, 10);
            }
            #[test]
            fn small_integer_kernels_every_border_and_row_end() {
                each(super::small_integer_kernels, 11);
            }
            #[test]
            fn integer_kernels_on_16_bit_words() {
                each(super::deep_integer_kernels, 15);
            }
            #[test]
            fn dyadic_separable_kernels_every_border_and_row_end() {
                each(super::dyadic_separable_kernels, 12);
            }
            #[test]
            fn tiny_images_and_kernels_larger_than_the_image() {
                each(tiny_images_and_kernels_larger_than_image, 2);
            }
            #[test]
            fn kernels_larger_than_63() {
                each(kernels_beyond_63_taps, 3);
            }
            #[test]
            fn separable_path_within_one_lsb_of_full_path() {
                each(separable_within_one_lsb_of_full, 4);
            }
            #[test]
            fn exact_ties_round_half_to_even() {
                each(super::exact_ties_round_half_to_even, 6);
            }
            #[test]
            fn high_bit_depth_formats() {
                each(super::high_bit_depth_formats, 8);
            }
            #[test]
            fn awkward_large_frames() {
                each(super::awkward_large_frames, 7);
            }
            #[test]
            fn one_backend_reused_across_shapes_and_formats() {
                each(reused_across_shapes, 5);
            }
            #[test]
            fn alternating_plans_on_one_frame_shape() {
                each(alternating_plans_on_one_shape, 14);
            }
            #[test]
            fn benchmark_passes_back_to_back() {
                each(benchmark_passes, 17);
            }
            #[test]
            fn auto_mode_plans_the_same_everywhere() {
                each(auto_mode_plans_the_same_on_every_backend, 16);
            }
        }
    )*};
}

backend_suite! {
    cpu_seq => vec![Box::new(CpuSeq::new())];
    cpu_par_2_threads => vec![Box::new(CpuPar::new(2).unwrap())];
    cpu_par_3_threads => vec![Box::new(CpuPar::new(3).unwrap())];
    // More threads than this machine has cores: some are descheduled mid-band, so others split
    // their bands.
    cpu_par_7_threads => vec![Box::new(CpuPar::new(7).unwrap())];
}

/// A CUDA backend, or None without a usable GPU (the test then passes having checked nothing,
/// and says so); with CONVFLOW_REQUIRE_GPU=1 a missing GPU fails the test instead.
#[cfg(feature = "cuda")]
fn cuda(
    variant: convflow::backend::cuda::Variant,
    block: Option<(u32, u32)>,
    pageable: bool,
    large_rules: bool,
) -> Option<Box<dyn Backend>> {
    use convflow::backend::cuda::CudaBackend;
    match CudaBackend::new(0, variant, block) {
        Ok(mut b) => {
            b.set_pageable(pageable);
            b.set_large_rules(large_rules);
            Some(Box::new(b))
        }
        Err(e) => {
            common::skip_without_gpu(e);
            None
        }
    }
}

/// Every row of the variant table, then non-default block shapes, pageable copies and `fast`
/// choosing its kernels as for the largest planes (RGB integer kernels on small frames).
/// `CONVFLOW_TEST_VARIANTS=fast,auto` keeps only the named variants (for iterating on one
/// kernel family on the GPU machine; the full run checks them all).
#[cfg(feature = "cuda")]
fn cuda_backends() -> Vec<Box<dyn Backend>> {
    use convflow::backend::cuda::Variant;
    let named = |n: &str| n.parse::<Variant>().unwrap();
    let only: Option<Vec<Variant>> = std::env::var("CONVFLOW_TEST_VARIANTS")
        .ok()
        .map(|v| v.split(',').map(named).collect());
    // (variant, block, pageable copies, kernels as for the largest planes)
    let extra = [
        (named("fast"), Some((16, 4)), false, false),
        (named("shared"), Some((8, 8)), false, false),
        (named("fast"), None, true, false),
        (named("fast"), None, false, true),
    ];
    Variant::all()
        .map(|v| (v, None, false, false))
        .chain(extra)
        .filter(|(v, ..)| only.as_ref().is_none_or(|o| o.contains(v)))
        .map_while(|(v, block, pageable, large)| cuda(v, block, pageable, large))
        .collect()
}

#[cfg(feature = "cuda")]
backend_suite! {
    cuda_every_variant => cuda_backends();
}
