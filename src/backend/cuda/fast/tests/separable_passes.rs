//! Unit tests of how the separable tiled kernel's passes run: staged input rows, exact integer
//! row passes, padded rows of sums, the row pass one channel at a time, the rolled column
//! pass and sums without an unfiltered alpha's.

use super::*;

/// The distinct bank groups (16-byte unit mod 8) that one quarter warp's 16-byte shared
/// accesses, at these unit indices, hit: 8 for 8 threads means no conflict.
fn bank_groups(units: impl IntoIterator<Item = usize>) -> usize {
    let mut on = [false; 8];
    units.into_iter().for_each(|u| on[u % 8] = true);
    on.into_iter().filter(|&hit| hit).count()
}

#[test]
fn staged_row_copies_fit_their_shared_rows() {
    // fast_sep.cuh's raw_rows copies, per row, the 16-byte units from the block's first window
    // word (bw samples wide, halo words either side) rounded down to 16 bytes; the shared row
    // must hold them at every alignment of that word, in an odd number of 16-byte units.
    for (ch, sb, k, block) in [
        (1, 1, 7, SEP_BLOCK),
        (1, 1, 25, SEP_BLOCK),
        (1, 2, 9, SEP_BLOCK),
        (3, 1, 15, SEP_BLOCK),
        (3, 2, 7, SEP_BLOCK_WIDE_RGB48),
        (4, 1, 25, SEP_BLOCK_RGBA_LARGE),
        (4, 2, 31, SEP_BLOCK_TALL_RGBA),
        (2, 1, 6, (32, 4)),
    ] {
        let spec = FastSpec {
            row_staged: true,
            sums_pad: true,
            ..FastSpec::separable(k, k, ch, Border::Clamp).with_sample_bytes(sb)
        };
        let (words, bytes) = spec.tile(block);
        assert_eq!(words % 8, 4, "odd 16-byte units: {ch} ch, {sb} B, k {k}");
        let (spw, ax) = (4 / sb, k / 2);
        let (hwl, hwr) = ((ax * ch).div_ceil(spw), ((k - 1 - ax) * ch).div_ceil(spw));
        let bw = block.0 as usize * spec.px;
        for shift_words in 0..16 / 4 {
            let needed = 4 * shift_words + (hwl + bw / spw + hwr) * 4;
            assert!(
                words * 4 >= needed.next_multiple_of(16),
                "{ch} ch, {sb} B, k {k}"
            );
        }
        let th = block.1 as usize * spec.py + k - 1;
        // The rows of horizontal sums hold the padded row, an odd number of float4s apart
        // (HS_PAD), one float4 more than without the padding at most.
        let hsw = spec.sums_row(bw);
        assert!(
            hsw >= bw && hsw.is_multiple_of(4) && !(hsw / 4).is_multiple_of(2),
            "{ch} ch, {sb} B, k {k}"
        );
        assert_eq!(bytes, th * hsw * 4 + th * words * 4);
        let plain = FastSpec {
            sums_pad: false,
            ..spec.clone()
        };
        assert!(plain.sums_row(bw) + 4 >= hsw && plain.sums_row(bw) <= hsw);
        assert!(spec.defines().contains(&"-DHS_PAD=1".to_string()));
        assert!(plain.defines().contains(&"-DHS_PAD=0".to_string()));
        let unstaged = FastSpec {
            row_staged: false,
            ..spec.clone()
        };
        assert_eq!(unstaged.tile(block).0, 0);
        assert!(spec.defines().contains(&"-DSEPA=1".to_string()));
        assert!(unstaged.defines().contains(&"-DSEPA=0".to_string()));
    }
}

#[test]
fn staged_words_by_16_byte_loads_take_a_conflict_free_stride() {
    // With SEPV each 8 threads of a 16-byte shared load read one unit of their items: thread
    // (x, y) of one channel takes item column x / m of row y * m + x % m (fast_sep.cuh), more
    // channels item i of the block's row i / items. Simulated here independently of
    // FastSpec::staged_units: at the stride it picks, no bank group (unit mod 8) is hit twice
    // by a quarter warp (an odd stride, the one for word loads, hits one twice for one 8-bit
    // channel in 32 × 4 blocks), and the stride holds the row.
    for (ch, sb, k, block, items) in [
        (1, 1, 7, (32, 4), 4),
        (1, 1, 9, (16, 8), 4),
        (1, 1, 5, (8, 16), 4),
        (1, 2, 9, (16, 16), 2),
        (1, 1, 7, (4, 32), 4),
        (2, 1, 7, (32, 4), 2),
        (3, 1, 9, (32, 4), 4),
    ] {
        let base = FastSpec {
            row_staged: true,
            fixed_block: Some(block),
            ..FastSpec::separable(k, k, ch, Border::Clamp).with_sample_bytes(sb)
        };
        let spec = FastSpec {
            row_px: items * base.px,
            staged_vector: true,
            ..base
        };
        let what = format!("{ch} ch, {sb} B, k {k}, {block:?}");
        assert!(spec.staged_vector_on(), "{what}");
        let (bx, by) = (block.0 as usize, block.1 as usize);
        let (spw, ax) = (4 / sb, k / 2);
        let halo = (ax * ch).div_ceil(spw) + ((k - 1 - ax) * ch).div_ceil(spw);
        let need = (16 / sb - 1 + bx * spec.px + halo * spw).div_ceil(16 / sb);
        let units = spec.tile(block).0 / 4;
        assert!(
            units >= need && units < need + 8,
            "{what}: {units} for {need}"
        );
        let item_units = spec.row_px * sb / 16;
        let per_row = bx * spec.px / spec.row_px;
        let groups = |stride: usize, q: usize| {
            bank_groups((8 * q..8 * q + 8).map(|t| {
                let (item, row) = if ch == 1 {
                    let (x, y) = (t % bx, t / bx);
                    (x / items, y * items + x % items)
                } else {
                    (t % per_row, t / per_row)
                };
                row * stride + item * item_units
            }))
        };
        for q in 0..bx * by / 8 {
            assert_eq!(groups(units, q), 8, "{what}: quarter warp {q}");
        }
        if (ch, sb, block) == (1, 1, (32, 4)) {
            assert!((0..bx * by / 8).any(|q| groups(need | 1, q) < 8), "{what}");
        }
        assert!(spec.defines().contains(&"-DSEPV=1".to_string()), "{what}");
        // Asked for where it does not fit (no block compiled in), it stays off.
        let loose = FastSpec {
            fixed_block: None,
            ..spec.clone()
        };
        assert!(!loose.staged_vector_on() && loose.defines().contains(&"-DSEPV=0".to_string()));
    }
    // Items not whole 16-byte units (RGB's 4 pixels, 12 bytes; 8 bytes of gray) keep word
    // loads.
    for (ch, row_px) in [(3, 12), (1, 8)] {
        let spec = FastSpec {
            row_staged: true,
            row_px,
            fixed_block: Some((32, 4)),
            staged_vector: true,
            ..FastSpec::separable(5, 5, ch, Border::Clamp)
        };
        assert!(
            !spec.staged_vector_fits() && !spec.staged_vector_on(),
            "{ch} ch"
        );
    }
    // CI compiles the 16-byte loads (tests/gpu.rs) for one 8-bit channel, one 16-bit channel
    // from bit 0 and shifted (P010's luma), and two 8-bit channels (NV12's chroma).
    let keys = crate::backend::cuda::registry::all_check_keys();
    for (ch, sb, shift) in [(1, 1, 0), (1, 2, 0), (1, 2, 6), (2, 1, 0)] {
        let compiled = keys.iter().any(|key| match key {
            crate::backend::cuda::registry::ModuleKey::Fast(s) => {
                (s.ch, s.sb, s.shift) == (ch, sb, shift)
                    && s.defines().contains(&"-DSEPV=1".to_string())
            }
            _ => false,
        });
        assert!(compiled, "{ch} ch, {sb} B, shift {shift}");
    }
}

#[test]
fn staged_rows_follow_the_measured_rules() {
    use super::rules::{sep_staged, SEP_STAGED_MIN_SAMPLES, SEP_STAGED_MIN_SAMPLES_FAST_MEMORY};
    let large = SEP_STAGED_MIN_SAMPLES;
    let staged = |ch, sb, kh, n, int| sep_staged((ch, sb), kh, n, int, false);
    // 8-bit RGB to 9 taps high, on every launch.
    assert!(staged(3, 1, 7, HD * 3, false));
    assert!(staged(3, 1, 9, 1000, false));
    assert!(!staged(3, 1, 11, UHD * 3, false));
    // One channel: 8-bit to 7, 16-bit to 9, on large launches only.
    assert!(staged(1, 1, 7, large, false));
    assert!(!staged(1, 1, 7, large - 1, false));
    assert!(!staged(1, 1, 9, UHD, false));
    assert!(staged(1, 2, 9, UHD, false));
    assert!(!staged(1, 2, 9, HD, false));
    assert!(!staged(1, 2, 15, UHD, false));
    // With the integer row pass, one 8-bit channel to 9 taps, on large launches only.
    assert!(staged(1, 1, 9, large, true));
    assert!(!staged(1, 1, 9, large - 1, true));
    assert!(!staged(1, 1, 11, UHD, true));
    assert!(staged(3, 1, 9, HD * 3, true) && !staged(4, 1, 7, UHD * 4, true));
    // Two 8-bit channels (NV12's chroma) to 7 taps, on large launches only.
    assert!(staged(2, 1, 7, large, false) && staged(2, 1, 5, UHD / 2, true));
    assert!(!staged(2, 1, 7, large - 1, false) && !staged(2, 1, 9, UHD, false));
    // Never for 4 channels or 16-bit RGB and two 16-bit channels.
    for (ch, sb) in [(4, 1), (3, 2), (4, 2), (2, 2)] {
        assert!(
            !staged(ch, sb, 7, UHD * ch, false),
            "{ch} channels of {sb} bytes"
        );
    }
    // On devices of fast memory one 8-bit channel (only) stages from larger launches: a 1080p
    // YUV 4:2:0 frame's three planes do not.
    let fast = |ch, sb, n| sep_staged((ch, sb), 7, n, false, true);
    let yuv420p_1080p = HD + HD / 2;
    assert!(!fast(1, 1, yuv420p_1080p) && fast(1, 2, yuv420p_1080p));
    assert!(fast(1, 1, SEP_STAGED_MIN_SAMPLES_FAST_MEMORY) && fast(2, 1, large));
}

#[test]
fn integer_row_passes_follow_the_measured_rules() {
    // The specialization compiles the pass in with its divisor; without it, the f32 pass.
    let spec = FastSpec::separable(7, 7, 1, Border::Clamp);
    assert!(spec.defines().contains(&"-DSEPI=0".to_string()));
    let int = FastSpec {
        row_int: Some(64),
        ..spec
    };
    let defines = int.defines();
    assert!(defines.contains(&"-DSEPI=1".to_string()));
    assert!(defines.contains(&"-DRDIV=64".to_string()));
    assert!(defines.contains(&"-DDEIL=0".to_string()));
    // On RGB and RGBA the windows are regrouped per channel, and the weights packed for taps
    // 1 byte apart; interleaved (NV12's chroma), the channels apart.
    use super::rules::sep_int_channels;
    assert!(sep_int_channels(3) && sep_int_channels(4));
    for ch in [1, 2] {
        assert!(!sep_int_channels(ch), "{ch} channels");
    }
    for ch in 2..=4 {
        let spec = FastSpec {
            row_int: Some(16),
            ..FastSpec::separable(9, 9, ch, Border::Clamp)
        };
        assert_eq!(spec.tap_stride(), ch);
        let deil = FastSpec {
            deinterleave: true,
            ..spec
        };
        assert!(deil.defines().contains(&"-DDEIL=1".to_string()));
        assert_eq!(deil.tap_stride(), 1);
    }
}

#[test]
fn padded_sums_follow_the_measured_rules() {
    use super::rules::sums_padded;
    // One and two channels and 8-bit RGB always; 8-bit RGBA from 11 taps; 16-bit RGB and
    // RGBA never, but 4 channels always where they keep no sums for alpha.
    for (ch, sb) in [(1, 1), (1, 2), (2, 1), (2, 2), (3, 1)] {
        assert!(
            sums_padded(ch, sb, 4, false)
                && sums_padded(ch, sb, 9, false)
                && sums_padded(ch, sb, 25, false),
            "{ch} ch, {sb} B"
        );
    }
    assert!(!sums_padded(4, 1, 4, false) && !sums_padded(4, 1, 10, false));
    assert!(
        sums_padded(4, 1, 11, false) && sums_padded(4, 1, 4, true) && sums_padded(4, 2, 7, true)
    );
    for ch in [3, 4] {
        assert!(
            !sums_padded(ch, 2, 7, false) && !sums_padded(ch, 2, 25, false),
            "{ch} channels"
        );
    }
    // The padding makes an even number of float4s odd and leaves an odd one as it is.
    let spec = FastSpec {
        sums_pad: true,
        ..FastSpec::separable(7, 7, 1, Border::Clamp)
    };
    assert_eq!(
        (spec.sums_row(32), spec.sums_row(36), spec.sums_row(64)),
        (36, 36, 68)
    );
}

#[test]
fn rolled_passes_where_measured_faster_and_only_where_they_fit() {
    use super::rules::SEP_SMALL_PLANE;
    // The row pass one channel at a time: 3 channels from 13 taps wide (8-bit), from 11
    // (16-bit); 2 channels from 17; 4 channels (alpha kept) from 4 (8-bit) or 11 (RGBA64) on
    // planes under 4 M pixels, 8-bit at 6-10 on larger ones, RGBA64 from 7 under 1 M. The
    // column pass rolled: RGBA64 5, 7 and 9 taps high, from 7 on planes of 1 M pixels.
    assert_eq!(sep_rolled((3, 3), 1, 13, 13, UHD), (true, false));
    assert_eq!(sep_rolled((3, 3), 1, 25, 3, HD), (true, false));
    assert_eq!(sep_rolled((3, 3), 1, 11, 25, UHD), (false, false));
    assert_eq!(sep_rolled((3, 3), 2, 11, 11, UHD), (true, false));
    assert_eq!(sep_rolled((3, 3), 2, 9, 25, UHD), (false, false));
    assert_eq!(sep_rolled((2, 2), 1, 17, 17, UHD), (true, false));
    assert_eq!(sep_rolled((2, 2), 2, 25, 3, HD), (true, false));
    assert_eq!(sep_rolled((2, 2), 1, 15, 15, UHD), (false, false));
    assert_eq!(sep_rolled((4, 3), 1, 11, 11, HD), (true, false));
    assert_eq!(
        sep_rolled((4, 3), 1, 25, 25, SEP_SMALL_PLANE - 1),
        (true, false)
    );
    assert_eq!(
        sep_rolled((4, 3), 1, 25, 25, SEP_SMALL_PLANE),
        (false, false)
    );
    assert_eq!(sep_rolled((4, 3), 1, 4, 4, 1280 * 720), (true, false));
    assert_eq!(sep_rolled((4, 3), 1, 3, 3, 1280 * 720), (false, false));
    for k in [4, 5, 6, 8, 10, 11] {
        let large = (6..=10).contains(&k);
        assert_eq!(sep_rolled((4, 3), 1, k, k, UHD).0, large, "{k}");
    }
    assert_eq!(sep_rolled((4, 3), 2, 5, 5, 1280 * 720), (false, true));
    assert_eq!(sep_rolled((4, 3), 2, 7, 3, 1280 * 720), (true, false));
    assert_eq!(sep_rolled((4, 3), 2, 25, 9, HD), (true, true));
    assert_eq!(sep_rolled((4, 3), 2, 9, 25, HD), (false, false));
    assert_eq!(
        sep_rolled((4, 3), 2, 7, 7, SEP_ROLLED_COL_MIN_PLANE),
        (false, true)
    );
    assert_eq!(
        sep_rolled((4, 3), 2, 7, 7, SEP_ROLLED_COL_MIN_PLANE - 1),
        (true, false)
    );
    assert_eq!(sep_rolled((4, 3), 2, 9, 11, UHD), (false, false));
    assert_eq!(sep_rolled((4, 3), 2, 4, 4, UHD), (false, false));
    assert_eq!(sep_rolled((4, 3), 2, 8, 8, UHD), (false, false));
    assert_eq!(sep_rolled((4, 3), 1, 10, 10, HD), (true, false));
    assert_eq!(sep_rolled((4, 3), 2, 10, 10, HD), (false, false));
    // All four filtered: 8-bit RGBA on large planes at 6-9 and from 19, RGBA64 from 17 on
    // planes of 1-4 M pixels.
    for k in [5, 6, 7, 9, 10, 11, 17, 19, 25] {
        let large = (6..=9).contains(&k) || k >= 19;
        assert_eq!(sep_rolled((4, 4), 1, k, k, UHD).0, large, "{k}");
        assert_eq!(
            sep_rolled((4, 3), 1, k, k, UHD).0,
            (6..=10).contains(&k),
            "{k}"
        );
        assert_eq!(sep_rolled((4, 4), 1, k, k, HD).0, k >= 4, "{k}");
        assert_eq!(sep_rolled((4, 4), 2, k, k, HD).0, k >= 17, "{k}");
        assert_eq!(sep_rolled((4, 3), 2, k, k, HD).0, k >= 11, "{k}");
        assert_eq!(sep_rolled((4, 4), 2, k, k, 1280 * 720).0, k >= 7, "{k}");
        assert!(!sep_rolled((4, 4), 2, k, k, UHD).0, "{k}");
    }
    for (ch, sb) in [(1, 1), (1, 2), (2, 1), (2, 2), (4, 1), (4, 2)] {
        for k in [5, 7, 9, 15, 25] {
            let row = ch == 2 && k >= 17 || (ch, sb) == (4, 1) && (6..=10).contains(&k);
            let col = (ch, sb) == (4, 2) && k <= 9;
            assert_eq!(
                sep_rolled((ch, ch.min(3)), sb, k, k, UHD),
                (row, col),
                "{ch}×{sb} bytes, {k}"
            );
        }
    }
    // Where they fit: the f32 row pass from global memory on 2-4 channels of threads owning
    // groups of 4 pixels; a column pass at least as tall as a thread's rows.
    let rgb = FastSpec {
        row_global: true,
        ..FastSpec::separable(15, 15, 3, Border::Clamp)
    };
    assert!(rgb.sums_planar_fits() && rgb.col_rolled_fits());
    assert!(!FastSpec {
        px: 4,
        ..rgb.clone()
    }
    .sums_planar_fits());
    assert!(!FastSpec {
        row_int: Some(64),
        ..rgb.clone()
    }
    .sums_planar_fits());
    assert!(!FastSpec {
        row_global: false,
        ..rgb.clone()
    }
    .sums_planar_fits());
    assert!(!FastSpec {
        ch: 1,
        px: 4,
        ..rgb.clone()
    }
    .sums_planar_fits());
    assert!(!FastSpec {
        kh: 3,
        py: 4,
        ..rgb.clone()
    }
    .col_rolled_fits());
    assert!(FastSpec {
        kh: 4,
        py: 4,
        ..rgb.clone()
    }
    .col_rolled_fits());
    assert!(!FastSpec::new(15, 15, 3, Border::Clamp).col_rolled_fits());
    assert!(!FastSpec::new(15, 15, 3, Border::Clamp).sums_planar_fits());
    // Where the launch is chosen: the rule where it fits; the column pass by the rule only
    // with the row pass from global memory.
    let rolled = |spec: FastSpec| {
        let spec = spec.with_rolled(UHD);
        (spec.sums_planar, spec.col_rolled)
    };
    assert_eq!(rolled(rgb.clone()), (true, false));
    assert_eq!(
        rolled(FastSpec {
            px: 4,
            ..rgb.clone()
        }),
        (false, false)
    );
    let rgba64 = FastSpec {
        row_global: true,
        ..FastSpec::separable(7, 7, 4, Border::Clamp).with_sample_bytes(2)
    };
    assert_eq!(rolled(rgba64.clone()), (false, true));
    assert_eq!(
        rolled(FastSpec {
            row_global: false,
            ..rgba64
        }),
        (false, false)
    );
    assert_eq!(
        rolled(FastSpec::new(15, 15, 3, Border::Clamp)),
        (false, false)
    );
}

#[test]
fn alpha_free_sums_take_three_columns_of_four_without_conflicts() {
    use super::rules::{sep_compact_sums, sums_padded};
    // With alpha kept, fast_sep keeps 12 sums per group of 4 pixels (SEPK): the shared rows
    // shrink to 3/4 of the columns, unpadded by tcol (TILE_PAD 0) and, as the launch pads
    // them, an odd number of float4s apart. Simulated as fast_sep.cuh deals the work, each 8
    // threads of a 16-byte shared access (a quarter warp) should hit 8 distinct bank groups
    // (`bank_groups`):
    // - the column pass: thread (x, y) reads float4 j of its 3 from float 12·x of sums row
    //   y·py. Where a quarter warp spans two rows of threads (blocks 4 wide) only by the rows'
    //   stride (`sep_sums_row`: py · u ≡ 4 float4s mod 8), which the padded one is not;
    // - the row pass (more than one channel), in blocks 8 wide and more on padded rows: thread
    //   t stores item t of the block's first round, row t / items a row, float4 j of group g
    //   at float SUMS_COL(c + 16·g) + 4·j. (In blocks 4 wide the stride serves the column
    //   pass's loads, the more: with 2 rows a thread no stride serves both.)
    // As the rules build them (block, rows, items) on 4K and on 1080p planes.
    for (sb, k, block, row_threads, pixels) in [
        (1, 7, SEP_BLOCK, 4, 8_294_400),
        (1, 25, SEP_BLOCK_RGBA_LARGE, 2, 8_294_400),
        (2, 9, SEP_BLOCK, 1, 8_294_400),
        (2, 15, SEP_BLOCK, 1, 8_294_400),
        (2, 25, SEP_BLOCK_TALL_RGBA, 1, 8_294_400),
        (2, 19, SEP_BLOCK_TALL_RGBA, 1, 8_294_400),
        (1, 15, SEP_BLOCK_TALL_RGBA, 2, 2_073_600),
    ] {
        let all = FastSpec {
            compact_sums: true,
            ..FastSpec::separable(k, k, 4, Border::Clamp)
                .with_sample_bytes(sb)
                .for_pixels(pixels)
        };
        assert!(!all.compact_sums_fits() && all.tile_pad(), "alpha filtered");
        assert!(all.defines().contains(&"-DSEPK=0".to_string()));
        let kept = FastSpec {
            mask: 0b0111,
            row_px: row_threads * all.px,
            ..all.clone()
        };
        assert!(kept.compact_sums_on() && !kept.tile_pad(), "{sb} B, k {k}");
        assert!(kept.defines().contains(&"-DSEPK=1".to_string()));
        assert!(kept.defines().contains(&"-DTILE_PAD=0".to_string()));
        let with_alpha = FastSpec {
            compact_sums: false,
            ..kept.clone()
        };
        assert!(with_alpha.defines().contains(&"-DSEPK=0".to_string()) && with_alpha.tile_pad());
        let (bx, by) = (block.0 as usize, block.1 as usize);
        let bw = bx * kept.px;
        let th = by * kept.py + k - 1;
        for sums_pad in [false, true] {
            let spec = FastSpec {
                sums_pad,
                ..kept.clone()
            };
            let cols = bw / 4 * 3;
            let hsw = spec.sep_sums_row(block.0);
            assert!(hsw >= cols && hsw < cols + 32);
            assert_eq!(spec.tile(block), (0, th * hsw * 4));
            assert!(spec.tile(block).1 < with_alpha.tile(block).1);
            let u = hsw / 4;
            let column_free = |u: usize| {
                (0..bx * by).step_by(8).all(|q| {
                    (0..3).all(|j| {
                        let units = (q..q + 8).map(|t| (t / bx) * kept.py * u + 3 * (t % bx) + j);
                        bank_groups(units) == 8
                    })
                })
            };
            assert!(column_free(u), "{sb} B, k {k}, pad {sums_pad}");
            if bx == 4 {
                // The padded rows serve only where their stride meets the same congruence
                // (4 rows a thread on 4K RGBA64 `:25`: an odd number of float4s does).
                let padded = spec.sums_row(cols) / 4;
                assert_eq!(
                    column_free(padded),
                    kept.py * padded % 8 == 4,
                    "{sb} B, k {k}: padded only"
                );
            } else {
                assert_eq!(hsw, spec.sums_row(cols));
            }
            let items_row = bw / kept.row_px;
            let row = (0..bx * by).step_by(8).all(|q| {
                (0..kept.row_px / 16).all(|g| {
                    (0..3).all(|j| {
                        let units = (q..q + 8).map(|t| {
                            let c = t % items_row * kept.row_px + 16 * g;
                            t / items_row * u + c / 16 * 3 + j
                        });
                        bank_groups(units) == 8
                    })
                })
            });
            if sums_pad && bx >= 8 {
                assert!(row, "{sb} B, k {k}: padded rows store without conflicts");
            } else if (sb, row_threads) == (1, 4) {
                // ncu, 8K RGBA gaussian:7 unpadded: 12.7 wavefronts a store, not 3.3.
                assert!(!row, "{sb} B, k {k}: unpadded rows of 8-bit RGBA conflict");
            }
        }
        assert!(sums_padded(4, sb, k, true));
        if std::env::var_os("CONVFLOW_FAST_SEPK").is_none() {
            let rule = sep_compact_sums(block.0, kept.px, kept.py);
            assert!(rule, "{sb} B, k {k}: the rule compacts");
        }
    }
    // Blocks 4 wide of 8 rows a thread have no such stride (8 · u ≡ 0 mod 8), nor blocks
    // narrower than 4 or threads of 8 pixels (`sep_sums_row` has none for them): not compacted.
    if std::env::var_os("CONVFLOW_FAST_SEPK").is_none() {
        assert!(sep_compact_sums(8, 16, 8) && sep_compact_sums(4, 16, 6));
        assert!(!sep_compact_sums(4, 16, 8) && !sep_compact_sums(4, 32, 2));
        assert!(!sep_compact_sums(2, 16, 2) && !sep_compact_sums(1, 16, 1));
    }
    // Threads owning other than whole groups of 4 pixels keep alpha's sums.
    let narrow = FastSpec {
        mask: 0b0111,
        compact_sums: true,
        px: 8,
        row_px: 8,
        ..FastSpec::separable(7, 7, 4, Border::Zero)
    };
    assert!(!narrow.compact_sums_fits());
}
