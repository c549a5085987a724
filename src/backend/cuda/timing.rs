//! Timing on the device: the events that split a frame into upload, kernels and download (the
//! report's transfer-vs-kernel split), and the benchmark measurements of [`Measure`]: kernel-only
//! times, the device's copy and FMA ceilings, and the host↔device link.

use std::time::Duration;

use cudarc::driver::{sys, CudaEvent};

use super::{offload, CudaBackend, CudaError, DEVICE_DEPTH, EVENTS_PER_SLOT, SLOT_EVENTS};
use crate::backend::{check_shapes, BackendError, LinkBandwidth, Measure};
use crate::filter::Plan;
use crate::frame::Frame;

/// Passes per timed event pair in [`Measure::kernel_times`].
const TIMED_BATCH: usize = 10;

/// A new event: a timing event, or one without timing, which costs its stream less and only
/// tells when the work before it is done.
pub(super) fn event(
    ctx: &std::sync::Arc<cudarc::driver::CudaContext>,
    timing: bool,
) -> Result<CudaEvent, CudaError> {
    let flags = if timing {
        sys::CUevent_flags::CU_EVENT_DEFAULT
    } else {
        sys::CUevent_flags::CU_EVENT_DISABLE_TIMING
    };
    ctx.new_event(Some(flags))
        .map_err(|e| CudaError::driver("creating events", e))
}

/// The environment variable `name` as a count, else `default`; kept within 1 ..= `most`.
pub(super) fn env_count(name: &str, default: usize, most: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(default)
        .clamp(1, most)
}

/// Which of a stream's works (copies, frames' kernels) are timed between a pair of timing
/// events: one in `every`, starting with the first. Timing events around every small copy cost
/// it a quarter of its speed (docs/PERFORMANCE.md, tenth round); the others end with one event
/// without timing.
pub(super) struct Sampler {
    every: usize,
    started: usize,
}

impl Sampler {
    /// One in `default` timed, or one in the environment variable `name`'s (1: every one).
    pub(super) fn from_env(name: &str, default: usize) -> Sampler {
        Sampler {
            every: env_count(name, default, 1 << 16),
            started: 0,
        }
    }

    /// Whether the next work is timed.
    pub(super) fn next(&mut self) -> bool {
        let timed = self.started.is_multiple_of(self.every);
        self.started += 1;
        timed
    }
}

impl CudaBackend {
    /// The events (created once): a frame's five timing events, then three per in-flight slot
    /// (`slot_event`: start and end timing events, and an untimed end).
    pub(super) fn events(&mut self) -> Result<&[CudaEvent], CudaError> {
        if self.events.is_none() {
            let n = SLOT_EVENTS + EVENTS_PER_SLOT * DEVICE_DEPTH;
            let timing = |i: usize| {
                !matches!(i.checked_sub(SLOT_EVENTS),
                Some(j) if j % EVENTS_PER_SLOT == 2)
            };
            let make = |i: usize| event(&self.ctx, timing(i));
            self.events = Some((0..n).map(make).collect::<Result<_, _>>()?);
        }
        Ok(self.events.as_deref().expect("created"))
    }

    pub(super) fn record(&mut self, i: usize) -> Result<(), CudaError> {
        let stream = self.stream.clone();
        self.events()?[i]
            .record(&stream)
            .map_err(|e| CudaError::driver("recording an event", e))
    }

    /// Device time between events `a` and `b` (both complete).
    pub(super) fn between(&self, a: usize, b: usize) -> Duration {
        let ev = self.events.as_ref().expect("events recorded");
        let ms = ev[a].elapsed_ms(&ev[b]).unwrap_or(0.0).max(0.0) as f64;
        Duration::from_secs_f64(ms / 1e3)
    }

    /// Device copy bandwidth (median of 10 copies of 1 GiB, read + written bytes counted) and
    /// the fp32 FMA rate from SM count × 128 lanes × clock.
    fn measure_ceilings(&mut self) -> Result<(f64, f64), CudaError> {
        let n = 1usize << 30;
        let err = |e| CudaError::driver("measuring the copy ceiling", e);
        let a = self.stream.alloc_zeros::<u8>(n).map_err(err)?;
        let mut b = self.stream.alloc_zeros::<u8>(n).map_err(err)?;
        let (start, end) = (event(&self.ctx, true)?, event(&self.ctx, true)?);
        let mut times = Vec::new();
        for i in 0..12 {
            start.record(&self.stream).map_err(err)?;
            self.stream.memcpy_dtod(&a, &mut b).map_err(err)?;
            end.record(&self.stream).map_err(err)?;
            end.synchronize().map_err(err)?;
            if i >= 2 {
                times.push(start.elapsed_ms(&end).map_err(err)? as f64 / 1e3);
            }
        }
        let bw = 2.0 * n as f64 / crate::stats::median(times);
        use sys::CUdevice_attribute_enum as A;
        let attr = |a| {
            self.ctx
                .attribute(a)
                .map_err(|e| CudaError::driver("reading device attributes", e))
        };
        let sms = attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as f64;
        let khz = attr(A::CU_DEVICE_ATTRIBUTE_CLOCK_RATE)? as f64;
        Ok((bw, sms * 128.0 * khz * 1e3))
    }
}

impl Measure for CudaBackend {
    /// Kernel-only times: the frame is uploaded once, then each run brackets `TIMED_BATCH` (10)
    /// (1 once a pass takes over a millisecond) back-to-back passes over every plane with CUDA
    /// events and reports the mean pass. Batching keeps the GPU busy while the host enqueues
    /// the next launches, so host-side launch overhead does not show up as idle GPU time.
    fn kernel_times(
        &mut self,
        plan: &Plan,
        src: &Frame,
        dst: &mut Frame,
        warmup: usize,
        runs: usize,
        budget: f64,
    ) -> Result<Vec<f64>, BackendError> {
        use crate::backend::Backend;
        check_shapes(src, dst)?;
        self.check_plan(plan)?;
        let (s, d) = self.upload(src, dst)?;
        let d_src = super::memory::ptr(self.d_src.as_ref().expect("uploaded"), &self.stream);
        let d_dst = super::memory::ptr(self.d_dst.as_ref().expect("uploaded"), &self.stream);
        for _ in 0..warmup {
            self.run_planes_at(plan, &s, &d, d_src, d_dst)?;
        }
        let (start, end) = (event(&self.ctx, true)?, event(&self.ctx, true)?);
        let err = |e| CudaError::driver("timing the kernels", e);
        let mut times = Vec::with_capacity(runs);
        let mut spent = 0.0;
        let mut batch = TIMED_BATCH;
        while times.len() < runs.max(1) && (times.is_empty() || spent < budget) {
            start.record(&self.stream).map_err(err)?;
            for _ in 0..batch {
                self.run_planes_at(plan, &s, &d, d_src, d_dst)?;
            }
            end.record(&self.stream).map_err(err)?;
            end.synchronize().map_err(err)?;
            let ms = start.elapsed_ms(&end).map_err(err)? as f64;
            times.push(ms / 1e3 / batch as f64);
            spent += ms / 1e3;
            // Passes long enough to hide launch overhead on their own need no batching.
            if ms / batch as f64 > 1.0 {
                batch = 1;
            }
        }
        self.download_then(dst, &d, |_| Ok(()))?;
        Ok(times)
    }

    fn ceilings(&mut self) -> Result<(f64, f64), BackendError> {
        if self.ceilings.is_none() {
            self.ceilings = Some(self.measure_ceilings()?);
        }
        Ok(self.ceilings.expect("measured"))
    }

    fn link_bandwidth(&mut self, bytes: usize, reps: usize) -> Result<LinkBandwidth, BackendError> {
        let off = offload::CudaOffload::new(self.ctx.clone(), self.pageable);
        Ok(offload::link_bandwidth(&off, bytes, reps)?)
    }
}

#[cfg(test)]
mod tests {
    use super::Sampler;

    #[test]
    fn the_sampler_times_the_first_work_then_one_in_every() {
        let mut s = Sampler {
            every: 3,
            started: 0,
        };
        let timed: Vec<bool> = (0..7).map(|_| s.next()).collect();
        assert_eq!(timed, [true, false, false, true, false, false, true]);
        let mut every = Sampler {
            every: 1,
            started: 0,
        };
        assert!((0..4).all(|_| every.next()));
    }
}
