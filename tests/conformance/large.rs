//! The large-frame body of the conformance suite: frames of awkward large sizes (odd, one
//! row, 1080p to 4K), whose launches are large enough to reach the rules CUDA's `fast` applies
//! by launch size only (rows per thread, blocks, launch bounds, rolled loops), every border,
//! checked like every other case against cpu-seq and the f64 oracle.

use super::*;

/// Frames of awkward large sizes (odd, one row, 4K), every border.
pub fn awkward_large_frames(backend: &mut dyn Backend, salt: u64) {
    let runs = backend.runs();
    let (mut rng, seed) = Rng::fresh(salt);
    let cases = [
        (PixelFormat::Rgb8, 1921, 1081, 5),
        (PixelFormat::Gray8, 3840, 2160, 3),
        (PixelFormat::Nv12, 1921, 1081, 4),
        (PixelFormat::Gray8, 1000, 1, 7),
        (PixelFormat::Yuv420p10, 1921, 1081, 5),
        (PixelFormat::P010, 1281, 721, 3),
        // The tiled kernels' padded rows (2 and 4 channels) across many blocks and both edges.
        (PixelFormat::Rgba8, 1283, 517, 11),
        (PixelFormat::Nv12, 1285, 389, 13),
        (PixelFormat::Rgba16, 643, 263, 9),
        (PixelFormat::Rgba8, 517, 131, 25),
    ];
    for (i, (format, w, h, k)) in cases.into_iter().enumerate() {
        let mode = match runs {
            Support::FullOnly => Mode::Full,
            Support::SeparableOnly => Mode::Separable,
            Support::Both if i % 2 == 0 => Mode::Full,
            Support::Both => Mode::Separable,
        };
        let how = (Border::ALL[i % 4], None, mode);
        check_gaussian(backend, (&mut rng, seed), (format, w, h), (k, k), how);
    }
    // Separable plans where CUDA's `fast` rolls its loops (`sep_rolled`): 3 channels from 13 taps
    // wide (8-bit, on planes whose threads own 4 pixels: under 1 M pixels, `sep_px`) or 11
    // (16-bit), 2 channels (NV12's and P010's chroma) from 17, 8-bit RGBA from 4 on planes under
    // 4 M pixels (alpha kept and filtered) and on larger ones (the backend with the large planes'
    // rules) at 6-10 with alpha kept, 6-9 and from 19 with alpha filtered, RGBA64 from 7 under 1 M
    // and with alpha filtered from 17; RGBA64 5 taps high. Where its launch bounds are eased
    // (RGBA64 10 taps high on 1 M pixels, `unspilled`) and 8-bit RGBA 10 high takes two rows (large
    // rules). 8-bit RGBA's integer row pass with its windows regrouped per channel
    // (`sep_int_channels`: `gaussian:9`'s row factor is integer), on small and large planes; one
    // channel's 6 rows a thread (`sep_rows_tall`; large rules; 8 on devices of fast memory, from
    // 40 M samples) at 7 taps high under a 9-wide integer row pass, staged, and at 10 (8-bit and
    // 16-bit). A 7×7 gray frame takes the two-factor integer kernel under the large rules. rgb48
    // 4-5 taps high on planes under 4 M pixels (16 × 8 blocks, one row, no launch bound,
    // `SEP_SHAPE_SHORT_RGB48`) and 8-bit RGB's f32 row pass with two rows there
    // (`SEP_ROWS_RGB_SMALL`: an even Gaussian's row factor is not integer). A frame of one 16-bit
    // plane 7 × 8 in 16 × 16 blocks (`sep_square16`; large rules), and one 8-bit channel 6 taps
    // high on a 1440p-sized launch, which takes 6 rows a thread on devices of fast memory
    // (`SEP_ROWS_MID_MIN_SAMPLES_FAST_MEMORY`) and 4 elsewhere (under the large rules 8 on devices
    // of fast memory, `SEP_ROWS_EIGHT_MIN_SAMPLES_FAST_MEMORY`, else 6). Where the large planes'
    // rules take other shapes (sixty-fourth round, large rules): 8-bit RGBA 15 high with alpha kept
    // in 8 × 16, RGBA64 25 high in 4 × 32 of 4 rows and 15 high in 8 × 16 of 4, rgb48 11 in 16 × 8;
    // the one 8-bit channel 7 high above (7 × 7 and 9 × 7) in 8 rows (`sep_rows_tall` on fast
    // memory) and 8-bit RGBA 10 high with alpha kept in two.
    let separable = [
        (PixelFormat::Rgb8, 1283, 643, 15, 15, AlphaMode::Keep),
        (PixelFormat::Rgb8, 1283, 721, 13, 13, AlphaMode::Keep),
        (PixelFormat::Rgb16, 643, 363, 19, 25, AlphaMode::Keep),
        (PixelFormat::Rgb8, 1285, 517, 25, 9, AlphaMode::Keep),
        (PixelFormat::Rgba16, 1283, 721, 9, 5, AlphaMode::Keep),
        (PixelFormat::Rgba8, 1283, 517, 13, 7, AlphaMode::Keep),
        (PixelFormat::Rgba8, 1029, 391, 25, 11, AlphaMode::Filter),
        (PixelFormat::Rgba16, 643, 363, 7, 9, AlphaMode::Filter),
        (PixelFormat::Nv12, 1285, 723, 17, 5, AlphaMode::Keep),
        (PixelFormat::P010, 643, 365, 21, 11, AlphaMode::Keep),
        (PixelFormat::Rgba8, 1031, 263, 10, 10, AlphaMode::Keep),
        (PixelFormat::Rgba16, 1283, 803, 10, 10, AlphaMode::Keep),
        (PixelFormat::Rgba8, 643, 365, 19, 9, AlphaMode::Filter),
        (PixelFormat::Rgba16, 1283, 803, 17, 13, AlphaMode::Filter),
        (PixelFormat::Rgba8, 1283, 517, 9, 9, AlphaMode::Keep),
        (PixelFormat::Rgba8, 771, 259, 7, 9, AlphaMode::Filter),
        (PixelFormat::Rgba8, 1031, 389, 6, 6, AlphaMode::Keep),
        (PixelFormat::Rgba8, 773, 261, 4, 8, AlphaMode::Filter),
        (PixelFormat::Rgba8, 643, 391, 6, 7, AlphaMode::Filter),
        (PixelFormat::Gray8, 1283, 391, 7, 7, AlphaMode::Keep),
        (PixelFormat::Gray8, 1281, 393, 9, 7, AlphaMode::Keep),
        (PixelFormat::Gray8, 1285, 263, 10, 10, AlphaMode::Keep),
        (PixelFormat::Gray16, 643, 395, 10, 10, AlphaMode::Keep),
        (PixelFormat::Rgb16, 1283, 803, 5, 5, AlphaMode::Keep),
        (PixelFormat::Rgb16, 643, 365, 7, 4, AlphaMode::Keep),
        (PixelFormat::Rgb8, 1921, 1081, 8, 6, AlphaMode::Keep),
        (PixelFormat::Gray16, 1283, 723, 7, 8, AlphaMode::Keep),
        (PixelFormat::Gray8, 2561, 1441, 6, 6, AlphaMode::Keep),
        (PixelFormat::Rgba8, 1029, 263, 15, 15, AlphaMode::Keep),
        (PixelFormat::Rgba16, 645, 263, 11, 25, AlphaMode::Keep),
        (PixelFormat::Rgba16, 517, 391, 13, 15, AlphaMode::Keep),
        (PixelFormat::Rgb16, 1029, 393, 11, 11, AlphaMode::Keep),
    ];
    for (i, (format, w, h, kw, kh, alpha)) in separable.into_iter().enumerate() {
        let mode = match runs {
            Support::FullOnly => Mode::Full,
            _ => Mode::Separable,
        };
        let how = (Border::ALL[(i + 1) % 4], Some(alpha), mode);
        check_gaussian(backend, (&mut rng, seed), (format, w, h), (kw, kh), how);
    }
    // Full plans where CUDA's `fast` takes rows other than its unrolled-size rule: 4 channels
    // at 12-14 taps in two (`FULL_ROWS_BY_SIDE`, `FULL_ROWS_BY_SIDE_16`; 70 K threads, over
    // the 64 K those rows need), one channel of 16-bit samples in two from 112 K threads at
    // four rows (gray16 1921×1081: 127 K) and in one below (YUV 4:2:0 10-bit 1283×721: 85 K),
    // rgb48 9 in one (`full_rows_mid16`; 70 K threads at two rows, over `tiled_rows`' 64 K),
    // RGBA64 15, RGBA 23 and rgb48 15 in four, RGBA64 21 and P010's chroma 19 in two where the
    // backend takes the large planes' rules (`FULL_ROWS_LARGE`; the others, one row).
    let full = [
        (PixelFormat::Rgba16, 1031, 560, 13, AlphaMode::Keep),
        (PixelFormat::Rgba16, 645, 391, 15, AlphaMode::Keep),
        (PixelFormat::Rgba8, 519, 263, 23, AlphaMode::Filter),
        (PixelFormat::Rgba16, 389, 131, 21, AlphaMode::Keep),
        (PixelFormat::Rgb16, 391, 133, 15, AlphaMode::Keep),
        (PixelFormat::P010, 390, 134, 19, AlphaMode::Keep),
        (PixelFormat::Rgba8, 1031, 560, 12, AlphaMode::Filter),
        (PixelFormat::Gray16, 1921, 1081, 9, AlphaMode::Keep),
        (PixelFormat::Yuv420p10, 1283, 721, 11, AlphaMode::Keep),
        (PixelFormat::Rgb16, 1031, 560, 9, AlphaMode::Keep),
    ];
    for (i, (format, w, h, k, alpha)) in full.into_iter().enumerate() {
        let mode = match runs {
            Support::SeparableOnly => Mode::Separable,
            _ => Mode::Full,
        };
        let how = (Border::ALL[(i + 2) % 4], Some(alpha), mode);
        check_gaussian(backend, (&mut rng, seed), (format, w, h), (k, k), how);
    }
}

/// One case: a random `format` frame of `w` × `h` under `gaussian:kw×kh` with `border`, the
/// alpha mode (None: the filter's default) and `mode`, against cpu-seq and the oracle.
fn check_gaussian(
    backend: &mut dyn Backend,
    (rng, seed): (&mut Rng, u64),
    (format, w, h): (PixelFormat, usize, usize),
    (kw, kh): (usize, usize),
    (border, alpha, mode): (Border, Option<AlphaMode>, Mode),
) {
    let src = random_frame(rng, format, w, h);
    let name = if kw == kh {
        format!("gaussian:{kw}")
    } else {
        format!("gaussian:{kw}x{kh}")
    };
    let mut filter = Filter::new(library::gaussian(kw, kh, None, name).unwrap());
    filter.border = border;
    if let Some(alpha) = alpha {
        filter.alpha = alpha;
    }
    filter.mode = mode;
    check_seeded(backend, &filter, &src, rng, seed);
}
