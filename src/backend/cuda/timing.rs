//! Timing on the device: the events that split a frame into upload, kernels and download (the
//! report's transfer-vs-kernel split), and the benchmark measurements of [`Measure`]: kernel-only
//! times (each batch of passes queued whole behind a stream hold, then run back to back over
//! frame copies that do not fit the L2 cache together), the device's copy and FMA ceilings, and
//! the host↔device link.

use std::sync::Arc;
use std::time::Duration;

use cudarc::driver::{sys, CudaEvent, CudaFunction, CudaSlice, CudaStream, LaunchConfig};

use super::abi::launch;
use super::abi::DEVICE_SLACK;
use super::memory::ptr;
use super::registry::ModuleKey;
use super::{offload, raw, CudaBackend, CudaError, DEVICE_DEPTH, EVENTS_PER_SLOT, SLOT_EVENTS};
use crate::backend::{
    check_shapes, BackendError, DeviceClock, KernelTimes, LinkBandwidth, Measure,
};
use crate::filter::Plan;
use crate::frame::Frame;

/// Passes per timed event pair in [`Measure::kernel_times`].
const TIMED_BATCH: usize = 10;
/// How long the stream hold waits for the host to queue a batch before it lets the stream go
/// anyway (a backend path that waits for its own kernels inside a pass, as the texture variant
/// does, can never be queued whole; its batches are then host-paced).
const HOLD_TIMEOUT_NS: u64 = 50_000_000;
/// The timed passes rotate through copies of the frame (source and destination) that together
/// hold at least this many times the device's L2 cache, so each pass reads its input from
/// device memory, as the floor assumes, and not from the cache the pass before left it in …
const ROTATE_L2_TIMES: usize = 2;
/// … with at most this many copies (frames under 0.2 MB, in and out, fit the cache even so), and
/// at most a quarter of the free device memory.
const ROTATE_MAX: usize = 256;

/// `CONVFLOW_BENCH_PACED=1`: [`Measure::kernel_times`] as it was before the hold, for
/// comparisons: one copy of the frame, batches queued while they run ([`DeviceClock::HostPaced`]).
fn paced() -> bool {
    std::env::var_os("CONVFLOW_BENCH_PACED").is_some_and(|v| v == "1")
}

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
        let fma = self.attrs.fma_per_s.ok_or_else(|| {
            CudaError::Unsupported(
                "the driver does not give the device's SM count and clock".into(),
            )
        })?;
        Ok((bw, fma))
    }
}

/// The stream hold of [`Measure::kernel_times`]: kernels/hold.cu's one thread spins on the
/// timed stream until the host, once the batch is queued, writes the batch's ticket into a gate
/// word of mapped host memory (no stream between: a second stream could share the timed one's
/// hardware queue and wait behind it); a batch queued whole runs back to back on the device.
struct Hold {
    f: CudaFunction,
    /// Word 0: the last ticket released; word 1: the last ticket that timed out.
    gate: raw::MappedWords,
    ticket: u32,
    /// The stream it holds.
    stream: Arc<CudaStream>,
}

impl Hold {
    fn new(b: &mut CudaBackend) -> Result<Hold, CudaError> {
        let f = b.registry.function(&ModuleKey::Hold, "convflow_hold")?;
        let gate = raw::MappedWords::new(&b.ctx, 2)
            .map_err(|e| CudaError::driver("making the stream hold", e))?;
        Ok(Hold {
            f,
            gate,
            ticket: 0,
            stream: b.stream.clone(),
        })
    }

    /// Holds the stream until [`Hold::release`].
    fn hold(&mut self) -> Result<(), CudaError> {
        self.ticket += 1;
        let one = LaunchConfig {
            grid_dim: (1, 1, 1),
            block_dim: (1, 1, 1),
            shared_mem_bytes: 0,
        };
        let gate = self.gate.device();
        launch::hold(
            &self.stream,
            &self.f,
            one,
            gate,
            self.ticket,
            HOLD_TIMEOUT_NS,
        )
    }

    /// Lets the held stream go.
    fn release(&self) {
        self.gate.set(0, self.ticket);
    }

    /// Whether the last hold timed out before its release (read once its stream is done).
    fn timed_out(&self) -> bool {
        self.gate.get(1) == self.ticket
    }
}

impl Drop for Hold {
    /// Lets any hold go and waits for the stream, so no kernel reads the gate once it is freed
    /// (a failed pass returns between a hold and its release).
    fn drop(&mut self) {
        self.gate.set(0, u32::MAX);
        let _ = self.stream.synchronize();
    }
}

/// Copies of the frame's device buffers for the timed passes to rotate through: `(source,
/// destination)` device addresses, the backend's own buffers first.
struct Rotation {
    sets: Vec<(u64, u64)>,
    _copies: Vec<(CudaSlice<u8>, CudaSlice<u8>)>,
}

impl Rotation {
    /// Copies of the frame just uploaded (`src_len` and `dst_len` bytes in the device layout: the
    /// backend's buffers may be larger, from earlier frames) enough for the cache to hold no
    /// pass's input, or the backend's buffers alone (`one`).
    fn new(
        b: &CudaBackend,
        src_len: usize,
        dst_len: usize,
        one: bool,
    ) -> Result<Rotation, CudaError> {
        let (src, dst) = (
            b.d_src.as_ref().expect("uploaded"),
            b.d_dst.as_ref().expect("uploaded"),
        );
        let err = |e| CudaError::driver("copying the frame for the timed passes", e);
        let l2 = b.attrs.l2_bytes;
        let (free, _) = b.ctx.mem_get_info().map_err(err)?;
        let pair = src_len + dst_len + 2 * DEVICE_SLACK;
        let copies = (if one { 0 } else { ROTATE_L2_TIMES * l2 })
            .div_ceil(pair)
            .min(ROTATE_MAX)
            .min(free / 4 / pair)
            .max(1);
        let mut sets = vec![(ptr(src, &b.stream), ptr(dst, &b.stream))];
        let mut kept = Vec::new();
        for _ in 1..copies {
            // Kernels may read a few bytes past a frame (DEVICE_SLACK), as from the backend's.
            let mut s = b
                .stream
                .alloc_zeros::<u8>(src_len + DEVICE_SLACK)
                .map_err(err)?;
            let d = b
                .stream
                .alloc_zeros::<u8>(dst_len + DEVICE_SLACK)
                .map_err(err)?;
            b.stream
                .memcpy_dtod(&src.slice(..src_len), &mut s.slice_mut(..src_len))
                .map_err(err)?;
            sets.push((ptr(&s, &b.stream), ptr(&d, &b.stream)));
            kept.push((s, d));
        }
        Ok(Rotation {
            sets,
            _copies: kept,
        })
    }
}

impl Measure for CudaBackend {
    /// Kernel-only times: the frame is uploaded once and copied until the copies hold twice the
    /// L2 cache; each run then queues `TIMED_BATCH` (10) passes (1 once a pass takes over a
    /// millisecond) over every plane, each pass on the next copy, between two CUDA events behind
    /// a stream hold, releases the hold and reports the mean pass. The batch runs back to back
    /// on the device, so neither the host's launch cost nor a pass's input left in the cache by
    /// the pass before shows in the time ([`DeviceClock::Held`]); where a pass waits for its
    /// own kernels, the hold times out and the batch is host-paced
    /// ([`DeviceClock::HostPaced`]).
    fn kernel_times(
        &mut self,
        plan: &Plan,
        src: &Frame,
        dst: &mut Frame,
        warmup: usize,
        runs: usize,
        budget: f64,
    ) -> Result<KernelTimes, BackendError> {
        use crate::backend::Backend;
        check_shapes(src, dst)?;
        self.check_plan(plan)?;
        let (s, d) = self.upload(src, dst)?;
        let paced = paced();
        let rotation = Rotation::new(self, s.len, d.len, paced)?;
        let mut next = 0;
        let mut pass = |b: &mut CudaBackend| {
            let (src, dst) = rotation.sets[next % rotation.sets.len()];
            next += 1;
            b.run_planes_at(plan, &s, &d, src, dst)
        };
        for _ in 0..warmup {
            pass(self)?;
        }
        let mut hold = if paced { None } else { Some(Hold::new(self)?) };
        let (start, end) = (event(&self.ctx, true)?, event(&self.ctx, true)?);
        let err = |e| CudaError::driver("timing the kernels", e);
        let mut times = Vec::with_capacity(runs);
        let mut clock = if paced {
            DeviceClock::HostPaced
        } else {
            DeviceClock::Held
        };
        let mut spent = 0.0;
        let mut batch = TIMED_BATCH;
        while times.len() < runs.max(1) && (times.is_empty() || spent < budget) {
            if let Some(h) = &mut hold {
                h.hold()?;
            }
            start.record(&self.stream).map_err(err)?;
            for _ in 0..batch {
                pass(self)?;
            }
            end.record(&self.stream).map_err(err)?;
            if let Some(h) = &hold {
                h.release();
            }
            end.synchronize().map_err(err)?;
            if hold.as_ref().is_some_and(Hold::timed_out) {
                // A pass that waits for its own kernels: the next batches would wait out the
                // timeout too, and be host-paced all the same.
                clock = DeviceClock::HostPaced;
                hold = None;
            }
            let ms = start.elapsed_ms(&end).map_err(err)? as f64;
            times.push(ms / 1e3 / batch as f64);
            spent += ms / 1e3;
            // Passes long enough to hide launch overhead on their own need no batching.
            if ms / batch as f64 > 1.0 {
                batch = 1;
            }
        }
        self.download_then(dst, &d, |_| Ok(()))?;
        Ok(KernelTimes { times, clock })
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
