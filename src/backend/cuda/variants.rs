//! The CUDA variants, one table row each: name, what it does, which decompositions it runs, and
//! the function that launches it (plane by plane, or on all of a frame's planes at once).
//! Everything that lists variants (`--variant`, `convflow info`, the benchmark suite, the
//! conformance tests) iterates [`VARIANTS`]; adding a variant is a row here plus its kernel.
//!
//! The launch functions of the literature's variants live here; `fast` (ours) has a module of
//! its own ([`super::fast`]).

use std::fmt;
use std::str::FromStr;

use cudarc::driver::sys;

use super::abi::{entry_name, launch, PlaneParams, MAX_CONST_TAPS};
use super::registry::ModuleKey;
use super::{fast, raw, CudaBackend, CudaError};
use crate::backend::Support;
use crate::border::Border;
use crate::filter::Plan;
use crate::frame::PlaneLayout;

/// Launches a variant on one plane (already on the device, `p` pointing at it).
type PlaneFn = fn(&mut CudaBackend, &Plan, &PlaneParams, PlaneLayout) -> Result<(), CudaError>;
/// Launches a variant on every plane of a frame that has channels to filter.
type FrameFn = fn(&mut CudaBackend, &Plan, &[(PlaneParams, PlaneLayout)]) -> Result<(), CudaError>;

/// How a variant runs a frame: the literature's plane by plane, `fast` on all its planes at
/// once (planes of one specialization share a launch).
enum Launch {
    EachPlane(PlaneFn),
    Frame(FrameFn),
}

/// One CUDA variant.
pub struct VariantSpec {
    /// The name `--variant` takes, e.g. `shared-constant`.
    pub name: &'static str,
    /// One line for `convflow info` and the README's table.
    pub about: &'static str,
    /// Which decompositions it runs (a plan it cannot run is refused at start-up).
    pub runs: Support,
    launch: Launch,
}

/// Every variant, `auto` (the default) first.
pub static VARIANTS: [VariantSpec; 9] = [
    VariantSpec {
        name: "auto",
        about: "fast (it was the fastest variant at every measured point)",
        runs: Support::Both,
        launch: Launch::Frame(fast::launch),
    },
    VariantSpec {
        name: "global",
        about: "one thread per output pixel, weights in global memory (the baseline)",
        runs: Support::FullOnly,
        launch: Launch::EachPlane(global),
    },
    VariantSpec {
        name: "constant",
        about: "weights in __constant__ memory (at most 16000 taps)",
        runs: Support::FullOnly,
        launch: Launch::EachPlane(constant),
    },
    VariantSpec {
        name: "shared",
        about: "block tile + halo staged in shared memory, weights in global memory",
        runs: Support::FullOnly,
        launch: Launch::EachPlane(shared),
    },
    VariantSpec {
        name: "shared-constant",
        about: "tile in shared memory, weights in __constant__ memory",
        runs: Support::FullOnly,
        launch: Launch::EachPlane(shared_constant),
    },
    VariantSpec {
        name: "texture",
        about: "input read through a texture object",
        runs: Support::FullOnly,
        launch: Launch::EachPlane(texture),
    },
    VariantSpec {
        name: "separable-global",
        about: "horizontal pass into an f32 temporary in global memory, then vertical pass",
        runs: Support::SeparableOnly,
        launch: Launch::EachPlane(separable_global),
    },
    VariantSpec {
        name: "separable-shared",
        about: "fused two-pass: horizontal results kept in shared memory, one launch",
        runs: Support::SeparableOnly,
        launch: Launch::EachPlane(separable_shared),
    },
    VariantSpec {
        name: "fast",
        about: "ours: NVRTC-specialized sizes, register blocking, fused separable path",
        runs: Support::Both,
        launch: Launch::Frame(fast::launch),
    },
];

/// A row of [`VARIANTS`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Variant(usize);

impl Variant {
    /// Every variant, in table order.
    pub fn all() -> impl Iterator<Item = Variant> {
        (0..VARIANTS.len()).map(Variant)
    }
    fn spec(self) -> &'static VariantSpec {
        &VARIANTS[self.0]
    }
    /// The name `--variant` takes.
    pub fn name(self) -> &'static str {
        self.spec().name
    }
    /// One line saying what the variant does.
    pub fn about(self) -> &'static str {
        self.spec().about
    }
    /// Which decompositions it runs.
    pub fn runs(self) -> Support {
        self.spec().runs
    }
    /// Launches the variant on `planes`, the planes of a frame with channels to filter.
    pub(super) fn launch(
        self,
        b: &mut CudaBackend,
        plan: &Plan,
        planes: &[(PlaneParams, PlaneLayout)],
    ) -> Result<(), CudaError> {
        match self.spec().launch {
            Launch::EachPlane(f) => planes.iter().try_for_each(|(p, l)| f(b, plan, p, *l)),
            Launch::Frame(f) => f(b, plan, planes),
        }
    }
}

impl fmt::Display for Variant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Variant {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Variant::all().find(|v| v.name() == s).ok_or_else(|| {
            let names: Vec<_> = Variant::all().map(Variant::name).collect();
            format!(
                "unknown variant '{}' (expected {})",
                crate::quote::quote(s),
                names.join(", ")
            )
        })
    }
}

/// Grid of `block`-sized blocks covering `w × h` threads.
fn grid((bx, by): (u32, u32), w: usize, h: usize) -> (u32, u32) {
    ((w as u32).div_ceil(bx), (h as u32).div_ceil(by))
}

/// Shared bytes of an input tile with its halo (conv_tiled in direct.cu, sep_fused): one
/// stored sample per tap position.
fn sample_tile(plan: &Plan, (bx, by): (u32, u32), l: &PlaneLayout) -> usize {
    (bx as usize + plan.kernel.width() - 1)
        * (by as usize + plan.kernel.height() - 1)
        * l.channels
        * l.depth.bytes()
}

fn global(
    b: &mut CudaBackend,
    plan: &Plan,
    p: &PlaneParams,
    l: PlaneLayout,
) -> Result<(), CudaError> {
    let w = b.global_weights(plan)?;
    let f = b.function(
        &ModuleKey::Direct,
        &entry_name("conv_global", plan.border, l.depth.bytes()),
    )?;
    let block = b.block();
    let cfg = b.config(&f, grid(block, l.width, l.height), block, 0)?;
    launch::plane_weights(b.stream(), &f, cfg, p, w)
}

/// The constant variants: weights in the module's `__constant__` array.
fn constant_weights(b: &mut CudaBackend, plan: &Plan, variant: &str) -> Result<(), CudaError> {
    let taps = plan.weights().len();
    if taps > MAX_CONST_TAPS {
        return Err(CudaError::Unsupported(format!(
            "variant '{variant}' holds at most {MAX_CONST_TAPS} taps in constant memory, the \
            kernel has {taps}"
        )));
    }
    b.constant_weights(&ModuleKey::Direct, "c_weights", plan)
}

fn constant(
    b: &mut CudaBackend,
    plan: &Plan,
    p: &PlaneParams,
    l: PlaneLayout,
) -> Result<(), CudaError> {
    constant_weights(b, plan, "constant")?;
    let f = b.function(
        &ModuleKey::Direct,
        &entry_name("conv_constant", plan.border, l.depth.bytes()),
    )?;
    let block = b.block();
    let cfg = b.config(&f, grid(block, l.width, l.height), block, 0)?;
    launch::plane(b.stream(), &f, cfg, p)
}

fn shared(
    b: &mut CudaBackend,
    plan: &Plan,
    p: &PlaneParams,
    l: PlaneLayout,
) -> Result<(), CudaError> {
    let w = b.global_weights(plan)?;
    let f = b.function(
        &ModuleKey::Direct,
        &entry_name("conv_shared", plan.border, l.depth.bytes()),
    )?;
    let block = b.block();
    let cfg = b.config(
        &f,
        grid(block, l.width, l.height),
        block,
        sample_tile(plan, block, &l),
    )?;
    launch::plane_weights(b.stream(), &f, cfg, p, w)
}

fn shared_constant(
    b: &mut CudaBackend,
    plan: &Plan,
    p: &PlaneParams,
    l: PlaneLayout,
) -> Result<(), CudaError> {
    constant_weights(b, plan, "shared-constant")?;
    let f = b.function(
        &ModuleKey::Direct,
        &entry_name("conv_shared_constant", plan.border, l.depth.bytes()),
    )?;
    let block = b.block();
    let cfg = b.config(
        &f,
        grid(block, l.width, l.height),
        block,
        sample_tile(plan, block, &l),
    )?;
    launch::plane(b.stream(), &f, cfg, p)
}

/// Texture reads. The hardware has clamp and border-colour-0 address modes, which apply per
/// element, so they serve single-channel planes; other cases map coordinates in software.
/// Textures need aligned base addresses and pitches: a plane that has neither is copied first.
fn texture(
    b: &mut CudaBackend,
    plan: &Plan,
    p: &PlaneParams,
    l: PlaneLayout,
) -> Result<(), CudaError> {
    let w = b.global_weights(plan)?;
    let hw = l.channels == 1 && matches!(plan.border, Border::Clamp | Border::Zero);
    let mode = if plan.border == Border::Zero && hw {
        sys::CUaddress_mode::CU_TR_ADDRESS_MODE_BORDER
    } else {
        sys::CUaddress_mode::CU_TR_ADDRESS_MODE_CLAMP
    };
    let (base, pitch) = b.texture_source(p, l)?;
    let tex = raw::Texture::pitch2d(
        base,
        l.depth.bytes(),
        l.row_samples(),
        l.height,
        pitch,
        mode,
    )
    .map_err(|e| CudaError::driver("creating a texture object", e))?;
    let f = b.function(
        &ModuleKey::Direct,
        &entry_name("conv_texture", plan.border, l.depth.bytes()),
    )?;
    let block = b.block();
    let cfg = b.config(&f, grid(block, l.width, l.height), block, 0)?;
    launch::plane_texture(b.stream(), &f, cfg, p, w, tex.handle(), hw as i32)?;
    // The texture must outlive the kernel that reads it.
    b.stream()
        .synchronize()
        .map_err(|e| CudaError::driver("running the texture kernel", e))?;
    drop(tex);
    Ok(())
}

fn separable_global(
    b: &mut CudaBackend,
    plan: &Plan,
    p: &PlaneParams,
    l: PlaneLayout,
) -> Result<(), CudaError> {
    let w = b.global_weights(plan)?;
    let tmp = b.intermediate(l.width * l.height * l.channels)?;
    let row = b.function(
        &ModuleKey::Separable,
        &entry_name("sep_row", plan.border, l.depth.bytes()),
    )?;
    let col = b.function(
        &ModuleKey::Separable,
        &entry_name("sep_col", plan.border, l.depth.bytes()),
    )?;
    let block = b.block();
    let cfg = b.config(&row, grid(block, l.width, l.height), block, 0)?;
    launch::plane_weights_tmp(b.stream(), &row, cfg, p, w, tmp)?;
    let cfg = b.config(&col, grid(block, l.width, l.height), block, 0)?;
    launch::plane_weights_tmp(b.stream(), &col, cfg, p, w, tmp)
}

fn separable_shared(
    b: &mut CudaBackend,
    plan: &Plan,
    p: &PlaneParams,
    l: PlaneLayout,
) -> Result<(), CudaError> {
    let w = b.global_weights(plan)?;
    let block = b.block();
    // sep_fused in separable.cu: f32 horizontal sums for (by + kh − 1) rows × bx pixels, then
    // the input tile.
    let th = block.1 as usize + plan.kernel.height() - 1;
    let smem = th * block.0 as usize * l.channels * 4 + sample_tile(plan, block, &l);
    let f = b.function(
        &ModuleKey::Separable,
        &entry_name("sep_fused", plan.border, l.depth.bytes()),
    )?;
    let cfg = b.config(&f, grid(block, l.width, l.height), block, smem)?;
    launch::plane_weights(b.stream(), &f, cfg, p, w)
}

/// The kernels `fast` hands a plan to when no specialization fits (a kernel beyond constant
/// memory or any shared-memory tile): the baseline of the same decomposition.
pub(super) fn baseline(
    b: &mut CudaBackend,
    plan: &Plan,
    p: &PlaneParams,
    l: PlaneLayout,
) -> Result<&'static str, CudaError> {
    if plan.is_separable() {
        separable_global(b, plan, p, l)?;
        Ok("separable-global")
    } else {
        global(b, plan, p, l)?;
        Ok("global")
    }
}
