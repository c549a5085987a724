//! Which backends and lanes a `filter` run gets: the backends made on a thread of their own
//! beside opening the input ([`MakeBackends`]); cpu-par opening the run while a CUDA context
//! comes up ([`opens_on_cpu`]); one small image under `auto` left to cpu-par with no context
//! made at all ([`image_on_cpu`]). The two decisions weigh [`par::estimate`], a guess at
//! cpu-par's time, against what a context costs.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use convflow::backend::cpu::par;
use convflow::backend::{self, BackendKind};
use convflow::filter::Plan;
use convflow::io;

use super::super::args::FilterArgs;
use super::usage;

/// Whether cpu-par filters the first frames while the CUDA context comes up (an *opening*
/// lane, [`pipeline::open`]): for `auto` and `cuda` with `--variant auto` (a named variant is
/// run as asked, every frame), not with `--sync` (the classic loop, for comparison),
/// `--passthrough` or `--gpu-only`, and only where a CUDA driver is installed. Every backend
/// gives the same bits for the same plan, so the output does not depend on which lane filtered
/// which frame; the first frame comes ~0.2 s sooner.
///
/// A frame of `samples` samples that cpu-par is not expected to filter within
/// [`CPU_BEFORE_CONTEXT`] is left to the GPU: the GPU would wait for it (frames are written in
/// order).
/// `driver`: whether a CUDA driver is installed ([`backend::driver_present`]).
pub(super) fn opens_on_cpu(
    a: &FilterArgs,
    plan: &Plan,
    samples: Option<usize>,
    driver: bool,
) -> bool {
    matches!(a.backend, BackendKind::Auto | BackendKind::Cuda)
        && a.gpu.variant_is_auto()
        && !(a.gpu.sync || a.passthrough || a.gpu_only)
        && samples.is_none_or(|n| par::estimate(plan, n, a.threads) <= CPU_BEFORE_CONTEXT)
        && driver
}

/// What cpu-par may be expected to take ([`par::estimate`]) for a frame that it filters while
/// a CUDA context comes up (~0.2 s): half of that, so that the GPU seldom waits for it.
const CPU_BEFORE_CONTEXT: Duration = Duration::from_millis(100);

/// What cpu-par may be expected to take for one image that it filters instead of the GPU: a
/// context costs 0.3 s (0.2 to come up, 0.1 to take down at exit; on an H100 host a 1080p
/// image took 0.32–0.37 s through the GPU, 0.04–0.05 s on cpu-par, decoding and encoding
/// included).
const IMAGE_ON_CPU_WITHIN: Duration = Duration::from_millis(250);

/// With `auto` and no flag that asks for the GPU (`--gpu-only`, a named `--variant`, `--sync`,
/// `--devices`, `--device`, `--block`, `--pageable`) nor `--segment`: when the input is one
/// still image of `still` samples that cpu-par is expected to filter within
/// [`IMAGE_ON_CPU_WITHIN`], that expectation. Such an image runs on cpu-par and no CUDA
/// context is made: the opening lane would filter it alone, and the command would still wait
/// for the context and take it down (~0.3 s in all on an H100 host). `driver`: whether a CUDA
/// driver is installed (else `auto` is cpu-par anyway).
pub(super) fn image_on_cpu(
    a: &FilterArgs,
    plan: &Plan,
    still: Option<usize>,
    driver: bool,
) -> Option<Duration> {
    let g = &a.gpu;
    let gpu_asked = !g.variant_is_auto()
        || g.sync
        || g.devices.is_some()
        || g.device != 0
        || g.block.is_some()
        || g.pageable
        || a.gpu_only;
    if a.backend != BackendKind::Auto || gpu_asked || a.segment.is_some() || !driver {
        return None;
    }
    let t = par::estimate(plan, still?, a.threads);
    (t <= IMAGE_ON_CPU_WITHIN).then_some(t)
}

/// The samples of `input` when it is one still image whose header reads.
pub(super) fn still_samples(input: &Path) -> Option<usize> {
    if !io::is_still(input) {
        return None;
    }
    let (w, h, channels) = io::still::header(input)?;
    Some(w * h * channels)
}

/// The backends being made on a thread of their own, beside opening the input (a CUDA context
/// takes ~200 ms).
pub(super) struct MakeBackends {
    /// Joined by [`MakeBackends::finish_checked`], or on drop (an error before it): the process
    /// does not end with a thread inside the CUDA driver.
    pub(super) thread: Option<std::thread::JoinHandle<Result<MadeBackends>>>,
    /// Whether a device backend is being tried (`cuda`, or `auto`).
    pub(super) device: bool,
}

impl Drop for MakeBackends {
    fn drop(&mut self) {
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// What [`MakeBackends`] made.
pub(super) struct MadeBackends {
    pub(super) backends: Vec<Box<dyn convflow::Backend>>,
    /// The GPUs of the lanes (one entry, unused, for a CPU backend).
    pub(super) devices: Vec<usize>,
    /// A CPU backend runs (asked for, or `auto` without a GPU).
    pub(super) on_cpu: bool,
    /// How long making them took …
    pub(super) took: std::time::Duration,
    /// … and when they were there.
    pub(super) done: Instant,
}

impl MakeBackends {
    /// Starts making the backends `a` asks for; a bad `--devices` list is an error now.
    pub(super) fn start(
        a: &FilterArgs,
        kind: BackendKind,
        schedule: &backend::Schedule,
    ) -> Result<MakeBackends> {
        let listed = match (kind, a.gpu.device_list()) {
            (BackendKind::Cuda, r) => Some(r.with_context(|| format!("backend {kind}"))?),
            (BackendKind::Auto, Ok(d)) => Some(d),
            _ => None,
        };
        let device = listed.is_some();
        let (one, schedule) = (a.gpu.device, schedule.clone());
        let thread = std::thread::Builder::new()
            .name("convflow-backend".into())
            .spawn(move || {
                let t = Instant::now();
                // CPU backends have no devices, and auto without a GPU is cpu-par: one lane.
                let (devices, on_cpu) = match listed {
                    Some(d) => {
                        let cpu = kind == BackendKind::Auto && backend::device_count() == 0;
                        (d, cpu)
                    }
                    None => (vec![one], true),
                };
                let backends = backend::create_on(kind, &schedule, &devices)
                    .with_context(|| format!("backend {kind}"))?;
                Ok(MadeBackends {
                    backends,
                    devices,
                    on_cpu,
                    took: t.elapsed(),
                    done: Instant::now(),
                })
            })
            .context("starting a thread to make the backend")?;
        Ok(MakeBackends {
            thread: Some(thread),
            device,
        })
    }

    /// Whether the backends are made (or failed to be).
    pub(super) fn is_done(&self) -> bool {
        self.thread.as_ref().is_none_or(|t| t.is_finished())
    }

    /// Waits for the backends and checks that the first can run `plan` (a usage error),
    /// with a note in `notes` when `--devices` has no GPUs to go to.
    pub(super) fn finish_checked(
        mut self,
        a: &FilterArgs,
        plan: &convflow::filter::Plan,
        notes: &mut Vec<String>,
    ) -> Result<MadeBackends> {
        let thread = self.thread.take().expect("joined once");
        let made = thread
            .join()
            .unwrap_or_else(|_| bail!("making the backend panicked"))?;
        let first = &made.backends[0];
        if !a.passthrough {
            first.check_plan(plan).map_err(usage)?;
        }
        if a.gpu.devices.is_some() && (made.on_cpu || made.backends.len() < made.devices.len()) {
            notes.push(format!(
                "--devices is for CUDA: {} runs on the CPU",
                first.name()
            ));
        }
        Ok(made)
    }
}

#[cfg(test)]
mod tests;
