//! A plane's choice of `fast` kernel made concrete ([`Kernel`]): its launch bounds eased where
//! the compiler would spill registers under them ([`unspilled`]), its entry point, block and
//! shared tile, and its weights uploaded into a module's constant arrays (its own, or its half
//! of a `fast_pair` module's).

use super::rules::{tuning, REG_THREADS, SPILL_TOLERATED_BYTES};
use super::run::Choice;
use super::{pack_int_weights, FastSpec};
use crate::backend::cuda::registry::ModuleKey;
use crate::backend::cuda::{CudaBackend, CudaError};
use crate::filter::{IntegerForm, Plan};
use crate::frame::PlaneLayout;

/// A choice with its launch bounds settled ([`unspilled`]) and its geometry: the entry point,
/// the block, the tile's stride and bytes of shared memory, and what its weights are.
pub(super) struct Kernel {
    pub(super) spec: FastSpec,
    pub(super) name: &'static str,
    pub(super) block: (u32, u32),
    /// A tiled kernel (`fast_full`, `fast_sep`), whose entry point takes the tile's stride.
    pub(super) tiled: bool,
    pub(super) ts: usize,
    pub(super) smem: usize,
    /// `fast_int`'s integer form.
    form: Option<IntegerForm>,
    /// `fast_sep`'s exact integer row factor.
    row: Option<IntegerForm>,
}

/// `choice` for plane `l` settled ([`Kernel`]); None for the baseline kernels.
pub(super) fn settle(
    b: &mut CudaBackend,
    choice: Choice,
    l: PlaneLayout,
) -> Result<Option<Kernel>, CudaError> {
    // Launch bounds eased first where they spill: the weights go to the module that runs.
    Ok(match choice {
        Choice::Baseline => None,
        Choice::Register { spec, name, form } => {
            let spec = unspilled(b, spec, name)?;
            // The block that fits the (first, largest) plane's rows best.
            let block = spec.register_block(l.row_samples());
            Some(Kernel {
                spec,
                name,
                block,
                tiled: false,
                ts: 0,
                smem: 0,
                form,
                row: None,
            })
        }
        Choice::Tiled { spec, block, row } => {
            let name = tiled_name(&spec);
            let spec = unspilled(b, spec, name)?;
            let (ts, smem) = spec.tile(block);
            Some(Kernel {
                spec,
                name,
                block,
                tiled: true,
                ts,
                smem,
                form: None,
                row,
            })
        }
    })
}

impl Kernel {
    /// Its weights into module `key`'s constant arrays, each named by `symbol` (the array's
    /// name in the `fast` source, or in a pair's module that of its half, [`pair_symbol`]).
    pub(super) fn upload(
        &self,
        b: &mut CudaBackend,
        plan: &Plan,
        key: &ModuleKey,
        symbol: impl Fn(&'static str) -> &'static str,
    ) -> Result<(), CudaError> {
        match &self.form {
            Some(form) => integer_weights(b, &self.spec, key, form, &symbol),
            None => {
                b.constant_weights(key, symbol("c_w"), plan)?;
                match &self.row {
                    Some(row) => b.constant_words(
                        key,
                        symbol("c_wr"),
                        &pack_int_weights(row, self.spec.tap_stride(), self.spec.sb),
                    ),
                    None => Ok(()),
                }
            }
        }
    }

    /// Its grid of blocks on plane `l` (columns, rows): each thread takes px samples of py rows.
    pub(super) fn grid(&self, l: PlaneLayout) -> (u32, u32) {
        let gx = l
            .row_samples()
            .div_ceil(self.block.0 as usize * self.spec.px);
        let gy = l.height.div_ceil(self.block.1 as usize * self.spec.py);
        (gx as u32, gy as u32)
    }

    /// Its launch bounds: threads a block and resident blocks per multiprocessor at least.
    pub(super) fn bounds(&self) -> Option<(u32, usize)> {
        if self.tiled {
            self.spec.tiled_bounds
        } else {
            Some((REG_THREADS, self.spec.min_blocks))
        }
    }
}

/// The entry point of the tiled kernels' module for `spec`.
pub(super) fn tiled_name(spec: &FastSpec) -> &'static str {
    if spec.separable {
        "fast_sep"
    } else {
        "fast_full"
    }
}

/// `spec`, its launch bounds eased where the ones the rules chose make the compiler keep more
/// than [`SPILL_TOLERATED_BYTES`] of local memory a thread (spilled registers). The measured
/// rules pick resident blocks per multiprocessor by format and side ranges, which cap each
/// thread's registers; at a few shapes the compiler's schedule needs far more than its
/// neighbours' (RGBA64 `gaussian:10` separable, 8 blocks: 64 registers and 272 bytes spilled,
/// 47.4 µs on 1080p against 32.1 at `:11`). The loaded kernel's local memory is read; over
/// the tolerance, the same kernel with the loosest bound is loaded, and if that is within
/// it, the kernel with one block fewer than asked at a time until one is ([`eased_blocks`]).
/// Where the loosest bound keeps as much, the bound is not the cause and `spec` stays. A
/// bound set by `CONVFLOW_FAST_MINB` / `CONVFLOW_FAST_SEP_MINB` stays; `CONVFLOW_FAST_SPILL=0`
/// keeps every bound, `=2` also says on stderr where one was eased.
fn unspilled(b: &mut CudaBackend, spec: FastSpec, name: &str) -> Result<FastSpec, CudaError> {
    let t = tuning();
    let (threads, asked, set) = match spec.tiled_bounds {
        Some((tb, m)) => (tb, m, t.sep_minb.is_some() && spec.separable),
        None if spec.reg => (REG_THREADS, spec.min_blocks, t.min_blocks.is_some()),
        None => return Ok(spec),
    };
    if set || t.spill_guard == Some(0) {
        return Ok(spec);
    }
    let bounded = |m: usize| match spec.tiled_bounds {
        Some((tb, _)) => FastSpec {
            tiled_bounds: Some((tb, m)),
            ..spec.clone()
        },
        None => FastSpec {
            min_blocks: m,
            ..spec.clone()
        },
    };
    let mut spilled = 0;
    let eased = eased_blocks(asked, threads, |m| {
        // The registry's loader, not the backend's: this is no launch of the frame yet, and
        // the kernels' start event is recorded at the first (`CudaBackend::function`).
        let f = b.registry.function(&ModuleKey::Fast(bounded(m)), name)?;
        let local = f
            .local_size_bytes()
            .map_err(|e| CudaError::driver("reading a kernel's local memory", e))?;
        if m == asked {
            spilled = local;
        }
        Ok(local.max(0) as usize)
    })?;
    if eased != asked && t.spill_guard == Some(2) {
        crate::say!(
            "convflow: {name} ({}x{} taps, {} channels of {} bytes, mask {}, {} x {} samples a \
            thread): launch bounds eased from {asked} to {eased} blocks of {threads} threads \
            ({spilled} bytes of local memory)",
            spec.kw,
            spec.kh,
            spec.ch,
            spec.sb,
            spec.mask,
            spec.px,
            spec.py
        );
    }
    Ok(bounded(eased))
}

/// The resident blocks of `threads` threads a kernel's launch bounds keep ([`unspilled`]):
/// `asked` where its local memory (`local(m)`: bytes a thread with a bound of `m` blocks) is
/// within [`SPILL_TOLERATED_BYTES`]; else, if the loosest bound that still caps registers
/// differently ([`loosest_blocks`]) is within it, the most blocks under `asked` whose is;
/// else `asked` (the bound is not the cause: two modules compiled, not one per bound).
pub(super) fn eased_blocks(
    asked: usize,
    threads: u32,
    mut local: impl FnMut(usize) -> Result<usize, CudaError>,
) -> Result<usize, CudaError> {
    let loosest = loosest_blocks(threads);
    if asked <= loosest || local(asked)? <= SPILL_TOLERATED_BYTES {
        return Ok(asked);
    }
    if local(loosest)? > SPILL_TOLERATED_BYTES {
        return Ok(asked);
    }
    for m in (loosest + 1..asked).rev() {
        if local(m)? <= SPILL_TOLERATED_BYTES {
            return Ok(m);
        }
    }
    Ok(loosest)
}

/// Registers of a multiprocessor (sm_80 and sm_90), shared out by the launch bounds.
const SM_REGISTERS: usize = 65536;

/// The most resident blocks of `threads` threads whose bound leaves a thread the most
/// registers there are (255, in steps of 8: 256): 2 blocks of 128 threads, one of 256; fewer
/// blocks change nothing.
pub(super) fn loosest_blocks(threads: u32) -> usize {
    (SM_REGISTERS / (threads as usize * 256)).max(1)
}

/// Uploads `fast_int`'s packed weights for `form` (the two-factor kernel: the column factor,
/// and the row factor packed as one kernel row; only it needs the factors worked out).
fn integer_weights(
    b: &mut CudaBackend,
    spec: &FastSpec,
    key: &ModuleKey,
    form: &IntegerForm,
    symbol: impl Fn(&'static str) -> &'static str,
) -> Result<(), CudaError> {
    let packed = match spec.separable.then(|| form.factors()).flatten() {
        Some((col, row)) => {
            let col: Vec<u32> = col.iter().map(|&n| n as u32).collect();
            b.constant_words(key, symbol("c_wc"), &col)?;
            let row = IntegerForm {
                height: 1,
                weights: row,
                ..form.clone()
            };
            pack_int_weights(&row, spec.tap_stride(), spec.sb)
        }
        None => pack_int_weights(form, spec.tap_stride(), spec.sb),
    };
    b.constant_words(key, symbol("c_wp"), &packed)
}
