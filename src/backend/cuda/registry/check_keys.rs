//! The modules CI compiles through NVRTC with no GPU (tests/gpu.rs): every module family, a
//! spread of `fast` specializations as the rules and launches build them, and `fast_pair`
//! modules over pairs of them.

use super::{ModuleKey, PairKey};
use crate::backend::cuda::abi;
use crate::backend::cuda::fast::{
    FastSpec, SEP_BLOCK, SEP_BLOCK_SQUARE16, SEP_BLOCK_TALL_RGBA, SEP_BLOCK_WIDE_GRAY,
    SEP_ROWS_MID, SEP_ROWS_RGB_SMALL, SEP_ROWS_TALL, SEP_ROWS_TALL_16, SEP_SHAPE_SHORT_RGB48,
    SEP_ZERO_OFFSET_MIN_HEIGHT,
};
use crate::border::Border;
use crate::filter::IntegerForm;

/// Every module family and a spread of `fast` specializations, for build checks (CI compiles
/// them all with NVRTC, no GPU needed).
pub fn all_check_keys() -> Vec<ModuleKey> {
    let mut keys = vec![ModuleKey::Direct, ModuleKey::Separable, ModuleKey::Hold];
    let mut i = 0;
    for ch in 1..=4 {
        // Sizes cover the register-segment path, unrolled and looped rows; samples of 1 and 2
        // bytes alternate.
        for (kw, kh) in [(1, 1), (3, 2), (4, 7), (25, 25), (63, 63)] {
            for separable in [false, true] {
                let b = Border::ALL[i % 4];
                let spec = if separable {
                    FastSpec::separable(kw, kh, ch, b)
                } else {
                    FastSpec::new(kw, kh, ch, b)
                };
                // The clamp left out (Plan::saturation_free) on every third.
                let spec = FastSpec {
                    saturation_free: i % 3 == 0,
                    ..spec.with_sample_bytes(1 + i / 2 % 2)
                };
                // The separable kernel with an input tile too (CONVFLOW_FAST_SEPG=0), and
                // with its row pass from global memory on every block (CONVFLOW_FAST_SEPA=0).
                if separable {
                    keys.push(ModuleKey::Fast(FastSpec {
                        row_global: !spec.row_global,
                        row_staged: false,
                        ..spec.clone()
                    }));
                    keys.push(ModuleKey::Fast(FastSpec {
                        row_staged: !spec.row_staged,
                        sums_pad: i / 2 % 2 == 0,
                        ..spec.clone()
                    }));
                    // The exact integer row pass (8-bit samples), staged and not; on 2-4
                    // channels its windows also regrouped per channel.
                    if spec.sb == 1 && spec.row_global {
                        for row_staged in [false, true] {
                            keys.push(ModuleKey::Fast(FastSpec {
                                row_int: Some(1 << (i % 9)),
                                row_staged,
                                sums_pad: i / 2 % 2 == 1,
                                ..spec.clone()
                            }));
                            if ch >= 2 {
                                keys.push(ModuleKey::Fast(FastSpec {
                                    row_int: Some(1 << (i % 7)),
                                    deinterleave: true,
                                    row_staged,
                                    ..spec.clone()
                                }));
                            }
                        }
                    }
                }
                // 8-bit RGB threads of 4 samples, a pixel and a third (`sep_px`), in items of
                // 8 threads' outputs: the f32 and the integer row passes.
                if separable && ch == 3 && spec.row_global {
                    for row_int in [None, Some(1 << (i % 7))] {
                        keys.push(ModuleKey::Fast(FastSpec {
                            px: 4,
                            row_px: 32,
                            row_int,
                            ..spec.clone().with_sample_bytes(1)
                        }));
                    }
                }
                // The f32 row pass one channel at a time, in items of 4 threads'
                // outputs, and the column pass rolled (`sep_rolled`), wherever they fit.
                if separable && spec.row_global {
                    let rolled = FastSpec {
                        row_px: 4 * spec.px,
                        ..spec.clone()
                    };
                    keys.push(ModuleKey::Fast(FastSpec {
                        sums_planar: rolled.sums_planar_fits(),
                        col_rolled: rolled.col_rolled_fits(),
                        ..rolled
                    }));
                }
                // One channel on large launches: 8 or 6 rows per thread of 8-bit samples, 6
                // of 16-bit ones (`sep_rows_tall`).
                if separable && ch == 1 {
                    let rows: &[usize] = if spec.sb == 1 {
                        &[SEP_ROWS_TALL, SEP_ROWS_MID]
                    } else {
                        &[SEP_ROWS_TALL_16]
                    };
                    for &py in rows {
                        keys.push(ModuleKey::Fast(FastSpec {
                            py,
                            sums_pad: true,
                            ..spec.clone()
                        }));
                        // … with the exact integer row pass, staged and not.
                        if spec.sb == 1 && spec.row_global {
                            for row_staged in [false, true] {
                                keys.push(ModuleKey::Fast(FastSpec {
                                    py,
                                    sums_pad: true,
                                    row_int: Some(64),
                                    row_staged,
                                    ..spec.clone()
                                }));
                            }
                        }
                    }
                }
                // The block compiled in (`sep_fixed_block`): 16 × 8, 8 × 16 or 4 × 32 in turn,
                // staged or not, the exact integer row pass on 8-bit samples, a zero offset on
                // one channel and from 10 taps high on more (`sep_zero_offset`).
                if separable && spec.row_global {
                    let j = i % 3;
                    keys.push(ModuleKey::Fast(FastSpec {
                        fixed_block: Some([(16, 8), (8, 16), (4, 32)][j]),
                        zero_offset: ch == 1 || kh >= SEP_ZERO_OFFSET_MIN_HEIGHT,
                        row_staged: j != 1,
                        row_int: (spec.sb == 1 && j != 2).then_some(1 << (i % 7)),
                        ..spec.clone()
                    }));
                }
                keys.push(ModuleKey::Fast(spec));
                i += 1;
            }
        }
        // The register kernel, full and separable, odd and even sizes, both sample sizes.
        for sb in [1, 2] {
            for (kw, kh, separable) in [
                (3, 3, false),
                (1, 3, false),
                (4, 5, false),
                (7, 6, false),
                (3, 2, true),
                (7, 7, true),
            ] {
                let b = Border::ALL[i % 4];
                if let Some(spec) = FastSpec::register(kw, kh, ch, b, separable, sb) {
                    keys.push(ModuleKey::Fast(FastSpec {
                        saturation_free: i % 3 == 1,
                        ..spec
                    }));
                }
                i += 1;
            }
        }
        // The exact integer kernel: odd and even sizes, dyadic and odd divisors, offsets.
        for (kw, kh, divisor, offset) in [
            (3, 3, 16, 0),
            (4, 3, 1, -5),
            (5, 5, 25, 3200),
            (6, 7, 1, 0),
            (9, 9, 81, 0),
        ] {
            let form = IntegerForm {
                width: kw,
                height: kh,
                weights: vec![1; kw * kh],
                divisor,
                offset,
            };
            let b = Border::ALL[i % 4];
            if let Some(spec) = FastSpec::integer(&form, ch, 1, b, false, 0) {
                // With the float finish where the divisor allows it.
                if abi::float_finish_divisor(divisor, 1) {
                    keys.push(ModuleKey::Fast(FastSpec {
                        saturation_free: true,
                        ..spec.clone()
                    }));
                }
                keys.push(ModuleKey::Fast(spec));
            }
            // 16-bit samples (dp2a), up to side 5 whatever the rule's side; one row per
            // thread too, and the float finish (SAT_FREE) where the divisor allows it.
            if kw.max(kh) <= 5 {
                if let Some(reg) = FastSpec::register(kw, kh, ch, b, false, 2) {
                    let spec = FastSpec {
                        int: Some((divisor, offset)),
                        ..reg
                    };
                    if abi::float_finish_divisor(divisor, 2) {
                        keys.push(ModuleKey::Fast(FastSpec {
                            saturation_free: true,
                            py: 1,
                            ..spec.clone()
                        }));
                    }
                    keys.push(ModuleKey::Fast(spec));
                }
            }
            // Interleaved channels regrouped per channel, 4 and 8 pixels per thread.
            if ch >= 2 && kw <= 5 {
                if let Some(spec) = FastSpec::integer(&form, 1, 1, b, false, 0) {
                    for pixels in [4, 8] {
                        keys.push(ModuleKey::Fast(FastSpec {
                            ch,
                            deinterleave: true,
                            px: ch * pixels,
                            ..spec.clone()
                        }));
                    }
                }
            }
            i += 1;
        }
        // The two-factor integer kernel of separable one-channel plans.
        // (Integer forms have odd or power-of-two divisors.)
        for (kw, kh, divisor) in [(7, 7, 49), (6, 7, 64), (7, 4, 1)] {
            if ch != 1 {
                break;
            }
            let form = IntegerForm {
                width: kw,
                height: kh,
                weights: vec![1; kw * kh],
                divisor,
                offset: 0,
            };
            let spec = FastSpec::integer(&form, 1, 1, Border::ALL[i % 4], true, usize::MAX);
            keys.extend(spec.map(ModuleKey::Fast));
            i += 1;
        }
    }
    // Small planes' shapes as the launch builds them: rgb48 4–5 taps high (16 × 8, one row,
    // no launch bound, `SEP_SHAPE_SHORT_RGB48`) and 8-bit RGB's f32 row pass with two rows
    // (`SEP_ROWS_RGB_SMALL`).
    let hd = 1920 * 1080;
    keys.push(ModuleKey::Fast(
        FastSpec::separable(5, 4, 3, Border::Reflect)
            .with_sample_bytes(2)
            .for_pixels(hd)
            .for_block(SEP_SHAPE_SHORT_RGB48.block, hd, 3 * hd),
    ));
    keys.push(ModuleKey::Fast(
        FastSpec {
            py: SEP_ROWS_RGB_SMALL,
            row_staged: true,
            ..FastSpec::separable(6, 6, 3, Border::Wrap)
        }
        .for_block(SEP_BLOCK, hd, 3 * hd),
    ));
    // Large launches' row-pass items as a 4K launch builds them (`sep_row_threads`): one
    // 8-bit channel 7 taps wide, its integer row pass staged, and one 16-bit channel 15 taps
    // wide in the tall rows (`sep_rows_tall`), each in items of four threads' outputs, their
    // sums' rows padded; 8-bit RGB's regrouped integer row pass with its sums' rows padded
    // (`sums_padded`).
    let uhd = 3840 * 2160;
    keys.push(ModuleKey::Fast(
        FastSpec {
            row_int: Some(64),
            row_staged: true,
            sums_pad: true,
            ..FastSpec::separable(7, 7, 1, Border::Clamp)
        }
        .for_block(SEP_BLOCK, uhd, uhd),
    ));
    keys.push(ModuleKey::Fast(
        FastSpec {
            py: SEP_ROWS_TALL_16,
            sums_pad: true,
            ..FastSpec::separable(15, 15, 1, Border::Reflect).with_sample_bytes(2)
        }
        .for_block(SEP_BLOCK, uhd, uhd),
    ));
    // One 16-bit channel 7 taps high, a frame's only plane, in 16 × 16 blocks compiled in
    // with a zero offset (`sep_square16`, `sep_fixed_block`).
    keys.push(ModuleKey::Fast(FastSpec {
        fixed_block: Some(SEP_BLOCK_SQUARE16),
        zero_offset: true,
        row_staged: true,
        ..FastSpec::separable(7, 7, 1, Border::Clamp)
            .with_sample_bytes(2)
            .for_block(SEP_BLOCK_SQUARE16, uhd, uhd)
    }));
    // `fast_sep` staged with its block compiled in, reading its staged words by 16-byte loads
    // (`FastSpec::staged_vector`), as the launch builds it: one 8-bit channel 7 taps high in
    // 4-thread items with the integer row pass, and 5 taps high with the f32 one under wrap;
    // gray16 9 taps high in 16 × 16 blocks; NV12's chroma 5 taps high; P010's shifted luma;
    // RGBA 7 taps high with no sums for its alpha.
    for (spec, block) in [
        (
            FastSpec {
                py: SEP_ROWS_MID,
                row_int: Some(64),
                ..FastSpec::separable(7, 7, 1, Border::Clamp)
            },
            SEP_BLOCK,
        ),
        (FastSpec::separable(5, 5, 1, Border::Wrap), (32, 4)),
        (
            FastSpec::separable(9, 9, 1, Border::Reflect).with_sample_bytes(2),
            SEP_BLOCK_SQUARE16,
        ),
        (FastSpec::separable(5, 5, 2, Border::Zero), SEP_BLOCK),
        (
            FastSpec {
                shift: 6,
                ..FastSpec::separable(7, 7, 1, Border::Clamp).with_sample_bytes(2)
            },
            SEP_BLOCK,
        ),
        // RGBA with alpha kept and no sums for it (`CONVFLOW_FAST_SEPA=1`: RGBA never stages
        // by the rules).
        (
            FastSpec {
                mask: 0b0111,
                compact_sums: true,
                ..FastSpec::separable(7, 7, 4, Border::Reflect)
            },
            SEP_BLOCK,
        ),
    ] {
        let spec = FastSpec {
            row_staged: true,
            sums_pad: true,
            fixed_block: Some(block),
            zero_offset: spec.ch == 1,
            staged_vector: true,
            ..spec.for_block(block, uhd, uhd)
        };
        keys.push(ModuleKey::Fast(spec));
    }
    // The large planes' block and row shapes of the sixty-fourth round, compiled in
    // (`sep_rgba_large_block`, `sep_large16_shape`, `sep_rows_tall`; the launch's own choices
    // of padding, offset and launch bounds vary around them): 8-bit RGBA 15 taps high with
    // alpha kept in 8 × 16, RGBA64 15 in 8 × 16 and 25 in 4 × 32 of 4 rows (alpha kept),
    // rgb48 11 in 16 × 8, one 8-bit channel 7 high in 8 rows (integer row pass, staged).
    for (k, ch, sb, mask, block) in [
        (15, 4, 1, 0b0111, SEP_BLOCK),
        (15, 4, 2, 0b0111, SEP_BLOCK),
        (25, 4, 2, 0b0111, SEP_BLOCK_TALL_RGBA),
        (11, 3, 2, 0b111, SEP_BLOCK_WIDE_GRAY),
    ] {
        let spec = FastSpec {
            mask,
            ..FastSpec::separable(k, k, ch, Border::ALL[k % 4]).with_sample_bytes(sb)
        }
        .for_pixels(uhd);
        let spec = FastSpec {
            compact_sums: ch == 4,
            sums_pad: true,
            fixed_block: Some(block),
            ..spec
        };
        keys.push(ModuleKey::Fast(spec.for_block(block, uhd, uhd)));
    }
    keys.push(ModuleKey::Fast(
        FastSpec {
            py: SEP_ROWS_TALL,
            row_int: Some(64),
            row_staged: true,
            fixed_block: Some(SEP_BLOCK_WIDE_GRAY),
            ..FastSpec::separable(7, 7, 1, Border::Reflect)
        }
        .for_block(SEP_BLOCK_WIDE_GRAY, uhd, 6 * uhd),
    ));
    keys.push(ModuleKey::Fast(
        FastSpec {
            row_int: Some(256),
            deinterleave: true,
            row_staged: true,
            sums_pad: true,
            ..FastSpec::separable(9, 9, 3, Border::Wrap)
        }
        .for_block(SEP_BLOCK, uhd, 3 * uhd),
    ));
    // The full tiled kernel in rows other than the rule's, as the launch builds them: RGBA64
    // 12 × 12 in two and 16 × 16 in four (`FULL_ROWS_BY_SIDE_16`), RGBA 14 × 14 in two
    // (`FULL_ROWS_BY_SIDE`), one channel of 16-bit samples 11 × 11 in two and 9 × 9 in one,
    // rgb48 9 × 9 in one (`full_rows_mid16`), RGBA64 17 × 17, RGBA 23 × 23 and rgb48 15 × 15
    // in four and P010's chroma 19 × 19 in two (`FULL_ROWS_LARGE`).
    for (k, ch, sb, py) in [
        (12, 4, 2, 2),
        (16, 4, 2, 4),
        (17, 4, 2, 4),
        (14, 4, 1, 2),
        (23, 4, 1, 4),
        (11, 1, 2, 2),
        (9, 1, 2, 1),
        (9, 3, 2, 1),
        (15, 3, 2, 4),
        (19, 2, 2, 2),
    ] {
        keys.push(ModuleKey::Fast(FastSpec {
            py,
            ..FastSpec::new(k, k, ch, Border::ALL[k % 4]).with_sample_bytes(sb)
        }));
    }
    // Variants of those: samples by the conversion unit (16-bit ones, and 8-bit bytes 0 and 3 in
    // the f32 register kernel, also with RGBA's alpha kept); RGBA with its alpha kept (every
    // kernel of four channels, so every way an unfiltered channel is skipped and passed
    // through; `fast_sep` with no sums for it); MSB-aligned 16-bit samples (P010) with --abs
    // and an offset; one launch over the three planes of a YUV frame (every one-channel
    // kernel); the tiled separable kernel with launch bounds and with wider row-pass items.
    let variants: Vec<_> = keys
        .iter()
        .enumerate()
        .flat_map(|(n, k)| {
            let ModuleKey::Fast(s) = k else {
                return Vec::new();
            };
            let mut v = Vec::new();
            // 16-bit samples from bit 0 converted by the conversion unit (as the rules build
            // them), on every other such key: every kernel family has some.
            if s.sb == 2 && s.shift == 0 && n % 2 == 0 {
                v.push(FastSpec {
                    conv_unit: true,
                    ..s.clone()
                });
            }
            // 8-bit words' bytes 0 and 3 by the conversion unit: the f32 register kernel's
            // full plans of 2-4 channels (every such key: few).
            if s.sb == 1 && s.reg && s.int.is_none() && !s.separable && s.ch >= 2 {
                let converted = FastSpec {
                    conv_unit: true,
                    ..s.clone()
                };
                if s.ch == 4 {
                    v.push(FastSpec {
                        mask: 0b0111,
                        ..converted.clone()
                    });
                }
                v.push(converted);
            }
            if s.ch == 4 {
                // With alpha kept `fast_sep` keeps no sums for it where that fits
                // (`sep_compact_sums`; in blocks 4 wide its rows `sep_sums_row` apart), and
                // keeps them under `CONVFLOW_FAST_SEPK=0`: both.
                let kept = FastSpec {
                    mask: 0b0111,
                    ..s.clone()
                };
                if kept.compact_sums_fits() {
                    v.push(kept.clone());
                }
                v.push(FastSpec {
                    compact_sums: true,
                    ..kept
                });
            }
            if s.sb == 2 && s.ch <= 2 {
                v.push(FastSpec {
                    shift: 6,
                    abs: true,
                    zero_offset: false,
                    ..s.clone()
                });
                // P010's shifted words under the integer kernel's float finish.
                if s.int.is_some() && s.saturation_free {
                    v.push(FastSpec {
                        shift: 6,
                        ..s.clone()
                    });
                }
            }
            if s.ch == 1 {
                v.push(FastSpec {
                    planes: 3,
                    ..s.clone()
                });
            }
            if s.separable && !s.reg && s.kw <= 25 {
                v.push(FastSpec {
                    tiled_bounds: Some((128, 3)),
                    ..s.clone()
                });
                // Row-pass items of two and four threads' outputs.
                if s.row_global {
                    for m in [2, 4] {
                        v.push(FastSpec {
                            row_px: m * s.px,
                            ..s.clone()
                        });
                    }
                }
            }
            v
        })
        .map(ModuleKey::Fast)
        .collect();
    keys.extend(variants);
    // One launch over a frame's two planes of two specializations (fast_pair.cuh), as NV12's
    // and P010's frames take it: for each kind of kernel (f32 or integer register kernel,
    // tiled full or separable, the separable one with its exact integer row pass too), a
    // one-channel key with a two-channel key of the same kind, 8-bit samples and 16-bit
    // MSB-aligned ones (P010's), and two pairs of different kinds; with launch bounds and
    // without.
    let kind = |s: &FastSpec| match (s.reg, s.int.is_some(), s.separable) {
        (true, true, _) => "fast_int",
        (true, false, _) => "fast_reg",
        (false, _, true) => "fast_sep",
        (false, _, false) => "fast_full",
    };
    let find = |ch: usize, want: &dyn Fn(&FastSpec) -> bool| {
        keys.iter().find_map(|k| match k {
            ModuleKey::Fast(s) if s.ch == ch && s.planes == 1 && want(s) => Some(s),
            _ => None,
        })
    };
    let mut pairs: Vec<[&FastSpec; 2]> = Vec::new();
    for k in ["fast_reg", "fast_int", "fast_full", "fast_sep"] {
        for (sb, shift) in [(1, 0), (2, 6)] {
            let a = find(1, &|s| kind(s) == k && s.sb == sb && s.row_int.is_none());
            let b = find(2, &|s| kind(s) == k && s.sb == sb && s.shift == shift);
            if let (Some(a), Some(b)) = (a, b) {
                pairs.push([a, b]);
            }
        }
    }
    let row_int = |ch| find(ch, &|s| s.row_int.is_some() && (ch == 1 || s.deinterleave));
    let int = find(1, &|s| kind(s) == "fast_int");
    let reg = find(2, &|s| kind(s) == "fast_reg");
    if let (Some(a), Some(b), Some(int), Some(reg)) = (row_int(1), row_int(2), int, reg) {
        pairs.extend([[a, b], [int, reg], [a, reg]]);
    }
    // `fast_sep` with the block compiled in on both halves (one launch's block), 8-bit NV12's
    // luma with its zero offset and integer row pass beside its chroma.
    let fixed = |ch: usize| find(ch, &|s| s.fixed_block.is_some() && s.sb == 1);
    if let (Some(a), Some(b)) = (fixed(1), fixed(2)) {
        pairs.push([a, b]);
    }
    // 16-bit samples from bit 0 converted by the conversion unit on both halves (16-bit NV12's
    // planes): the first kind that has such keys of one and two channels.
    let converted = ["fast_sep", "fast_full", "fast_reg"]
        .into_iter()
        .find_map(|k| {
            let a = find(1, &|s| s.conv_unit && kind(s) == k)?;
            Some([a, find(2, &|s| s.conv_unit && kind(s) == k)?])
        });
    pairs.extend(converted);
    // 8-bit NV12 under a float-weight kernel of 5 taps: the luma's register kernel converting by
    // byte_perm beside the chroma's converting bytes 0 and 3 by the conversion unit.
    let reg8 = |ch: usize, unit: bool| {
        find(ch, &|s| {
            kind(s) == "fast_reg"
                && s.sb == 1
                && !s.separable
                && s.kw.max(s.kh) == 5
                && s.conv_unit == unit
        })
    };
    if let (Some(a), Some(b)) = (reg8(1, false), reg8(2, true)) {
        pairs.push([a, b]);
    }
    let pairs: Vec<ModuleKey> = pairs
        .into_iter()
        .enumerate()
        .map(|(i, [a, b])| {
            ModuleKey::FastPair(Box::new(PairKey {
                specs: [a.clone(), b.clone()],
                entries: [kind(a), kind(b)],
                bounds: (i % 2 == 0).then_some((128, 4)),
            }))
        })
        .collect();
    keys.extend(pairs);
    keys
}
