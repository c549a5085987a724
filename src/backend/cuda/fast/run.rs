//! `fast`'s launch: which kernel each plane of a frame takes ([`FastSpec`]'s constructors and
//! the measured rules decide), its weights uploaded, and one launch per specialization over
//! the planes that chose it (a YUV frame's three planes share one).

use super::rules::{
    full_tiled_first, tuning, BLOCKS, FULL_TILE_PREFERRED, SEP_TILE_PREFERRED, TALL_TILE_PREFERRED,
};
use super::{pack_int_weights, FastSpec};
use crate::backend::cuda::abi::{launch, FastPlanes, PlaneParams, MAX_CONST_TAPS};
use crate::backend::cuda::registry::ModuleKey;
use crate::backend::cuda::{variants, CudaBackend, CudaError};
use crate::filter::{IntegerForm, Plan};
use crate::frame::{Depth, PlaneLayout};

/// What runs one plane: a register kernel (`fast_reg`, or `fast_int` with the plan's integer
/// form), a tiled one in a chosen block, or, when no specialization fits, the baseline kernels.
/// Planes of a frame with equal choices share one launch.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Choice {
    Register {
        spec: FastSpec,
        name: &'static str,
        form: Option<IntegerForm>,
    },
    Tiled {
        spec: FastSpec,
        block: (u32, u32),
    },
    Baseline,
}

/// Launches `fast` on the planes of a frame that have channels to filter (the variant table's
/// launch function for `fast` and `auto`): the planes that take the same specialization (the
/// three planes of a YUV frame, mostly) in one launch.
pub(in crate::backend::cuda) fn run_planes(
    b: &mut CudaBackend,
    plan: &Plan,
    planes: &[(PlaneParams, PlaneLayout)],
) -> Result<(), CudaError> {
    let mut groups: Vec<(Choice, Vec<(PlaneParams, PlaneLayout)>)> = Vec::new();
    for &(p, l) in planes {
        let choice = choose(b, plan, &p, l)?;
        match groups.iter_mut().find(|(c, _)| *c == choice) {
            Some((_, same)) => same.push((p, l)),
            None => groups.push((choice, vec![(p, l)])),
        }
    }
    for (choice, same) in groups {
        run(b, plan, choice.for_planes(same.len()), &same)?;
    }
    Ok(())
}

impl Choice {
    /// The same kernel for a launch over `n` planes.
    fn for_planes(self, n: usize) -> Choice {
        match self {
            Choice::Register { spec, name, form } => Choice::Register {
                spec: FastSpec { planes: n, ..spec },
                name,
                form,
            },
            Choice::Tiled { spec, block } => Choice::Tiled {
                spec: FastSpec { planes: n, ..spec },
                block,
            },
            Choice::Baseline => Choice::Baseline,
        }
    }
}

/// The kernel and specialization for plane `l`, with what it compiles in of `p`.
fn choose(
    b: &CudaBackend,
    plan: &Plan,
    p: &PlaneParams,
    l: PlaneLayout,
) -> Result<Choice, CudaError> {
    let (kw, kh, ch) = (plan.kernel.width(), plan.kernel.height(), l.channels);
    let separable = plan.is_separable();
    let plane = |spec: FastSpec| spec.for_plane(p);
    // Small kernels: the register kernel, unless a block shape was asked for, which only the
    // tiled kernels take, or the separable tiled kernel measured faster (tests asking for the
    // large planes' rules reach the integer and register kernels wherever they can run).
    let sb = l.depth.bytes();
    let (side, pixels) = (kw.max(kh), l.width * l.height);
    let mut tiled_first = separable && !b.large_rules && FastSpec::tiled_first(side, sb, pixels);
    // Small planes: the tiled full kernel where it measured faster, in place of the integer
    // kernel at sides 4–5 and of the register kernel at 6–7 (`full_tiled_first`).
    let full_tiled = !separable && !b.large_rules && full_tiled_first(side, ch, sb, pixels);
    if b.block_override().is_none() && l.depth == Depth::U8 && !tiled_first {
        // Tests may ask for the large planes' rules on every plane.
        let samples = if b.large_rules {
            usize::MAX
        } else {
            l.width * ch * l.height
        };
        if let Some(form) = IntegerForm::of(plan, l.depth.max()) {
            match FastSpec::integer(&form, ch, plan.border, separable, samples) {
                Some(_) if full_tiled && side <= 5 => tiled_first = true,
                Some(spec) => {
                    return Ok(Choice::Register {
                        spec: plane(spec),
                        name: "fast_int",
                        form: Some(form),
                    })
                }
                None => {}
            }
        }
    }
    let tiled_first = tiled_first || full_tiled && side >= 6;
    let reg = FastSpec::register(kw, kh, ch, plan.border, separable, sb);
    if let Some(spec) = reg.filter(|_| b.block_override().is_none() && !tiled_first) {
        return Ok(Choice::Register {
            spec: plane(spec),
            name: "fast_reg",
            form: None,
        });
    }
    // Tests may ask for the large planes' rules on every plane.
    let pixels = if b.large_rules {
        usize::MAX
    } else {
        l.width * l.height
    };
    let mut spec = plane(
        if separable {
            FastSpec::separable(kw, kh, ch, plan.border)
        } else {
            FastSpec::new(kw, kh, ch, plan.border)
        }
        .with_sample_bytes(sb)
        .for_pixels(pixels),
    );
    if let Some(py) = tuning().tiled_py {
        spec.py = py;
    }
    let first = spec.first_block(pixels);
    let candidates: Vec<(u32, u32)> = match b.block_override() {
        Some(block) => vec![block],
        None => first.into_iter().chain(BLOCKS).collect(),
    };
    let fits_constant = plan.weights().len() <= MAX_CONST_TAPS;
    // Prefer a block whose tile fits the preferred size (several blocks per multiprocessor),
    // else the largest that fits at all.
    let preferred = if first.is_some() {
        TALL_TILE_PREFERRED
    } else if separable && kh > 9 {
        SEP_TILE_PREFERRED
    } else {
        FULL_TILE_PREFERRED
    }
    .min(b.max_shared());
    let chosen = candidates
        .iter()
        .copied()
        .find(|&c| spec.tile(c).1 <= preferred)
        .or_else(|| {
            candidates
                .iter()
                .copied()
                .find(|&c| spec.tile(c).1 <= b.max_shared())
        });
    match (chosen, b.block_override()) {
        (Some(block), _) if fits_constant => {
            let spec = FastSpec {
                tiled_bounds: spec.sep_bounds(block, pixels),
                ..spec
            }
            .for_block(block);
            Ok(Choice::Tiled { spec, block })
        }
        (None, Some(block)) if fits_constant => Err(CudaError::Unsupported(format!(
            "variant 'fast' with block {}x{} needs {} bytes of shared memory for this \
            kernel, the device allows {}",
            block.0,
            block.1,
            spec.tile(block).1,
            b.max_shared()
        ))),
        _ => Ok(Choice::Baseline),
    }
}

/// Runs `choice` on `planes` (the planes that chose it, as many as its specialization's
/// [`FastSpec::planes`]) in one launch.
fn run(
    b: &mut CudaBackend,
    plan: &Plan,
    choice: Choice,
    planes: &[(PlaneParams, PlaneLayout)],
) -> Result<(), CudaError> {
    let (spec, name, block, (ts, smem)) = match &choice {
        Choice::Baseline => {
            for (p, l) in planes {
                let ran = variants::baseline(b, plan, p, *l)?;
                b.note_fallback(ran);
            }
            return Ok(());
        }
        Choice::Register { spec, name, form } => {
            let key = ModuleKey::Fast(spec.clone());
            match form {
                Some(form) => integer_weights(b, spec, &key, form)?,
                None => b.constant_weights(&key, "c_w", plan)?,
            }
            // The block that fits the first (largest) plane's rows best.
            let block = spec.register_block(planes[0].1.row_samples());
            (spec, *name, block, (0, 0))
        }
        Choice::Tiled { spec, block } => {
            b.constant_weights(&ModuleKey::Fast(spec.clone()), "c_w", plan)?;
            let name = if spec.separable {
                "fast_sep"
            } else {
                "fast_full"
            };
            (spec, name, *block, spec.tile(*block))
        }
    };
    let f = b.function(&ModuleKey::Fast(spec.clone()), name)?;
    // Each thread takes px samples of py rows.
    let grids: Vec<_> = planes
        .iter()
        .map(|&(p, l)| {
            let gx = l.row_samples().div_ceil(block.0 as usize * spec.px);
            let gy = l.height.div_ceil(block.1 as usize * spec.py);
            (p, (gx as u32, gy as u32))
        })
        .collect();
    let cfg = |grid| b.config(&f, grid, block, smem);
    let tiled = matches!(choice, Choice::Tiled { .. });
    match (&grids[..], tiled) {
        ([(p, grid)], false) => launch::plane(b.stream(), &f, cfg(*grid)?, p),
        ([(p, grid)], true) => launch::plane_stride(b.stream(), &f, cfg(*grid)?, p, ts as i32),
        (_, false) => {
            let (set, grid) = FastPlanes::new(&grids);
            launch::planes(b.stream(), &f, cfg(grid)?, &set)
        }
        (_, true) => {
            let (set, grid) = FastPlanes::new(&grids);
            launch::planes_stride(b.stream(), &f, cfg(grid)?, &set, ts as i32)
        }
    }
}

/// Uploads `fast_int`'s packed weights for `form` (the two-factor kernel: the column factor,
/// and the row factor packed as one kernel row; only it needs the factors worked out).
fn integer_weights(
    b: &mut CudaBackend,
    spec: &FastSpec,
    key: &ModuleKey,
    form: &IntegerForm,
) -> Result<(), CudaError> {
    let packed = match spec.separable.then(|| form.factors()).flatten() {
        Some((col, row)) => {
            let col: Vec<u32> = col.iter().map(|&n| n as u32).collect();
            b.constant_words(key, "c_wc", &col)?;
            let row = IntegerForm {
                height: 1,
                weights: row,
                ..form.clone()
            };
            pack_int_weights(&row, spec.tap_stride())
        }
        None => pack_int_weights(form, spec.tap_stride()),
    };
    b.constant_words(key, "c_wp", &packed)
}
