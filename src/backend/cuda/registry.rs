//! Kernel sources, NVRTC compilation and the module cache.
//!
//! The .cu files in `kernels/` are embedded with `include_str!`, joined with `common.cuh`, and
//! compiled with the device's NVRTC to PTX for the device's compute capability. Compiled PTX is
//! cached on disk (keyed by source, options and NVRTC version), so a second run skips NVRTC;
//! loaded modules and functions are cached per process.

use std::collections::HashMap;
use std::ffi::CString;
use std::path::PathBuf;
use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaFunction, CudaModule};
use cudarc::nvrtc::Ptx;

use super::{raw, CudaError};
use crate::border::Border;

const COMMON: &str = include_str!("../../../kernels/common.cuh");
const DIRECT: &str = include_str!("../../../kernels/direct.cu");
const SEPARABLE: &str = include_str!("../../../kernels/separable.cu");
const FAST: &str = include_str!("../../../kernels/fast.cu");

/// Registers needed to keep one `fast` row segment in registers (mirrors SEG_IN_REGS).
pub const FAST_MAX_SEG: usize = 96;

/// A compile-time specialization of the `fast` family.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FastSpec {
    pub kw: usize,
    pub kh: usize,
    pub ch: usize,
    pub border: Border,
    /// Output samples per thread along a row (a multiple of 4 and of `ch`).
    pub px: usize,
    /// Output rows per thread in the separable kernel.
    pub py: usize,
    /// Unroll factor of the kernel-row loop of `fast_full`.
    pub ky_unroll: usize,
    /// Build `fast_sep` (weights: column then row) instead of `fast_full`.
    pub separable: bool,
    /// Output rows per thread of `fast_stream`; 0 builds the shared-memory kernels instead.
    pub stream_rows: usize,
}

impl FastSpec {
    /// The specialization for a full kernel; [`FastSpec::separable`] for the fused two-pass one.
    pub fn new(kw: usize, kh: usize, ch: usize, border: Border) -> FastSpec {
        let px = 4 * ch;
        // Several rows per thread, fully unrolled, while the straight-line code stays small
        // (≤ 4096 FMAs); else one row per thread with the kernel rows in a loop.
        let py = if kw * kh * px <= 1024 { 4 } else { 1 };
        let ky_unroll = if kw * kh * px <= 4096 { kh } else { 1 };
        FastSpec {
            kw,
            kh,
            ch,
            border,
            px,
            py,
            ky_unroll,
            separable: false,
            stream_rows: 0,
        }
    }

    /// The streaming specialization (`fast_stream`) where it measured faster than the tiled
    /// kernels on an H200 (docs/PERFORMANCE.md): kernels up to 3×3, and separable ones only
    /// for 1–2 channels; else None (from k = 5 on, the tiled kernels were as fast or faster).
    ///
    /// `threads_per_row × height` sizes the grid: each thread takes 16, 8 or 4 rows, the most
    /// that still gives about 2^18 threads (the chip's resident threads many times over).
    pub fn stream(
        kw: usize,
        kh: usize,
        ch: usize,
        border: Border,
        separable: bool,
        (width, height): (usize, usize),
    ) -> Option<FastSpec> {
        let fits = kw <= 3 && kh <= 3 && (!separable || ch <= 2);
        let per_row = width.div_ceil(4);
        let rows = [16, 8, 4]
            .into_iter()
            .find(|&r| per_row * height.div_ceil(r) >= 1 << 18)
            .unwrap_or(4);
        fits.then(|| FastSpec {
            separable,
            stream_rows: rows,
            ..FastSpec::new(kw, kh, ch, border)
        })
    }

    pub fn separable(kw: usize, kh: usize, ch: usize, border: Border) -> FastSpec {
        // Fewer rows per thread for wide pixels keeps the two shared-memory stages small.
        let py = if ch >= 3 { 2 } else { 4 };
        FastSpec {
            py,
            separable: true,
            ..FastSpec::new(kw, kh, ch, border)
        }
    }

    fn defines(&self) -> Vec<String> {
        let border = match self.border {
            Border::Clamp => 0,
            Border::Zero => 1,
            Border::Reflect => 2,
            Border::Wrap => 3,
        };
        vec![
            format!("-DKW={}", self.kw),
            format!("-DKH={}", self.kh),
            format!("-DAX={}", self.kw / 2),
            format!("-DAY={}", self.kh / 2),
            format!("-DCH={}", self.ch),
            format!("-DBORDER={border}"),
            format!("-DPX={}", self.px),
            format!("-DPY={}", self.py),
            format!("-DKY_UNROLL={}", self.ky_unroll),
            format!("-DSEPARABLE={}", self.separable as u8),
            format!("-DSTREAM={}", (self.stream_rows > 0) as u8),
            format!("-DROWS={}", self.stream_rows.max(1)),
        ]
    }
}

/// Which module: the fixed families, or one `fast` specialization.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ModuleKey {
    Direct,
    Separable,
    Fast(FastSpec),
}

impl ModuleKey {
    fn source(&self) -> (&'static str, String) {
        let (name, file) = match self {
            ModuleKey::Direct => ("direct.cu", DIRECT),
            ModuleKey::Separable => ("separable.cu", SEPARABLE),
            ModuleKey::Fast(_) => ("fast.cu", FAST),
        };
        (name, file.replace("#include \"common.cuh\"", COMMON))
    }

    fn defines(&self) -> Vec<String> {
        match self {
            ModuleKey::Fast(spec) => spec.defines(),
            _ => Vec::new(),
        }
    }
}

/// Name of a border-templated entry point: `FAMILY_BORDER` (see CONVFLOW_FOR_BORDERS).
pub fn entry_name(family: &str, border: Border) -> String {
    format!("{family}_{}", border.name())
}

/// Compiles `key` for compute capability `arch` (e.g. 90) and returns the PTX and NVRTC's log.
/// The caller must have checked that NVRTC is loadable.
pub fn compile(key: &ModuleKey, arch: u32) -> Result<(String, String), CudaError> {
    let (name, src) = key.source();
    let mut options = vec![format!("--gpu-architecture=compute_{arch}"), "--std=c++17".to_string()];
    options.extend(key.defines());
    let csrc = CString::new(src).expect("kernel sources hold no NUL");
    let cname = CString::new(name).expect("no NUL");
    let prog = cudarc::nvrtc::result::create_program(&csrc, Some(&cname)).map_err(|e| CudaError::Compile {
        module: name.into(),
        log: format!("{e:?}"),
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
    let ptx: String = ptx.iter().take_while(|&&c| c != 0).map(|&c| c as u8 as char).collect();
    Ok((ptx, log))
}

/// Every module family and a spread of `fast` specializations, for build checks (CI compiles
/// them all with NVRTC, no GPU needed).
pub fn all_check_keys() -> Vec<ModuleKey> {
    let mut keys = vec![ModuleKey::Direct, ModuleKey::Separable];
    let mut i = 0;
    for ch in 1..=4 {
        // Sizes cover the register-segment and the streaming path, unrolled and looped rows.
        for (kw, kh) in [(1, 1), (3, 2), (4, 7), (25, 25), (63, 63)] {
            for separable in [false, true] {
                let b = Border::ALL[i % 4];
                let spec = if separable {
                    FastSpec::separable(kw, kh, ch, b)
                } else {
                    FastSpec::new(kw, kh, ch, b)
                };
                keys.push(ModuleKey::Fast(spec));
                i += 1;
            }
        }
    }
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
}

impl Registry {
    pub fn new(ctx: Arc<CudaContext>, arch: u32) -> Self {
        Registry {
            ctx,
            arch,
            modules: HashMap::new(),
            functions: HashMap::new(),
        }
    }

    pub fn module(&mut self, key: &ModuleKey) -> Result<Arc<CudaModule>, CudaError> {
        if let Some(m) = self.modules.get(key) {
            return Ok(m.clone());
        }
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
                    let tmp = p.with_extension(format!("tmp{}", std::process::id()));
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
        Ok(module)
    }

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
