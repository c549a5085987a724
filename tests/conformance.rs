//! Conformance: one test body, run for every backend by `backend_suite!`.
//!
//! Each backend must match `cpu-seq` bit for bit (same decomposition) and agree with the
//! independent f64 oracle within the documented rounding, on random images with padded
//! strides, every border mode, odd/even/rectangular kernels 1…31, every pixel format, plane
//! selection and alpha mode. Outputs are poisoned before each run.

mod common;

use common::{check_against_oracle, first_difference, poisoned_like, random_frame, Rng};
use convflow::backend::{Backend, CpuPar, CpuSeq, Support};
use convflow::filter::{library, AlphaMode, Decomposition, Filter, Kernel, Mode, PlaneSel};
use convflow::frame::{Frame, PixelFormat};
use convflow::Border;

/// Cost bound for one random case (taps × samples), so the suite stays fast on 2 cores.
const CASE_BUDGET: usize = 3_000_000;

fn random_kernel(rng: &mut Rng, max_side: usize) -> Kernel {
    let kw = rng.range(1, max_side);
    let kh = if rng.range(0, 2) == 0 {
        rng.range(1, max_side)
    } else {
        kw
    };
    match rng.range(0, 3) {
        0 => library::gaussian(kw, kh, None, format!("gaussian:{kw}x{kh}")).unwrap(),
        1 => {
            // Rank 1 built from random factors: exercises numerical factorization.
            let col: Vec<f64> = (0..kh).map(|_| rng.unit() * 2.0 - 0.5).collect();
            let row: Vec<f64> = (0..kw).map(|_| rng.unit() * 2.0 - 0.5).collect();
            let w = col
                .iter()
                .flat_map(|c| row.iter().map(move |r| (c * r / (kw * kh) as f64 * 3.0) as f32));
            Kernel::new("rank1", kw, kh, w.collect()).unwrap()
        }
        _ => {
            let n = kw * kh;
            let w = (0..n)
                .map(|_| ((rng.unit() * 2.0 - 0.7) * 4.0 / n as f64) as f32)
                .collect();
            let offset = rng.pick(&[0.0, 0.0, 128.0, -17.25]);
            Kernel::new("random", kw, kh, w).unwrap().with_offset(offset).unwrap()
        }
    }
}

fn random_filter(rng: &mut Rng, kernel: Kernel, border: Border) -> Filter {
    let mut f = Filter::new(kernel);
    f.border = border;
    f.abs = rng.range(0, 3) == 0;
    f.planes = rng.pick(&[PlaneSel::All, PlaneSel::Luma]);
    f.alpha = rng.pick(&[AlphaMode::Keep, AlphaMode::Filter]);
    f.mode = if f.kernel.is_separable() {
        rng.pick(&[Mode::Full, Mode::Separable, Mode::Auto])
    } else {
        Mode::Full
    };
    f
}

/// Makes `filter` one that `support` runs: the direct CUDA variants sum the full kernel, the
/// two-pass variants need a rank-1 kernel (a Gaussian of the same size stands in).
fn adapt(filter: &Filter, support: Support) -> Filter {
    let mut f = filter.clone();
    match support {
        Support::Both => {}
        Support::FullOnly => f.mode = Mode::Full,
        Support::SeparableOnly => {
            if !f.kernel.is_separable() {
                let (w, h) = (f.kernel.width(), f.kernel.height());
                f.kernel = library::gaussian(w, h, None, format!("gaussian:{w}x{h}")).unwrap();
            }
            f.mode = Mode::Separable;
        }
    }
    f
}

/// The one test body: `backend` on `src` vs cpu-seq (bit for bit) vs the oracle.
fn check_case(backend: &mut dyn Backend, filter: &Filter, src: &Frame, rng: &mut Rng, ctx: &str) {
    let filter = &adapt(filter, backend.support());
    let plan = filter.plan().unwrap();
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

fn describe(seed: u64, filter: &Filter, src: &Frame) -> String {
    let k = &filter.kernel;
    format!(
        "seed {seed}: {} {}x{} kernel {} ({}x{}, offset {}) border {} mode {:?} abs {} planes {:?} alpha {:?}",
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

pub fn random_cases(make: &dyn Fn() -> Option<Box<dyn Backend>>, salt: u64) {
    let Some(mut backend) = make() else { return };
    let (mut rng, seed) = Rng::fresh(salt);
    for format in PixelFormat::ALL {
        for border in Border::ALL {
            for _ in 0..3 {
                let kernel = random_kernel(&mut rng, 31);
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
                let filter = random_filter(&mut rng, kernel, border);
                check_case(
                    backend.as_mut(),
                    &filter,
                    &src,
                    &mut rng,
                    &describe(seed, &filter, &src),
                );
            }
        }
    }
}

pub fn tiny_images_and_kernels_larger_than_image(make: &dyn Fn() -> Option<Box<dyn Backend>>, salt: u64) {
    let Some(mut backend) = make() else { return };
    let (mut rng, seed) = Rng::fresh(salt);
    let sizes = [(1, 1), (2, 1), (1, 3), (17, 3), (3, 17), (5, 4), (1000, 1), (1, 200)];
    for (w, h) in sizes {
        for border in Border::ALL {
            for (kw, kh) in [(1, 1), (2, 2), (4, 3), (7, 7), (31, 31), (40, 9)] {
                let format = rng.pick(&[PixelFormat::Gray8, PixelFormat::Rgb8, PixelFormat::Nv12]);
                let src = random_frame(&mut rng, format, w, h);
                let kernel = if rng.range(0, 1) == 0 {
                    library::box_filter(kw, kh, format!("box:{kw}x{kh}")).unwrap()
                } else {
                    let n = kw * kh;
                    Kernel::new(
                        "random",
                        kw,
                        kh,
                        (0..n).map(|_| (rng.unit() * 2.0 / n as f64) as f32).collect(),
                    )
                    .unwrap()
                };
                let filter = random_filter(&mut rng, kernel, border);
                check_case(
                    backend.as_mut(),
                    &filter,
                    &src,
                    &mut rng,
                    &describe(seed, &filter, &src),
                );
            }
        }
    }
}

pub fn kernels_beyond_63_taps(make: &dyn Fn() -> Option<Box<dyn Backend>>, salt: u64) {
    let Some(mut backend) = make() else { return };
    let (mut rng, seed) = Rng::fresh(salt);
    for (k, border) in [(64, Border::Reflect), (67, Border::Zero), (65, Border::Wrap)] {
        let src = random_frame(&mut rng, PixelFormat::Gray8, 70, 45);
        for mode in [Mode::Full, Mode::Separable] {
            let mut filter = Filter::new(library::gaussian(k, k, None, format!("gaussian:{k}")).unwrap());
            filter.border = border;
            filter.mode = mode;
            check_case(
                backend.as_mut(),
                &filter,
                &src,
                &mut rng,
                &describe(seed, &filter, &src),
            );
        }
    }
}

/// The separable path equals the full path within ±1 LSB (same backend).
pub fn separable_within_one_lsb_of_full(make: &dyn Fn() -> Option<Box<dyn Backend>>, salt: u64) {
    let Some(mut backend) = make() else { return };
    if backend.support() != Support::Both {
        return; // a variant that runs one decomposition only has nothing to compare
    }
    let (mut rng, seed) = Rng::fresh(salt);
    for spec in [
        "gaussian:5",
        "gaussian:9:2.5",
        "box:7x3",
        "binomial:6",
        "sobel-x",
        "gaussian:15",
    ] {
        for border in Border::ALL {
            let kernel = convflow::filter::spec::parse_spec(spec).unwrap();
            let format = rng.pick(&[PixelFormat::Gray8, PixelFormat::Rgb8, PixelFormat::Yuv420p]);
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
            let (mut a, mut b) = (Frame::like(&src), Frame::like(&src));
            backend.filter_frame(&full, &src, &mut a).unwrap();
            backend.filter_frame(&sep, &src, &mut b).unwrap();
            let worst = a
                .data()
                .iter()
                .zip(b.data())
                .map(|(x, y)| x.abs_diff(*y))
                .max()
                .unwrap_or(0);
            assert!(
                worst <= 1,
                "seed {seed}: {spec} {border} {format}: full vs separable differ by {worst}"
            );
        }
    }
}

/// One backend object filters frames of changing shapes and formats in a row (buffers reused).
pub fn reused_across_shapes(make: &dyn Fn() -> Option<Box<dyn Backend>>, salt: u64) {
    let Some(mut backend) = make() else { return };
    let (mut rng, seed) = Rng::fresh(salt);
    for i in 0..12 {
        let format = PixelFormat::ALL[i % PixelFormat::ALL.len()];
        let (w, h) = (rng.range(1, 90), rng.range(1, 90));
        let src = random_frame(&mut rng, format, w, h);
        let (kernel, border) = (random_kernel(&mut rng, 9), rng.pick(&Border::ALL));
        let filter = random_filter(&mut rng, kernel, border);
        check_case(
            backend.as_mut(),
            &filter,
            &src,
            &mut rng,
            &describe(seed, &filter, &src),
        );
    }
}

/// Dyadic kernels on integer inputs make exact .5 ties: they must round half to even.
pub fn exact_ties_round_half_to_even(make: &dyn Fn() -> Option<Box<dyn Backend>>, salt: u64) {
    let Some(mut backend) = make() else { return };
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
        for mode in [Mode::Full, Mode::Auto] {
            let (w, h) = (rng.range(1, 120), rng.range(1, 80));
            let src = random_frame(&mut rng, PixelFormat::Rgb8, w, h);
            let mut filter = Filter::new(kernel.clone());
            filter.mode = mode;
            filter.border = rng.pick(&Border::ALL);
            assert!(
                common::exact_in_f32(&filter.plan().unwrap()),
                "{} should be exact",
                kernel.name
            );
            check_case(
                backend.as_mut(),
                &filter,
                &src,
                &mut rng,
                &describe(seed, &filter, &src),
            );
        }
    }
}

/// Frames of awkward large sizes (odd, one row, 4K), every border.
pub fn awkward_large_frames(make: &dyn Fn() -> Option<Box<dyn Backend>>, salt: u64) {
    let Some(mut backend) = make() else { return };
    let (mut rng, seed) = Rng::fresh(salt);
    let cases = [
        (PixelFormat::Rgb8, 1921, 1081, 5),
        (PixelFormat::Gray8, 3840, 2160, 3),
        (PixelFormat::Nv12, 1921, 1081, 4),
        (PixelFormat::Gray8, 1000, 1, 7),
    ];
    for (i, (format, w, h, k)) in cases.into_iter().enumerate() {
        let src = random_frame(&mut rng, format, w, h);
        let mut filter = Filter::new(library::gaussian(k, k, None, format!("gaussian:{k}")).unwrap());
        filter.border = Border::ALL[i % 4];
        filter.mode = if i % 2 == 0 { Mode::Full } else { Mode::Separable };
        check_case(
            backend.as_mut(),
            &filter,
            &src,
            &mut rng,
            &describe(seed, &filter, &src),
        );
    }
}

macro_rules! backend_suite {
    ($($name:ident => $make:expr;)*) => {$(
        mod $name {
            use super::*;
            fn make() -> Option<Box<dyn Backend>> {
                $make
            }
            #[test]
            fn random_images_every_format_border_and_kernel() {
                random_cases(&make, 1);
            }
            #[test]
            fn tiny_images_and_kernels_larger_than_the_image() {
                tiny_images_and_kernels_larger_than_image(&make, 2);
            }
            #[test]
            fn kernels_larger_than_63() {
                kernels_beyond_63_taps(&make, 3);
            }
            #[test]
            fn separable_path_within_one_lsb_of_full_path() {
                separable_within_one_lsb_of_full(&make, 4);
            }
            #[test]
            fn exact_ties_round_half_to_even() {
                super::exact_ties_round_half_to_even(&make, 6);
            }
            #[test]
            fn awkward_large_frames() {
                super::awkward_large_frames(&make, 7);
            }
            #[test]
            fn one_backend_reused_across_shapes_and_formats() {
                reused_across_shapes(&make, 5);
            }
        }
    )*};
}

backend_suite! {
    cpu_seq => Some(Box::new(CpuSeq::new()));
    cpu_par_2_threads => Some(Box::new(CpuPar::new(2).unwrap()));
    cpu_par_3_threads => Some(Box::new(CpuPar::new(3).unwrap()));
}

/// A CUDA backend, or None (test skipped) without a usable GPU; with CONVFLOW_REQUIRE_GPU=1 a
/// missing GPU fails the test instead.
#[cfg(feature = "cuda")]
fn cuda(variant: &str, block: Option<(u32, u32)>) -> Option<Box<dyn Backend>> {
    cuda_copies(variant, block, false)
}

#[cfg(feature = "cuda")]
fn cuda_copies(variant: &str, block: Option<(u32, u32)>, pageable: bool) -> Option<Box<dyn Backend>> {
    use convflow::backend::cuda::CudaBackend;
    match CudaBackend::new(0, variant.parse().unwrap(), block) {
        Ok(mut b) => {
            b.set_pageable(pageable);
            Some(Box::new(b))
        }
        Err(e) => {
            common::skip_without_gpu(e);
            None
        }
    }
}

#[cfg(feature = "cuda")]
backend_suite! {
    cuda_global => cuda("global", None);
    cuda_constant => cuda("constant", None);
    cuda_shared => cuda("shared", None);
    cuda_shared_constant => cuda("shared-constant", None);
    cuda_texture => cuda("texture", None);
    cuda_separable_global => cuda("separable-global", None);
    cuda_separable_shared => cuda("separable-shared", None);
    cuda_fast => cuda("fast", None);
    cuda_fast_block_16x4 => cuda("fast", Some((16, 4)));
    cuda_shared_block_8x8 => cuda("shared", Some((8, 8)));
    cuda_auto => cuda("auto", None);
    cuda_fast_pageable_copies => cuda_copies("fast", None, true);
}
