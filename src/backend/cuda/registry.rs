//! Kernel sources, NVRTC compilation and the module cache.
//!
//! The .cu files in `kernels/` are embedded with `include_str!`, joined with `common.cuh` after
//! the ABI prelude ([`super::abi::prelude`]), and compiled with the device's NVRTC to PTX for
//! the device's compute capability. Compiled PTX is
//! cached on disk (keyed by source, options and NVRTC version), so a second run skips NVRTC;
//! loaded modules and functions are cached per process.

use std::collections::HashMap;
use std::ffi::CString;
use std::path::PathBuf;
use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaFunction, CudaModule};
use cudarc::nvrtc::Ptx;

use super::fast::{
    FastSpec, SEP_BLOCK, SEP_ROWS_MID, SEP_ROWS_RGB_SMALL, SEP_ROWS_TALL, SEP_ROWS_TALL_16,
    SEP_SHAPE_SHORT_RGB48,
};
use super::{abi, raw, CudaError};
use crate::border::Border;
use crate::filter::IntegerForm;

const COMMON: &str = include_str!("../../../kernels/common.cuh");
const DIRECT: &str = include_str!("../../../kernels/direct.cu");
const SEPARABLE: &str = include_str!("../../../kernels/separable.cu");
const FAST: &str = include_str!("../../../kernels/fast.cu");
const FAST_INT: &str = include_str!("../../../kernels/fast_int.cuh");
const FAST_PAIR: &str = include_str!("../../../kernels/fast_pair.cuh");
const HOLD: &str = include_str!("../../../kernels/hold.cu");

/// Two `fast` specializations in one module, launched as one kernel over a frame's two planes
/// (kernels/fast_pair.cuh).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PairKey {
    /// Plane `k`'s specialization.
    pub specs: [FastSpec; 2],
    /// Its entry point: `fast_full`, `fast_sep`, `fast_reg` or `fast_int`.
    pub entries: [&'static str; 2],
    /// The launch bounds (threads a block, resident blocks per multiprocessor); None: none.
    pub bounds: Option<(u32, usize)>,
}

/// The namespaces of a pair's two specializations (kernels/fast_pair.cuh).
const PAIR_NAMESPACES: [&str; 2] = ["fast_a", "fast_b"];

/// The symbol of `__constant__` array `name` (fast.cu's `c_w`, `c_wr`, fast_int.cuh's `c_wp`,
/// `c_wc`) of plane `k`'s specialization in a pair's module: its name in namespace `fast_a`
/// (plane 0) or `fast_b` (plane 1), as the compiler mangles it (`_ZN6fast_a3c_wE`).
pub fn pair_symbol(k: usize, name: &str) -> &'static str {
    match (k, name) {
        (0, "c_w") => "_ZN6fast_a3c_wE",
        (1, "c_w") => "_ZN6fast_b3c_wE",
        (0, "c_wr") => "_ZN6fast_a4c_wrE",
        (1, "c_wr") => "_ZN6fast_b4c_wrE",
        (0, "c_wp") => "_ZN6fast_a4c_wpE",
        (1, "c_wp") => "_ZN6fast_b4c_wpE",
        (0, "c_wc") => "_ZN6fast_a4c_wcE",
        (1, "c_wc") => "_ZN6fast_b4c_wcE",
        _ => panic!("no constant {name} in plane {k}'s specialization"),
    }
}

/// The names of the macros `text` defines (`#define NAME` or `#define NAME(…)`).
fn defined_macros(text: &str) -> impl Iterator<Item = &str> {
    text.lines().filter_map(|l| {
        let rest = l.trim_start().strip_prefix("#define ")?;
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        Some(&rest[..end])
    })
}

/// Which module: the fixed families, or one `fast` specialization.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ModuleKey {
    /// kernels/direct.cu: the literature's full 2D variants (global, constant, shared, …).
    Direct,
    /// kernels/separable.cu: the literature's two-pass variants.
    Separable,
    /// kernels/fast.cu compiled for one specialization.
    Fast(FastSpec),
    /// kernels/fast.cu compiled for two specializations and kernels/fast_pair.cuh over them.
    FastPair(Box<PairKey>),
    /// kernels/hold.cu: the benchmark's stream hold.
    Hold,
}

impl ModuleKey {
    /// The module's file name and its full source: the ABI prelude, then the file with
    /// common.cuh (and fast.cu's fast_int.cuh) inlined.
    fn source(&self) -> (&'static str, String) {
        if let ModuleKey::FastPair(pair) = self {
            return ("fast_pair.cu", pair.source());
        }
        let (name, file) = match self {
            ModuleKey::Direct => ("direct.cu", DIRECT),
            ModuleKey::Separable => ("separable.cu", SEPARABLE),
            ModuleKey::Fast(_) => ("fast.cu", FAST),
            ModuleKey::FastPair(_) => unreachable!("a pair's source is built above"),
            ModuleKey::Hold => ("hold.cu", HOLD),
        };
        (
            name,
            abi::prelude()
                + &file
                    .replace("#include \"common.cuh\"", COMMON)
                    .replace("#include \"fast_int.cuh\"", FAST_INT),
        )
    }

    fn defines(&self) -> Vec<String> {
        match self {
            ModuleKey::Fast(spec) => spec.defines(),
            // A pair's defines are in its source (two sets, one per namespace).
            _ => Vec::new(),
        }
    }
}

impl PairKey {
    /// The pair's module: the ABI prelude and common.cuh once, then fast.cu (fast_int.cuh
    /// inlined) in namespace `fast_a` under plane 0's specialization's defines and in `fast_b`
    /// under plane 1's, every macro of the first undefined before the second, then
    /// fast_pair.cuh with the entry points and launch bounds.
    fn source(&self) -> String {
        let body = FAST
            .replace("#include \"common.cuh\"", "")
            .replace("#include \"fast_int.cuh\"", FAST_INT);
        let mut s = abi::prelude() + COMMON + "\n#define FAST_PAIR 1\n";
        for (spec, ns) in self.specs.iter().zip(PAIR_NAMESPACES) {
            let defines = spec.defines();
            for d in &defines {
                let (name, value) = d
                    .trim_start_matches("-D")
                    .split_once('=')
                    .expect("defines are -DNAME=VALUE");
                s += &format!("#define {name} {value}\n");
            }
            s += &format!("namespace {ns} {{\n{body}\n}}  // namespace {ns}\n");
            let host = defines
                .iter()
                .filter_map(|d| d.trim_start_matches("-D").split_once('=').map(|(n, _)| n));
            for name in host.chain(defined_macros(&body)) {
                s += &format!("#undef {name}\n");
            }
        }
        let tiled = |e: &str| (e == "fast_full" || e == "fast_sep") as u8;
        let (tb, minb) = self.bounds.unwrap_or((0, 0));
        s += &format!(
            "#define PAIR_A {}\n#define PAIR_B {}\n#define PAIR_A_TILED {}\n\
             #define PAIR_B_TILED {}\n#define PAIR_TB {tb}\n#define PAIR_MINB {minb}\n",
            self.entries[0],
            self.entries[1],
            tiled(self.entries[0]),
            tiled(self.entries[1]),
        );
        s + FAST_PAIR
    }
}

/// Compiles `key` for compute capability `arch` (e.g. 90) and returns the PTX and NVRTC's log.
/// The caller must have checked that NVRTC is loadable.
pub fn compile(key: &ModuleKey, arch: u32) -> Result<(String, String), CudaError> {
    let (name, src) = key.source();
    let mut options = vec![
        format!("--gpu-architecture=compute_{arch}"),
        "--std=c++17".to_string(),
    ];
    options.extend(key.defines());
    let csrc = CString::new(src).expect("kernel sources hold no NUL");
    let cname = CString::new(name).expect("no NUL");
    let prog = cudarc::nvrtc::result::create_program(&csrc, Some(&cname)).map_err(|e| {
        CudaError::Compile {
            module: name.into(),
            log: format!("{e:?}"),
        }
    })?;
    // SAFETY: `prog` is a live program; options are plain strings; the program is destroyed
    // exactly once below, after the log and PTX were read.
    let compiled = unsafe { cudarc::nvrtc::result::compile_program(prog, &options) };
    // SAFETY: as above.
    let log = unsafe { cudarc::nvrtc::result::get_program_log(prog) }
        .map(|l| {
            l.iter()
                .take_while(|&&c| c != 0)
                .map(|&c| c as u8 as char)
                .collect::<String>()
        })
        .unwrap_or_default();
    // SAFETY: as above.
    let ptx = compiled.and_then(|()| unsafe { cudarc::nvrtc::result::get_ptx(prog) });
    // SAFETY: as above.
    let _ = unsafe { cudarc::nvrtc::result::destroy_program(prog) };
    let ptx = ptx.map_err(|e| CudaError::Compile {
        module: format!("{name} {}", options.join(" ")),
        log: if log.trim().is_empty() {
            format!("{e:?}")
        } else {
            log.clone()
        },
    })?;
    let ptx: String = ptx
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8 as char)
        .collect();
    Ok((ptx, log))
}

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
    // Variants of those: RGBA with its alpha kept (every kernel of four channels, so every way
    // an unfiltered channel is skipped and passed through); MSB-aligned 16-bit samples (P010)
    // with --abs and an offset; one launch over the three planes of a YUV frame (every
    // one-channel kernel); the tiled separable kernel with launch bounds and with wider
    // row-pass items.
    let variants: Vec<_> = keys
        .iter()
        .flat_map(|k| {
            let ModuleKey::Fast(s) = k else {
                return Vec::new();
            };
            let mut v = Vec::new();
            if s.ch == 4 {
                v.push(FastSpec {
                    mask: 0b0111,
                    ..s.clone()
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

/// 64-bit FNV-1a: a stable cache key (std's hasher may change between Rust releases).
fn fnv1a(parts: &[&[u8]]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for p in parts {
        for &b in *p {
            h ^= b as u64;
            h = h.wrapping_mul(0x100_0000_01b3);
        }
        h ^= 0xff;
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    h
}

fn cache_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("CONVFLOW_CACHE_DIR") {
        return Some(PathBuf::from(d));
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("convflow").join("ptx"))
}

/// Loads modules once per process (PTX from the disk cache when present).
pub struct Registry {
    ctx: Arc<CudaContext>,
    arch: u32,
    modules: HashMap<ModuleKey, Arc<CudaModule>>,
    functions: HashMap<(ModuleKey, String), CudaFunction>,
    /// Host time spent compiling and loading modules so far.
    loading: std::time::Duration,
}

impl Registry {
    /// An empty registry for `ctx`, compiling for compute capability `arch` (e.g. 90).
    pub fn new(ctx: Arc<CudaContext>, arch: u32) -> Self {
        Registry {
            ctx,
            arch,
            modules: HashMap::new(),
            functions: HashMap::new(),
            loading: std::time::Duration::ZERO,
        }
    }

    /// Host time spent compiling and loading modules since this registry was made (device
    /// timings leave it out).
    pub fn loading(&self) -> std::time::Duration {
        self.loading
    }

    /// The loaded module for `key`: cached in this process, else PTX from the disk cache,
    /// else compiled with NVRTC (and written to the disk cache, best effort).
    pub fn module(&mut self, key: &ModuleKey) -> Result<Arc<CudaModule>, CudaError> {
        if let Some(m) = self.modules.get(key) {
            return Ok(m.clone());
        }
        let t = std::time::Instant::now();
        let (_, src) = key.source();
        let (major, minor) = raw::nvrtc_version();
        let id = fnv1a(&[
            src.as_bytes(),
            key.defines().join(" ").as_bytes(),
            format!("{}-{major}.{minor}", self.arch).as_bytes(),
        ]);
        let path = cache_dir().map(|d| d.join(format!("{id:016x}.ptx")));
        let cached = path.as_ref().and_then(|p| std::fs::read_to_string(p).ok());
        let ptx = match cached {
            Some(ptx) => ptx,
            None => {
                let (ptx, _log) = compile(key, self.arch)?;
                if let Some(p) = &path {
                    // A failed cache write only costs a recompile next time.
                    let _ = std::fs::create_dir_all(p.parent().unwrap());
                    // A name of this write alone: several backends of one process (GPUs,
                    // test threads) may compile the same module at once.
                    static WRITES: std::sync::atomic::AtomicU64 =
                        std::sync::atomic::AtomicU64::new(0);
                    let n = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let tmp = p.with_extension(format!("tmp{}-{n}", std::process::id()));
                    if std::fs::write(&tmp, &ptx).is_ok() {
                        let _ = std::fs::rename(&tmp, p);
                    }
                }
                ptx
            }
        };
        let module = self
            .ctx
            .load_module(Ptx::from_src(ptx))
            .map_err(|e| CudaError::driver("loading a kernel module", e))?;
        self.modules.insert(key.clone(), module.clone());
        self.loading += t.elapsed();
        Ok(module)
    }

    /// The entry point `name` of `key`'s module, loading the module first if needed; cached.
    pub fn function(&mut self, key: &ModuleKey, name: &str) -> Result<CudaFunction, CudaError> {
        let k = (key.clone(), name.to_string());
        if let Some(f) = self.functions.get(&k) {
            return Ok(f.clone());
        }
        let f = self
            .module(key)?
            .load_function(name)
            .map_err(|e| CudaError::driver("finding a kernel", e))?;
        self.functions.insert(k, f.clone());
        Ok(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names of the macros `text` defines, read loosely (`#define`, `# define`, indented):
    /// a check on [`defined_macros`], which the pair's source trusts.
    fn every_define(text: &str) -> Vec<String> {
        text.lines()
            .filter_map(|l| {
                let l = l.trim_start().strip_prefix('#')?.trim_start();
                let rest = l.strip_prefix("define")?.trim_start();
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                (!name.is_empty()).then_some(name)
            })
            .collect()
    }

    #[test]
    fn a_pairs_source_undefines_every_macro_of_its_first_half_before_the_second() {
        let spec = |ch| FastSpec::new(3, 3, ch, Border::Clamp);
        let key = PairKey {
            specs: [spec(1), spec(2)],
            entries: ["fast_full", "fast_full"],
            bounds: None,
        };
        let src = key.source();
        let (first, second) = src
            .split_once("}  // namespace fast_a\n")
            .expect("the first half's namespace");
        assert!(first.contains("namespace fast_a {"));
        let (between, rest) = second
            .split_once("namespace fast_b {")
            .expect("the second half's namespace");
        let (_, tail) = rest
            .split_once("}  // namespace fast_b\n")
            .expect("the second half closed");
        let host: Vec<String> = spec(1)
            .defines()
            .iter()
            .map(|d| {
                d.trim_start_matches("-D")
                    .split('=')
                    .next()
                    .unwrap()
                    .to_string()
            })
            .collect();
        let body = format!("{FAST}\n{FAST_INT}");
        let names: Vec<String> = every_define(&body).into_iter().chain(host).collect();
        assert!(names.len() > 50, "{} macros", names.len());
        for name in &names {
            let undef = format!("#undef {name}\n");
            assert!(
                between.contains(&undef),
                "{name} leaks into the second half"
            );
            assert!(tail.contains(&undef), "{name} leaks into fast_pair.cuh");
        }
        assert!(tail.contains("#define PAIR_A fast_full\n") && tail.ends_with(FAST_PAIR));
        // The constants the host uploads live in the two namespaces.
        for (k, ns) in PAIR_NAMESPACES.iter().enumerate() {
            assert!(pair_symbol(k, "c_w").contains(&format!("{}{ns}", ns.len())));
        }
    }
}
