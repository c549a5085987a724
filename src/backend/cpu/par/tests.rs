//! Unit tests of `cpu-par`: every SIMD width this CPU runs, and the column strips of its
//! separable bands, give cpu-seq's bytes.

use super::{widest, CpuPar, AVX2, AVX512, BASE};
use crate::backend::{cpu::CpuSeq, Backend};
use crate::bench::fill_random;
use crate::border::Border;
use crate::filter::{test_plan, Mode};
use crate::frame::{Frame, PixelFormat};

#[test]
fn every_band_code_this_cpu_runs_gives_what_cpu_seq_gives() {
    // Rows of whole 64-sample blocks, then a last block overlapping the one before (13,
    // 28, 22 or 11 samples left over) or a rest sample by sample (RGB's 6); a row under
    // one block; planes of 1 to 4 channels.
    let formats = [
        (PixelFormat::Gray8, 333, 41),
        (PixelFormat::Gray8, 50, 19),
        (PixelFormat::Rgb8, 130, 37),
        (PixelFormat::Rgba16, 71, 23),
        (PixelFormat::Yuv420p10, 150, 30),
    ];
    let plans = [
        ("gaussian:7", Mode::Separable),
        ("gaussian:25", Mode::Separable),
        ("gaussian:31x3", Mode::Separable),
        ("gaussian:9x5", Mode::Full),
    ];
    let setups: Vec<_> = [BASE, AVX2, AVX512]
        .into_iter()
        .filter(|&l| l <= widest())
        .map(|l| setup(format!("band code {l}"), move |par| par.simd = l))
        .collect();
    like_cpu_seq(&formats, &plans, 3, &setups);
}

#[test]
fn column_strips_give_what_cpu_seq_gives() {
    // Planes wide enough for two and three strips; RGBA's alpha is passed through.
    let formats = [
        (PixelFormat::Gray8, 1601, 37),
        (PixelFormat::Rgb8, 1090, 23),
        (PixelFormat::Rgba16, 450, 19),
        (PixelFormat::Nv12, 1540, 20),
    ];
    // Odd and even widths and heights (the anchor at k / 2).
    let plans = [
        "gaussian:7",
        "gaussian:25",
        "gaussian:31x3",
        "gaussian:6x9",
        "box:8x4",
    ]
    .map(|spec| (spec, Mode::Separable));
    let setups: Vec<_> = [2, 3]
        .into_iter()
        .map(|n| setup(format!("{n} strips"), move |par| par.strips = Some(n)))
        .collect();
    like_cpu_seq(&formats, &plans, 4, &setups);
}

/// What a test changes in a fresh `CpuPar`.
type Setup = Box<dyn Fn(&mut CpuPar)>;

/// A named [`Setup`].
fn setup(name: String, f: impl Fn(&mut CpuPar) + 'static) -> (String, Setup) {
    (name, Box::new(f))
}

/// Filters a random frame of each of `formats` (format, width, height) with each of `plans`
/// under every border, through a `CpuPar` of `threads` threads set up by each of `setups`,
/// and asserts cpu-seq's bytes.
fn like_cpu_seq(
    formats: &[(PixelFormat, usize, usize)],
    plans: &[(&str, Mode)],
    threads: usize,
    setups: &[(String, Setup)],
) {
    for &(format, w, h) in formats {
        let mut src = Frame::new(format, w, h).unwrap();
        fill_random(&mut src, (w * h) as u64);
        for &(spec, mode) in plans {
            for &border in Border::ALL {
                let mut plan = test_plan(spec, mode);
                plan.border = border;
                let mut want = Frame::new(format, w, h).unwrap();
                CpuSeq::new().filter_frame(&plan, &src, &mut want).unwrap();
                for (name, setup) in setups {
                    let mut par = CpuPar::new(threads).unwrap();
                    setup(&mut par);
                    let mut got = Frame::new(format, w, h).unwrap();
                    par.filter_frame(&plan, &src, &mut got).unwrap();
                    assert!(
                        got.data() == want.data(),
                        "{format} {w}x{h} {spec} {mode:?} {border}, {name}"
                    );
                }
            }
        }
    }
}
