//! `fast`'s launch: which kernel each plane of a frame takes ([`FastSpec`]'s constructors and
//! the measured rules decide), its weights uploaded, and one launch per specialization over
//! the planes that chose it (a YUV frame's three planes share one), or one `fast_pair` launch
//! over a frame's two planes of two specializations (NV12's, P010's). The launches are kept
//! ([`Prepared`]) and replayed while the plan, the planes' geometry and the constant memory
//! stay the same: a frame then costs its driver calls only. A full plan runs as its separable
//! plan where the two are proven to give the same bytes ([`Plan::same_separable`]).

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaStream, LaunchConfig};

use super::kernel::settle;
use super::rules::{
    fast_memory, full_one16_block, full_rows, full_tiled_first, paired, register_min_blocks,
    register_thread_shape, sat_free, sep_compact_sums, sep_fixed_block, sep_int_channels,
    sep_int_first, sep_px, sep_rows_rgb_small, sep_rows_tall, sep_short16, sep_square16,
    sep_staged, sep_staged_vector, sep_zero_offset, sums_padded, tiled_rows, tiled_threads, tuning,
    BLOCKS, FULL_BLOCK_ONE16, FULL_ROWS, FULL_TILE_PREFERRED, INT16_FLOAT_FINISH,
    INT8_FLOAT_FINISH, SEP_BLOCK_SHORT16, SEP_BLOCK_SQUARE16, SEP_ROWS_RGB_SMALL,
    SEP_TILE_PREFERRED, SPILL_TOLERATED_BYTES, TALL_TILE_PREFERRED,
};
use super::FastSpec;
use crate::backend::cuda::abi::{
    float_finish_divisor, launch, FastPair, FastPlanes, PlaneParams, MAX_CONST_TAPS,
};
use crate::backend::cuda::registry::{pair_symbol, ModuleKey, PairKey};
use crate::backend::cuda::{variants, CudaBackend, CudaError};
use crate::border::Border;
use crate::filter::{IntegerForm, Plan};
use crate::frame::{Depth, PlaneLayout};

/// What runs one plane: a register kernel (`fast_reg`, or `fast_int` with the plan's integer
/// form), a tiled one in a chosen block, or, when no specialization fits, the baseline kernels.
/// Planes of a frame with equal choices share one launch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Choice {
    Register {
        spec: FastSpec,
        name: &'static str,
        form: Option<IntegerForm>,
    },
    Tiled {
        spec: FastSpec,
        block: (u32, u32),
        /// The exact integer row factor of `fast_sep`'s row pass ([`FastSpec::row_int`]).
        row: Option<IntegerForm>,
    },
    Baseline,
}

/// One prepared `fast` launch: its kernel and geometry, and which of the frame's planes it
/// takes.
#[derive(Clone, Debug)]
struct Launch {
    f: CudaFunction,
    cfg: LaunchConfig,
    planes: Vec<usize>,
    /// Several planes: their parameter block as prepared, each frame's addresses put in.
    set: Option<FastPlanes>,
    /// The tiled kernels' second argument ([`FastSpec::tile`]'s stride).
    tile_stride: Option<i32>,
    /// Two planes of different specializations in one launch (`fast_pair`): their parameter
    /// block as prepared, each frame's addresses put in.
    pair: Option<FastPair>,
    /// Queued as a programmatic dependent of the kernel before it (the `follow` of abi.rs's
    /// `launch::queue_ex`): where the device has them, unless `CONVFLOW_FAST_FOLLOW=0`.
    follow: bool,
}

impl Launch {
    /// Queues the launch on stream `s` for the frame's `planes` (their device addresses are this
    /// frame's), as a programmatic dependent where it may and `follow` lets it.
    fn fire(
        &self,
        s: &Arc<CudaStream>,
        planes: &[(PlaneParams, PlaneLayout)],
        follow: bool,
    ) -> Result<(), CudaError> {
        let (f, cfg, follow) = (&self.f, self.cfg, self.follow && follow);
        if let Some(mut pair) = self.pair {
            pair.p = [planes[self.planes[0]].0, planes[self.planes[1]].0];
            return launch::pair(s, f, cfg, &pair, follow);
        }
        match (self.set, self.tile_stride) {
            (None, None) => launch::fast_plane(s, f, cfg, &planes[self.planes[0]].0, follow),
            (None, Some(ts)) => {
                launch::plane_stride(s, f, cfg, &planes[self.planes[0]].0, ts, follow)
            }
            (Some(mut set), ts) => {
                set.set_params(self.planes.iter().map(|&i| planes[i].0));
                match ts {
                    None => launch::planes(s, f, cfg, &set, follow),
                    Some(ts) => launch::planes_stride(s, f, cfg, &set, ts, follow),
                }
            }
        }
    }
}

/// The launches of the last frame `fast` ran, with what they were chosen for: the plan's
/// weights, decomposition and border, the rules in force, each plane's parameters but its
/// addresses, and the count of constant-memory uploads then (an upload since, for any plan,
/// may have replaced the weights these launches read).
#[derive(Debug)]
pub(in crate::backend::cuda) struct Prepared {
    weights: Vec<u32>,
    separable: bool,
    border: Border,
    large_rules: bool,
    planes: Vec<(PlaneParams, PlaneLayout)>,
    uploads: u64,
    launches: Vec<Launch>,
}

impl Prepared {
    /// Whether these launches are the ones `plan` on `planes` would prepare now.
    fn fits(&self, b: &CudaBackend, plan: &Plan, planes: &[(PlaneParams, PlaneLayout)]) -> bool {
        self.uploads == b.constant_uploads()
            && self.large_rules == b.large_rules
            && self.separable == plan.is_separable()
            && self.border == plan.border
            && self.planes.len() == planes.len()
            && self
                .planes
                .iter()
                .zip(planes)
                .all(|((p, l), (q, m))| p.same_but_addresses(q) && l == m)
            && self
                .weights
                .iter()
                .copied()
                .eq(plan.weights().iter().map(|w| w.to_bits()))
    }
}

/// Launches `fast` on the planes of a frame that have channels to filter (the variant table's
/// launch function for `fast` and `auto`): the planes that take the same specialization (the
/// three planes of a YUV frame, mostly) in one launch. The last frame's launches are replayed
/// when they fit this one ([`Prepared`]).
pub(in crate::backend::cuda) fn run_planes(
    b: &mut CudaBackend,
    plan: &Plan,
    planes: &[(PlaneParams, PlaneLayout)],
) -> Result<(), CudaError> {
    // A full plan that its separable plan computes byte for byte on these samples runs as that
    // (2k taps a sample in place of k²).
    let separable = planes
        .first()
        .and_then(|(_, l)| plan.same_separable(l.depth.largest_stored()));
    let plan = separable.as_ref().unwrap_or(plan);
    if let Some(prepared) = b.fast_launches.take() {
        if prepared.fits(b, plan, planes) {
            b.start_kernels()?;
            let fired = fire_all(b, &prepared.launches, planes);
            b.fast_launches = Some(prepared);
            return fired;
        }
    }
    let mut groups: Vec<(Choice, Vec<usize>)> = Vec::new();
    for (i, &(p, l)) in planes.iter().enumerate() {
        // The samples of the planes with as many channels: one launch, mostly.
        let same = || planes.iter().filter(|(_, m)| m.channels == l.channels);
        let launch_samples = same().map(|(_, m)| m.row_samples() * m.height).sum();
        // The largest of them: rules that would part a frame's planes of one kind into two
        // launches (a launch costs more than the rule gains on the smaller planes) go by it.
        let group_pixels = same().map(|(_, m)| m.width * m.height).max().unwrap_or(0);
        // Whether every plane to filter has as many channels (a YUV frame's three, not NV12's
        // or P010's two).
        let one_kind = same().count() == planes.len();
        let frame = (launch_samples, group_pixels, planes.len(), one_kind);
        let choice = choose(b, plan, &p, l, frame)?;
        match groups.iter_mut().find(|(c, _)| *c == choice) {
            Some((_, same)) => same.push(i),
            None => groups.push((choice, vec![i])),
        }
    }
    let mut launches = Vec::with_capacity(groups.len());
    let mut replayable = true;
    // Two planes of two specializations (NV12, P010): one launch over both where they can
    // share it (`prepare_pair`; `CONVFLOW_FAST_PAIR=0`: never).
    if let [(ca, a), (cb, bb)] = &groups[..] {
        if a.len() == 1 && bb.len() == 1 && tuning().pair != Some(false) {
            let choices = [ca.clone().for_planes(1), cb.clone().for_planes(1)];
            if let Some(l) = prepare_pair(b, plan, choices, planes, [a[0], bb[0]])? {
                launches.push(l);
                groups.clear();
            }
        }
    }
    for (choice, same) in groups {
        match prepare(b, plan, choice.for_planes(same.len()), planes, &same)? {
            Some(l) => launches.push(l),
            // The baseline kernels ran: the frame has no launches to replay.
            None => replayable = false,
        }
    }
    fire_all(b, &launches, planes)?;
    if !replayable {
        return Ok(());
    }
    b.fast_launches = Some(Prepared {
        weights: plan.weights().iter().map(|w| w.to_bits()).collect(),
        separable: plan.is_separable(),
        border: plan.border,
        large_rules: b.large_rules,
        planes: planes.to_vec(),
        uploads: b.constant_uploads(),
        launches,
    });
    Ok(())
}

/// Queues a frame's launches: the first on the backend's stream, each other one on a side
/// stream of its own, forked after the work queued so far and joined back before the work
/// queued next (`CONVFLOW_FAST_SIDE_STREAMS=0`: all on the backend's stream, one after the
/// other). Their planes are disjoint, so the order between them does not matter. A frame's one
/// launch (or all, one after the other) is queued as a programmatic dependent of the kernel
/// before it where the device has them ([`Launch`]'s `follow`); launches side by side plainly.
fn fire_all(
    b: &mut CudaBackend,
    launches: &[Launch],
    planes: &[(PlaneParams, PlaneLayout)],
) -> Result<(), CudaError> {
    let Some((first, rest)) = launches.split_first() else {
        return Ok(());
    };
    if rest.is_empty() || tuning().side_streams == Some(false) {
        return launches
            .iter()
            .try_for_each(|l| l.fire(b.stream(), planes, true));
    }
    // Side by side, plainly: launches that follow a fork's or a join's event as programmatic
    // dependents measured 1-2 % slower (H100, NV12 3-25 taps, 1080p and 4K).
    let side = b.fork(rest.len())?;
    let fired = first.fire(b.stream(), planes, false).and_then(|()| {
        rest.iter()
            .zip(&side)
            .try_for_each(|(l, s)| l.fire(s, planes, false))
    });
    // Joined even when a launch failed: what the side streams took stays ordered before the
    // work queued after (the buffers' release, the next frame).
    let joined = b.join(rest.len());
    fired.and(joined)
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
            Choice::Tiled { spec, block, row } => Choice::Tiled {
                spec: FastSpec { planes: n, ..spec },
                block,
                row,
            },
            Choice::Baseline => Choice::Baseline,
        }
    }
}

/// The kernel and specialization for plane `l`, with what it compiles in of `p`; the frame's
/// planes with as many channels have `launch_samples` samples, the largest of them
/// `group_pixels` pixels; the frame has `filtered_planes` planes with channels to filter.
fn choose(
    b: &CudaBackend,
    plan: &Plan,
    p: &PlaneParams,
    l: PlaneLayout,
    (launch_samples, group_pixels, filtered_planes, one_kind): (usize, usize, usize, bool),
) -> Result<Choice, CudaError> {
    let (kw, kh, ch) = (plan.kernel.width(), plan.kernel.height(), l.channels);
    let separable = plan.is_separable();
    // Where the plan's sums never leave the output range, the f32 kernels leave the clamp out
    // where that measured faster (`sat_free`), and the integer kernel finishes in floating
    // point (fast_int.cuh's `INT_FFIN`, `INT16_FLOAT_FINISH`, `INT8_FLOAT_FINISH`).
    let proven_free = plan.saturation_free(l.depth.largest_stored(), l.depth.max());
    let saturation_free = sat_free(ch, l.depth.bytes(), separable, kw.max(kh)) && proven_free;
    let int_free = proven_free && tuning().int_ffin.unwrap_or(INT16_FLOAT_FINISH);
    let plane = |spec: FastSpec| FastSpec {
        saturation_free: match spec.int {
            None => saturation_free,
            Some((d, _)) => {
                (spec.sb == 2 || tuning().int_ffin8.unwrap_or(INT8_FLOAT_FINISH))
                    && int_free
                    && !plan.abs
                    && float_finish_divisor(d, spec.sb)
            }
        },
        ..spec.for_plane(p)
    };
    // Small kernels: the register kernel, unless a block shape was asked for, which only the
    // tiled kernels take, or the separable tiled kernel measured faster (tests asking for the
    // large planes' rules reach the integer and register kernels wherever they can run).
    let sb = l.depth.bytes();
    let (side, pixels) = (kw.max(kh), l.width * l.height);
    // Tests may ask for the large planes' rules on every plane: any size then counts as large.
    let sized = |n: usize| if b.large_rules { usize::MAX } else { n };
    let mut tiled_first =
        separable && !b.large_rules && FastSpec::tiled_first(side, ch, sb, sized(group_pixels));
    // Small planes: the tiled full kernel where it measured faster, in place of the integer
    // kernel (8-bit) or the register kernel (16-bit) at sides 4–5 and of the register kernel at
    // 6–7 (`full_tiled_first`).
    let full_tiled =
        !separable && !b.large_rules && full_tiled_first(side, ch, sb, pixels, launch_samples);
    // The integer kernel, where the plan has an integer form for every stored word (a 10-bit
    // format's malformed high bits included: `Depth::largest_stored`).
    // (Separable side-4 integer plans on large one- and two-channel 8-bit planes keep the
    // integer kernel, `sep_int_first`.)
    let int_first = separable && sep_int_first(side, ch, sb, sized(group_pixels));
    if b.block_override().is_none() && (!tiled_first || int_first) {
        let samples = sized(l.width * ch * l.height);
        if let Some(form) = IntegerForm::of(plan, l.depth.largest_stored()) {
            match FastSpec::integer(&form, ch, sb, plan.border, separable, samples) {
                Some(_) if full_tiled && side <= 5 => tiled_first = true,
                Some(mut spec) => {
                    if !spec.deinterleave && !spec.separable && !b.large_rules {
                        (spec.px, spec.py) =
                            register_thread_shape(launch_samples, sb, true, (spec.px, spec.py));
                    }
                    return Ok(Choice::Register {
                        spec: plane(spec),
                        name: "fast_int",
                        form: Some(form),
                    });
                }
                None => {}
            }
        }
    }
    let tiled_first = tiled_first || full_tiled && (side >= 6 || sb > 1);
    let reg = FastSpec::register(kw, kh, ch, plan.border, separable, sb);
    if let Some(mut spec) = reg.filter(|_| b.block_override().is_none() && !tiled_first) {
        if !b.large_rules {
            (spec.px, spec.py) =
                register_thread_shape(launch_samples, sb, false, (spec.px, spec.py));
            spec.min_blocks = register_min_blocks(launch_samples, sb, spec.min_blocks);
        }
        return Ok(Choice::Register {
            spec: plane(spec),
            name: "fast_reg",
            form: None,
        });
    }
    let pixels = sized(pixels);
    let mut spec = plane(FastSpec::tiled_for_plane(
        separable,
        (kw, kh),
        (ch, sb),
        plan.border,
        p,
        pixels,
    ));
    if !separable {
        if let Some(px) = tuning().tiled_px.filter(|_| spec.all_filtered()) {
            (spec.px, spec.row_px) = (px, px);
        }
    }
    // Separable: inner blocks stage their input rows where that measured faster, and 8-bit
    // row passes are taken in exact integers where proven (the weights within a signed byte
    // for `__dp4a`), on every plane (`sep_int_channels`).
    let mut row = None;
    if spec.separable && spec.row_global {
        if l.depth == Depth::U8 && tuning().sep_int != Some(false) {
            row = IntegerForm::row_pass(plan, l.depth.max()).filter(|f| f.max_weight() <= 127);
            spec.row_int = row.as_ref().map(|f| f.divisor);
            spec.deinterleave = spec.row_int.is_some()
                && ch >= 2
                && tuning().sep_deil.unwrap_or_else(|| sep_int_channels(ch));
        }
        // Threads that own other than 4 pixels' samples (`sep_px`); whether the row pass may
        // go one channel at a time decides it on small planes.
        let planar = spec.row_int.is_none() && tuning().sums_planar != Some(false);
        let px = match tuning().sep_px {
            Some(px) => Some(px),
            None if b.block_override().is_none() => sep_px(ch, sb, (kw, kh), pixels, planar),
            None => None,
        };
        if let Some(px) = px.filter(|_| spec.all_filtered()) {
            (spec.px, spec.row_px) = (px, px);
        }
        let fast_mem = fast_memory(b.memory_rate());
        spec.row_staged = tuning().sep_staged.unwrap_or_else(|| {
            let int = spec.row_int.is_some();
            sep_staged((ch, sb), kh, sized(launch_samples), int, fast_mem)
        });
        spec.sums_pad = tuning()
            .sums_pad
            .unwrap_or_else(|| sums_padded(ch, sb, kh, false));
        // One-channel planes on large launches: more rows per thread (`sep_rows_tall`; from
        // smaller launches on devices of fast memory).
        if let Some(rows) = sep_rows_tall(ch, sb, kh, sized(launch_samples), fast_mem) {
            if b.block_override().is_none() {
                spec.py = rows;
            }
        }
        // 8-bit RGB on small planes: fewer rows per thread (`sep_rows_rgb_small`).
        let threads = tiled_threads(launch_samples, (spec.px, spec.py));
        let int_rows = spec.row_int.is_some();
        if sep_rows_rgb_small(ch, sb, kh, pixels, int_rows, threads) && b.block_override().is_none()
        {
            spec.py = spec.py.min(SEP_ROWS_RGB_SMALL);
        }
    }
    // Full kernels of the sides measured to want other rows, and 16-bit launches of the
    // middle range (`full_rows`; tests asking for the large planes' rules get the large
    // planes' rows).
    if !separable && b.block_override().is_none() {
        let launch = (sized(launch_samples), spec.px, spec.py);
        if let Some(rows) = full_rows((ch, sb), (kw, kh), pixels, launch) {
            spec.py = rows;
        }
    }
    match tuning().tiled_py {
        Some(py) => spec.py = py,
        // Small launches: fewer rows per thread, more threads (`tiled_rows`); not with a
        // block asked for (`--block` measures the rule's shapes as they were) nor where the
        // small planes' separable shapes set the rows (`sep_small_shape`).
        None if !b.large_rules
            && b.block_override().is_none()
            && spec.small_shape(pixels).is_none() =>
        {
            spec.py = tiled_rows(launch_samples, (spec.px, spec.py), separable, (ch, sb), kh);
        }
        None => {}
    }
    // 16-bit planes 4–5 taps high take 16 × 8 blocks, all of a frame's planes of one kind alike;
    // a frame's one filtered plane of one 16-bit channel stored from bit 0, 6–9 taps high,
    // 16 × 16 (`sep_square16`); full plans of one 16-bit channel 8–9 a side in 4 rows on large
    // frames of one-channel planes only 16 × 8 (`full_one16_block`), all of a frame's planes
    // alike (P010's luma keeps its block: its chroma's decides whether the two share a launch).
    let one_plane = filtered_planes == 1 && l.depth.shift() == 0;
    let first = if spec.row_global && sep_short16(ch, sb, side, sized(group_pixels)) {
        Some(SEP_BLOCK_SHORT16)
    } else if !separable
        && one_kind
        && spec.py == FULL_ROWS
        && full_one16_block(ch, sb, side, sized(group_pixels))
    {
        Some(FULL_BLOCK_ONE16)
    } else if spec.row_global
        && tuning().sep_block.is_none()
        && spec.small_shape(pixels).is_none()
        && sep_square16(ch, sb, kh, sized(launch_samples), one_plane)
    {
        Some(SEP_BLOCK_SQUARE16)
    } else {
        spec.first_block(pixels)
    };
    let candidates: Vec<(u32, u32)> = match b.block_override() {
        Some(block) => vec![block],
        None => first.into_iter().chain(BLOCKS).collect(),
    };
    // Staged rows take more shared memory: a block asked for (`--block`) that fits only
    // without them reads its rows from global memory instead (same bytes).
    if spec.row_staged && candidates.iter().all(|&c| spec.tile(c).1 > b.max_shared()) {
        spec.row_staged = false;
    }
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
            // `fast_sep`'s code rolled where that measured faster (under `--block` too: it
            // is not a shape).
            let spec = FastSpec {
                tiled_bounds: spec.sep_bounds(block, pixels),
                ..spec
            }
            .for_block(block, pixels, sized(launch_samples))
            .with_rolled(pixels);
            // `fast_sep`'s block compiled in, and with it a zero offset and `--abs` where that
            // pays.
            let fixed = spec.separable
                && spec.row_global
                && sep_fixed_block(ch, sb, kh, sized(group_pixels));
            let output_in = fixed && sep_zero_offset(ch, kh) && p.offset == 0.0;
            let spec = FastSpec {
                fixed_block: fixed.then_some(block),
                zero_offset: spec.zero_offset || output_in,
                abs: spec.abs || output_in && p.abs_out != 0,
                ..spec
            };
            // Its staged words by 16-byte loads where they fit (`sep_staged_vector`); no sums
            // for an unfiltered alpha where that fits, their rows then padded
            // (`sep_compact_sums`, `sums_padded`, `FastSpec::sep_sums_row`: a quarter fewer
            // columns, one float4 more a row at most, two in blocks 4 wide, 14 where alpha's
            // sums took 16, so the block chosen on alpha's sums still fits).
            let compact = spec.compact_sums_fits() && sep_compact_sums(block.0, spec.px, spec.py);
            let spec = FastSpec {
                staged_vector: spec.staged_vector_fits() && sep_staged_vector(spec.shift),
                compact_sums: compact,
                sums_pad: tuning()
                    .sums_pad
                    .unwrap_or_else(|| sums_padded(ch, sb, kh, compact)),
                ..spec
            };
            Ok(Choice::Tiled { spec, block, row })
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

/// Prepares `choice` for the frame's planes numbered `which` (as many as its
/// specialization's [`FastSpec::planes`]): its weights uploaded, its kernel loaded, its
/// geometry worked out. The baseline kernels have no launch to prepare: they run here, and
/// None returns.
fn prepare(
    b: &mut CudaBackend,
    plan: &Plan,
    choice: Choice,
    planes: &[(PlaneParams, PlaneLayout)],
    which: &[usize],
) -> Result<Option<Launch>, CudaError> {
    let Some(kernel) = settle(b, choice, planes[which[0]].1)? else {
        for &i in which {
            let (p, l) = &planes[i];
            let ran = variants::baseline(b, plan, p, *l)?;
            b.note_fallback(ran);
        }
        return Ok(None);
    };
    let key = ModuleKey::Fast(kernel.spec.clone());
    kernel.upload(b, plan, &key, |name| name)?;
    let f = b.function(&key, kernel.name)?;
    let grids: Vec<_> = which
        .iter()
        .map(|&i| (planes[i].0, kernel.grid(planes[i].1)))
        .collect();
    let (set, grid) = match &grids[..] {
        [(_, grid)] => (None, *grid),
        _ => {
            let (set, grid) = FastPlanes::new(&grids);
            (Some(set), grid)
        }
    };
    Ok(Some(Launch {
        cfg: b.config(&f, grid, kernel.block, kernel.smem)?,
        f,
        planes: which.to_vec(),
        set,
        tile_stride: kernel.tiled.then_some(kernel.ts as i32),
        pair: None,
        follow: b.dependent_launches() && tuning().follow != Some(false),
    }))
}

/// One launch over a frame's two planes `which` whose choices differ (NV12's luma and
/// interleaved chroma): both specializations compiled into one module and run by
/// kernels/fast_pair.cuh, one launch (a programmatic dependent where the device has them) in
/// place of two side by side. None where they cannot share it or the rule says not to: a plane
/// on the baseline kernels, different block shapes, [`paired`] (`CONVFLOW_FAST_PAIR` overrides
/// it), a module that does not compile, or the pair's kernel keeping more local memory than
/// [`SPILL_TOLERATED_BYTES`] (spilled registers); the caller then prepares each alone (settling
/// each plane's kernel again: its modules are cached).
fn prepare_pair(
    b: &mut CudaBackend,
    plan: &Plan,
    choices: [Choice; 2],
    planes: &[(PlaneParams, PlaneLayout)],
    which: [usize; 2],
) -> Result<Option<Launch>, CudaError> {
    let [ca, cb] = choices;
    let (Some(ka), Some(kb)) = (
        settle(b, ca, planes[which[0]].1)?,
        settle(b, cb, planes[which[1]].1)?,
    ) else {
        return Ok(None);
    };
    let side = plan.kernel.width().max(plan.kernel.height());
    let l = planes[which[0]].1;
    let tiled = ka.tiled || kb.tiled;
    let rule = || paired(tiled, plan.is_separable(), side, l.width * l.height);
    if ka.block != kb.block || !tuning().pair.unwrap_or_else(rule) {
        return Ok(None);
    }
    // The looser of the two bounds, so that neither plane's code has fewer registers than in
    // its own kernel.
    let bounds = match (ka.bounds(), kb.bounds()) {
        (Some((t, ma)), Some((_, mb))) => Some((t, ma.min(mb))),
        _ => None,
    };
    let key = ModuleKey::FastPair(Box::new(PairKey {
        specs: [ka.spec.clone(), kb.spec.clone()],
        entries: [ka.name, kb.name],
        bounds,
    }));
    // A pair's module that does not compile, or whose kernel spills (unless
    // `CONVFLOW_FAST_SPILL=0` keeps it), leaves the two launches, which run the same code.
    let f = match b.registry.function(&key, "fast_pair") {
        Err(CudaError::Compile { .. }) => return Ok(None),
        f => f?,
    };
    let local = f
        .local_size_bytes()
        .map_err(|e| CudaError::driver("reading a kernel's local memory", e))?;
    if local.max(0) as usize > SPILL_TOLERATED_BYTES && tuning().spill_guard != Some(0) {
        return Ok(None);
    }
    ka.upload(b, plan, &key, |name| pair_symbol(0, name))?;
    kb.upload(b, plan, &key, |name| pair_symbol(1, name))?;
    // The cached function again, through the backend this time: as for a single launch, that
    // records the frame's kernels-start event before its first launch.
    let f = b.function(&key, "fast_pair")?;
    let (pa, la) = planes[which[0]];
    let (pb, lb) = planes[which[1]];
    let (pair, grid) = FastPair::new(
        (pa, ka.grid(la), ka.ts as i32),
        (pb, kb.grid(lb), kb.ts as i32),
    );
    Ok(Some(Launch {
        cfg: b.config(&f, grid, ka.block, ka.smem.max(kb.smem))?,
        f,
        planes: which.to_vec(),
        set: None,
        tile_stride: None,
        pair: Some(pair),
        follow: b.dependent_launches() && tuning().follow != Some(false),
    }))
}
