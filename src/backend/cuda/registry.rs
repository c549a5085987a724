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

use super::fast::FastSpec;
use super::{abi, raw, CudaError};

mod check_keys;
pub use check_keys::all_check_keys;

const COMMON: &str = include_str!("../../../kernels/common.cuh");
const DIRECT: &str = include_str!("../../../kernels/direct.cu");
const SEPARABLE: &str = include_str!("../../../kernels/separable.cu");
const FAST: &str = include_str!("../../../kernels/fast.cu");
const FAST_WORDS: &str = include_str!("../../../kernels/fast_words.cuh");
const FAST_SEP: &str = include_str!("../../../kernels/fast_sep.cuh");
const FAST_REG: &str = include_str!("../../../kernels/fast_reg.cuh");
const FAST_INT: &str = include_str!("../../../kernels/fast_int.cuh");
const FAST_PAIR: &str = include_str!("../../../kernels/fast_pair.cuh");
const HOLD: &str = include_str!("../../../kernels/hold.cu");

/// The headers the kernel files `#include`, by name: each is inlined where it is included
/// ([`inlined`]), for NVRTC takes one source.
const HEADERS: [(&str, &str); 5] = [
    ("common.cuh", COMMON),
    ("fast_words.cuh", FAST_WORDS),
    ("fast_sep.cuh", FAST_SEP),
    ("fast_reg.cuh", FAST_REG),
    ("fast_int.cuh", FAST_INT),
];

/// `file` with each line `#include "h"` of a header of [`HEADERS`] replaced by its text (its
/// own includes inlined in turn), or by an empty line for the headers named in `skip`.
fn inlined(file: &str, skip: &[&str]) -> String {
    let mut out = String::with_capacity(file.len());
    for line in file.split_inclusive('\n') {
        let name = line
            .trim()
            .strip_prefix("#include \"")
            .and_then(|r| r.strip_suffix('"'));
        match name.and_then(|n| HEADERS.iter().find(|(h, _)| *h == n)) {
            Some((h, _)) if skip.contains(h) => out.push('\n'),
            Some((_, text)) => {
                out += &inlined(text, skip);
                // A header's last line ends there even without its newline.
                if !out.ends_with('\n') {
                    out.push('\n');
                }
            }
            None => out += line,
        }
    }
    out
}

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

/// The symbol of `__constant__` array `name` (fast.cu's `c_w`, fast_sep.cuh's `c_wr`,
/// fast_int.cuh's `c_wp`, `c_wc`) of plane `k`'s specialization in a pair's module: its name
/// in namespace `fast_a` (plane 0) or `fast_b` (plane 1), as the compiler mangles it
/// (`_ZN6fast_a3c_wE`).
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
    /// The module's file name and its full source: the ABI prelude, then the file with its
    /// headers inlined (common.cuh; fast.cu's fast_words.cuh, fast_sep.cuh, fast_reg.cuh and
    /// fast_int.cuh).
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
        (name, abi::prelude() + &inlined(file, &[]))
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
    /// The pair's module: the ABI prelude and common.cuh once, then fast.cu (its other
    /// headers inlined) in namespace `fast_a` under plane 0's specialization's defines and in
    /// `fast_b` under plane 1's, every macro of the first undefined before the second, then
    /// fast_pair.cuh with the entry points and launch bounds.
    fn source(&self) -> String {
        let body = inlined(FAST, &["common.cuh"]);
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
    use crate::border::Border;

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
    fn every_kernel_file_is_one_source_with_each_header_inlined_once() {
        // NVRTC is given no include path: every `#include` of a kernel file must be inlined.
        for (name, file) in [
            ("direct.cu", DIRECT),
            ("separable.cu", SEPARABLE),
            ("fast.cu", FAST),
            ("hold.cu", HOLD),
        ] {
            assert!(
                !inlined(file, &[]).contains("#include \""),
                "{name} keeps an #include"
            );
        }
        // fast.cu's headers, each once, in the order its code reads them: after its header
        // comment common.cuh, then the windows, fast_sep, fast_reg with fast_int inside it.
        let fast = inlined(FAST, &[]);
        let at = |text: &str| {
            let head: String = text.lines().take(2).collect::<Vec<_>>().join("\n");
            assert_eq!(fast.matches(&head).count(), 1, "{head}");
            fast.find(&head).unwrap()
        };
        let order = [FAST, COMMON, FAST_WORDS, FAST_SEP, FAST_REG, FAST_INT].map(at);
        assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}");
        // A header skipped (the pair's common.cuh, which its module holds once) is left out.
        let pair = inlined(FAST, &["common.cuh"]);
        assert!(!pair.contains(COMMON.lines().next().unwrap()) && pair.contains(FAST_INT));
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
        let body: Vec<&str> = std::iter::once(FAST)
            .chain(
                HEADERS
                    .iter()
                    .filter(|(h, _)| *h != "common.cuh")
                    .map(|&(_, t)| t),
            )
            .collect();
        let body = body.join("\n");
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
