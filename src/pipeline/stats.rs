//! What a run did: per-stage totals, latencies, the transfer-vs-kernel split, and the report
//! model ([`Report`]) that `--report FILE.json` serializes.

use std::time::Duration;

use hdrhistogram::Histogram;
use serde::Serialize;

use crate::device::DeviceTimes;

pub(super) fn histogram() -> Histogram<u64> {
    Histogram::<u64>::new_with_bounds(1, 24 * 3600 * 1_000_000, 3).expect("valid bounds")
}

/// One stage's totals.
#[derive(Clone, Debug)]
pub struct StageStats {
    /// `read`, `upload`, `filter`, `download` or `write`.
    pub name: &'static str,
    /// Frames this stage handled.
    pub frames: usize,
    /// Time spent working (not waiting on channels or for free buffers).
    pub busy: Duration,
    /// Bytes of frame data handled.
    pub bytes: u64,
    /// Device time of this stage's timed work (CUDA events): copies for upload/download,
    /// kernels for filter. Zero where not measured. [`StageStats::device_total`] estimates
    /// every frame's from it.
    pub device: Duration,
    /// Frames whose device time `device` sums: all of them, but for copy queues that time a
    /// sample of their copies …
    pub timed: usize,
    /// … and frames whose work ran untimed (frames without work, such as frames already on
    /// the device at the upload, are neither).
    pub untimed: usize,
    /// Per-frame busy time in µs.
    pub per_frame: Histogram<u64>,
    /// Upload / kernel / download device times inside this stage (a filter stage that runs the
    /// transfers itself: `--sync`), when `measured`.
    pub split: DeviceTimes,
    /// The backend reported device times for this stage's frames (`split` is meaningful).
    pub measured: bool,
    /// How many lanes' stages of this name these totals sum (1 but for a stage that runs once
    /// per device): busy time divided by it is the time the stage took.
    pub lanes: usize,
}

impl StageStats {
    pub(super) fn new(name: &'static str) -> Self {
        StageStats {
            name,
            frames: 0,
            busy: Duration::ZERO,
            bytes: 0,
            device: Duration::ZERO,
            timed: 0,
            untimed: 0,
            per_frame: histogram(),
            split: DeviceTimes::default(),
            measured: false,
            lanes: 1,
        }
    }

    /// Adds another lane's stage of the same name.
    pub(super) fn merge(&mut self, other: &StageStats) {
        self.frames += other.frames;
        self.busy += other.busy;
        self.bytes += other.bytes;
        self.device += other.device;
        self.timed += other.timed;
        self.untimed += other.untimed;
        let _ = self.per_frame.add(&other.per_frame);
        self.split.h2d += other.split.h2d;
        self.split.kernel += other.split.kernel;
        self.split.d2h += other.split.d2h;
        self.measured |= other.measured;
        self.lanes += other.lanes;
    }

    /// Busy time per lane: the wall time this stage needed, its lanes working side by side.
    pub fn busy_per_lane(&self) -> Duration {
        self.busy / self.lanes.max(1) as u32
    }

    /// Records one frame's device work: its time when it was timed.
    pub(super) fn timed(&mut self, device: Option<Duration>) {
        match device {
            Some(d) => {
                self.device += d;
                self.timed += 1;
            }
            None => self.untimed += 1,
        }
    }

    /// The device time of all the frames that had device work: the timed frames' mean times
    /// their number (exact when every one was timed; zero when none was).
    pub fn device_total(&self) -> Duration {
        match (self.timed, self.untimed) {
            (0, _) => Duration::ZERO,
            (_, 0) => self.device,
            (t, u) => self.device.mul_f64((t + u) as f64 / t as f64),
        }
    }

    pub(super) fn add(&mut self, busy: Duration, bytes: usize) {
        self.frames += 1;
        self.busy += busy;
        self.bytes += bytes as u64;
        let _ = self.per_frame.record(busy.as_micros().max(1) as u64);
    }
}

/// What one lane (one device's backend and stages) did in a run.
#[derive(Clone, Debug)]
pub struct LaneStats {
    /// The lane's backend, by name (it says which device).
    pub backend: String,
    /// Frames this lane filtered.
    pub frames: usize,
    /// Its stages: upload, filter, download (filter alone for a host backend).
    pub stages: Vec<StageStats>,
    /// Its device times, when measured.
    pub device: Option<DeviceTimes>,
    /// It filtered the run's first frames while the other lanes were being made
    /// ([`crate::pipeline::open`]).
    pub opening: bool,
}

impl LaneStats {
    /// The lane's stage with the most busy time.
    pub fn bottleneck(&self) -> Option<&StageStats> {
        self.stages.iter().max_by_key(|s| s.busy)
    }
}

/// What a run did, for the report.
#[derive(Clone, Debug)]
pub struct RunStats {
    /// The backend's name at the end of the run (it says what actually ran).
    pub backend: String,
    /// Frames read and written.
    pub frames: usize,
    /// Frames the source reported bad and `skip_bad` skipped, with the first few messages.
    pub skipped: usize,
    /// The messages of the first 10 skipped frames.
    pub skip_messages: Vec<String>,
    /// Pixels read (frame width × height, summed over frames), in millions.
    pub megapixels: f64,
    /// Wall time of the whole run.
    pub wall: Duration,
    /// In order: read, upload, filter, download, write (upload and download only when the
    /// transfers run in stages of their own).
    pub stages: Vec<StageStats>,
    /// Per-frame latency from the start of its read to the end of its write, in µs.
    pub latency: Histogram<u64>,
    /// Every frame was compared with cpu-seq's output (`--check`).
    pub checked: bool,
    /// Reading stopped early because `stop` was raised (Ctrl-C).
    pub interrupted: bool,
    /// Device times summed over all frames, when the backend measures them.
    pub device: Option<DeviceTimes>,
    /// Transfers ran in their own stages (overlapped), not inside the filter stage.
    pub overlapped: bool,
    /// Frames written after the warm-up (the first `4·inflight + 4` writes, which include
    /// allocating the buffer pools) and the time they took: the sustained rate.
    pub steady: Option<(usize, Duration)>,
    /// From the start of the run to the first frame written (kernel modules loaded and buffers
    /// allocated on the way).
    pub first_frame: Option<Duration>,
    /// One entry per lane (device) in the order the backends were given; `stages` sums them.
    pub lanes: Vec<LaneStats>,
    /// The most frames the write stage held at once, waiting for an earlier one from a slower
    /// lane (at most the lanes' output buffers; 1 with one lane).
    pub held_max: usize,
}

impl RunStats {
    /// Frames per second after the warm-up, when the run was long enough to have one.
    pub fn steady_fps(&self) -> Option<f64> {
        self.steady
            .map(|(n, t)| n as f64 / t.as_secs_f64().max(1e-9))
    }

    /// The stage called `name`, if the run had one.
    pub fn stage(&self, name: &str) -> Option<&StageStats> {
        self.stages.iter().find(|s| s.name == name)
    }

    /// The stage with the most busy time (per lane, for stages that run once per device).
    pub fn bottleneck(&self) -> &StageStats {
        self.stages
            .iter()
            .max_by_key(|s| s.busy_per_lane())
            .expect("at least three stages")
    }

    /// Sum of stage busy times (per lane) over wall time: 1 when nothing overlaps, up to the
    /// number of stages when all of them are busy all the time.
    pub fn overlap(&self) -> f64 {
        let busy: f64 = self
            .stages
            .iter()
            .map(|s| s.busy_per_lane().as_secs_f64())
            .sum();
        busy / self.wall.as_secs_f64().max(1e-9)
    }

    /// Frames the lanes with device times filtered: what [`RunStats::device`] is spread over.
    pub fn device_frames(&self) -> usize {
        self.lanes
            .iter()
            .filter(|l| l.device.is_some())
            .map(|l| l.frames)
            .sum()
    }

    /// The frames filtered by the lane that opened the run ([`crate::pipeline::open`]), if
    /// one did.
    pub fn opening(&self) -> Option<&LaneStats> {
        self.lanes.iter().find(|l| l.opening)
    }

    /// This run's statistics going on from `first`, an opening lane's run into the same
    /// output that ended `between` before this one started. Times count from the start of
    /// `first`. Frame counts, latencies and the read and write stages (the same source and
    /// output) add up; the stages between them stay this run's lanes' (the opening lane's
    /// filter is in its own entry, first among the lanes); device times and the sustained rate
    /// are this run's.
    pub(super) fn after(mut self, first: RunStats, between: Duration) -> RunStats {
        let before = first.wall + between;
        if first.frames == 0 && first.skipped == 0 {
            // The lanes were made before the opening lane read a frame.
            self.first_frame = self.first_frame.map(|t| before + t);
            self.wall += before;
            return self;
        }
        let mut stages = self.stages;
        for st in stages
            .iter_mut()
            .filter(|s| matches!(s.name, "read" | "write"))
        {
            if let Some(f) = first.stages.iter().find(|f| f.name == st.name) {
                st.frames += f.frames;
                st.busy += f.busy;
                st.bytes += f.bytes;
                let _ = st.per_frame.add(&f.per_frame);
            }
        }
        let mut latency = first.latency;
        let _ = latency.add(&self.latency);
        let mut skip_messages = first.skip_messages;
        skip_messages.extend(self.skip_messages);
        skip_messages.truncate(10);
        let first_frame = match first.first_frame {
            Some(t) => Some(t),
            None => self.first_frame.map(|t| before + t),
        };
        let mut lanes = first.lanes;
        lanes.extend(self.lanes);
        RunStats {
            backend: format!(
                "{}, after {} frame(s) on {}",
                self.backend, first.frames, first.backend
            ),
            frames: first.frames + self.frames,
            skipped: first.skipped + self.skipped,
            skip_messages,
            megapixels: first.megapixels + self.megapixels,
            wall: before + self.wall,
            stages,
            latency,
            checked: first.checked && self.checked,
            interrupted: first.interrupted || self.interrupted,
            device: self.device,
            overlapped: self.overlapped,
            steady: self.steady,
            first_frame,
            lanes,
            held_max: first.held_max.max(self.held_max),
        }
    }

    /// The serializable report of this run.
    pub fn report(&self) -> Report {
        let wall = self.wall.as_secs_f64();
        Report {
            frames: self.frames,
            skipped: self.skipped,
            skip_messages: self.skip_messages.clone(),
            megapixels: self.megapixels,
            wall_s: wall,
            fps: self.frames as f64 / wall.max(1e-9),
            steady_fps: self.steady_fps(),
            first_frame_s: self.first_frame.map(|d| d.as_secs_f64()),
            interrupted: self.interrupted,
            checked_against_cpu_seq: self.checked,
            bottleneck: self.bottleneck().name,
            overlapped_transfers: self.overlapped,
            overlap_efficiency: self.overlap(),
            stages: self
                .stages
                .iter()
                .map(|s| StageReport::of(s, wall))
                .collect(),
            lanes: self
                .lanes
                .iter()
                .map(|l| LaneReport {
                    backend: l.backend.clone(),
                    frames: l.frames,
                    fps: l.frames as f64 / wall.max(1e-9),
                    bottleneck: l.bottleneck().map_or("", |s| s.name),
                    stages: l.stages.iter().map(|s| StageReport::of(s, wall)).collect(),
                    device: l.device.map(|d| DeviceReport::of(d, l.frames)),
                    opening: l.opening,
                })
                .collect(),
            reorder_held_max: self.held_max,
            latency_us: Percentiles::of(&self.latency),
            device: self
                .device
                .map(|d| DeviceReport::of(d, self.device_frames())),
        }
    }
}

/// Latency percentiles in µs.
#[derive(Clone, Debug, Serialize)]
pub struct Percentiles {
    /// Median.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 99th percentile.
    pub p99: u64,
    /// Largest value recorded.
    pub max: u64,
}

impl Percentiles {
    fn of(h: &Histogram<u64>) -> Self {
        Percentiles {
            p50: h.value_at_quantile(0.5),
            p90: h.value_at_quantile(0.9),
            p99: h.value_at_quantile(0.99),
            max: h.max(),
        }
    }
}

/// One stage in the report.
#[derive(Clone, Debug, Serialize)]
pub struct StageReport {
    /// The stage's name (`read`, `upload`, `filter`, `download`, `write`).
    pub name: &'static str,
    /// Frames it handled.
    pub frames: usize,
    /// Seconds spent working, waits excluded.
    pub busy_s: f64,
    /// Frames per busy second (per lane): the rate this stage alone could sustain.
    pub fps: f64,
    /// Megabytes (10⁶) of frame data per busy second.
    pub mb_per_s: f64,
    /// Busy time over the run's wall time (0…1).
    pub utilisation: f64,
    /// Device seconds of its work (0 where not measured).
    pub device_s: f64,
    /// Percentiles of its per-frame busy time.
    pub latency_us: Percentiles,
}

impl StageReport {
    fn of(s: &StageStats, wall: f64) -> Self {
        let busy = s.busy.as_secs_f64();
        let per_lane = s.busy_per_lane().as_secs_f64();
        StageReport {
            name: s.name,
            frames: s.frames,
            busy_s: busy,
            fps: s.frames as f64 / per_lane.max(1e-9),
            mb_per_s: s.bytes as f64 / per_lane.max(1e-9) / 1e6,
            utilisation: per_lane / wall.max(1e-9),
            device_s: s.device_total().as_secs_f64(),
            latency_us: Percentiles::of(&s.per_frame),
        }
    }
}

/// One lane (device) in the report.
#[derive(Clone, Debug, Serialize)]
pub struct LaneReport {
    /// The lane's backend (which device).
    pub backend: String,
    /// Frames it filtered.
    pub frames: usize,
    /// Its frames over the run's wall time.
    pub fps: f64,
    /// Its stage with the most busy time.
    pub bottleneck: &'static str,
    /// Its stages.
    pub stages: Vec<StageReport>,
    /// Its device times, when measured.
    pub device: Option<DeviceReport>,
    /// It filtered the run's first frames (on the CPU) while the other lanes were being made.
    pub opening: bool,
}

/// Device time per frame, µs.
#[derive(Clone, Debug, Serialize)]
pub struct DeviceSplit {
    /// Host-to-device copy.
    pub h2d: f64,
    /// Filter kernels.
    pub kernel: f64,
    /// Device-to-host copy.
    pub d2h: f64,
}

/// Device times of the run.
#[derive(Clone, Debug, Serialize)]
pub struct DeviceReport {
    /// Host-to-device copies, seconds in total.
    pub h2d_s: f64,
    /// Filter kernels, seconds in total.
    pub kernel_s: f64,
    /// Device-to-host copies, seconds in total.
    pub d2h_s: f64,
    /// The same times per frame.
    pub per_frame_us: DeviceSplit,
}

impl DeviceReport {
    fn of(d: DeviceTimes, frames: usize) -> Self {
        let n = frames.max(1) as f64;
        DeviceReport {
            h2d_s: d.h2d.as_secs_f64(),
            kernel_s: d.kernel.as_secs_f64(),
            d2h_s: d.d2h.as_secs_f64(),
            per_frame_us: DeviceSplit {
                h2d: d.h2d.as_secs_f64() * 1e6 / n,
                kernel: d.kernel.as_secs_f64() * 1e6 / n,
                d2h: d.d2h.as_secs_f64() * 1e6 / n,
            },
        }
    }
}

/// The run report (`--report FILE.json`; the CLI adds what was run to it).
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// Frames read and written.
    pub frames: usize,
    /// Bad frames skipped.
    pub skipped: usize,
    /// The messages of the first 10 skipped frames.
    pub skip_messages: Vec<String>,
    /// Pixels read, in millions.
    pub megapixels: f64,
    /// Wall time of the run, seconds.
    pub wall_s: f64,
    /// Frames over wall time, warm-up included.
    pub fps: f64,
    /// Frames per second after the warm-up ([`RunStats::steady_fps`]).
    pub steady_fps: Option<f64>,
    /// Seconds from the start of the run to the first frame written.
    pub first_frame_s: Option<f64>,
    /// Reading stopped early on a stop request (Ctrl-C).
    pub interrupted: bool,
    /// Every frame was compared with cpu-seq's output (`--check`).
    pub checked_against_cpu_seq: bool,
    /// Name of the stage with the most busy time.
    pub bottleneck: &'static str,
    /// Transfers ran in their own stages.
    pub overlapped_transfers: bool,
    /// [`RunStats::overlap`]: summed stage busy time over wall time.
    pub overlap_efficiency: f64,
    /// One entry per stage, in pipeline order (a stage of every lane summed: its fps and
    /// utilisation are per lane).
    pub stages: Vec<StageReport>,
    /// One entry per lane (device), in the order given.
    pub lanes: Vec<LaneReport>,
    /// The most frames the write stage held waiting for an earlier one.
    pub reorder_held_max: usize,
    /// Percentiles of the per-frame latency, read start to write end.
    pub latency_us: Percentiles,
    /// Device times, when the backend measured them.
    pub device: Option<DeviceReport>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sampled_device_times_stand_for_the_frames_with_device_work() {
        let mut s = StageStats::new("upload");
        for i in 0..6 {
            s.add(Duration::ZERO, 1);
            // Four frames copied, two of them timed (10 µs each); two already on the device.
            if i < 4 {
                s.timed((i % 2 == 0).then_some(Duration::from_micros(10)));
            }
        }
        assert_eq!(s.device_total(), Duration::from_micros(40));
        // Lanes merge their counts; with nothing timed there is no device time.
        let mut other = StageStats::new("upload");
        other.add(Duration::ZERO, 1);
        other.timed(None);
        assert_eq!(other.device_total(), Duration::ZERO);
        s.merge(&other);
        assert_eq!(s.device_total(), Duration::from_micros(50));
    }
}
