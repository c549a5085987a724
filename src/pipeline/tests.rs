//! The pipeline driven without a GPU: order and counts at every depth, failures that stop the
//! run and abort the sink, the five-stage device path through a mock device backend (`mock`), bad
//! frames, device-resident source frames.
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::*;
use crate::backend::CpuSeq;
use crate::device::CopyPlan;
use crate::filter::{spec::parse_spec, Filter};
use crate::frame::PixelFormat;
use crate::io::memory::Collected;
use crate::io::synthetic::SyntheticSource;
use crate::io::{FrameMeta, FrameSlots, VecSink};

mod mock;
mod opening;
use mock::{MockDevice, Pending};

/// Records frame indices and the first byte of each frame; `fail_at` makes a write fail.
struct Recorder {
    seen: Arc<Mutex<Vec<(usize, u8)>>>,
    fail_at: Option<usize>,
    finished: Arc<Mutex<Option<bool>>>,
}

impl Sink for Recorder {
    fn describe(&self) -> String {
        "recorder".into()
    }
    fn write_frame(&mut self, frame: &Frame, meta: &FrameMeta) -> Result<(), IoError> {
        if Some(meta.index) == self.fail_at {
            return Err(IoError::Write {
                path: "recorder".into(),
                msg: "planned failure".into(),
            });
        }
        self.seen
            .lock()
            .unwrap()
            .push((meta.index, frame.data()[0]));
        Ok(())
    }
    fn finish(self: Box<Self>) -> Result<(), IoError> {
        *self.finished.lock().unwrap() = Some(true);
        Ok(())
    }
    fn abort(self: Box<Self>) {
        *self.finished.lock().unwrap() = Some(false);
    }
}

fn plan() -> Plan {
    Filter::new(parse_spec("box:3").unwrap()).plan().unwrap()
}

#[test]
fn keeps_order_and_counts_with_any_depth() {
    for inflight in [1, 2, 5] {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let finished = Arc::new(Mutex::new(None));
        let sink = Recorder {
            seen: seen.clone(),
            fail_at: None,
            finished: finished.clone(),
        };
        let mut src = SyntheticSource::parse("synthetic:40x10:rgb:25").unwrap();
        let stop = AtomicBool::new(false);
        let stats = run(
            &mut src,
            Box::new(sink),
            &mut CpuSeq::new(),
            &plan(),
            Options::new(inflight, &stop),
        )
        .unwrap();
        let seen = seen.lock().unwrap();
        assert_eq!(
            seen.iter().map(|s| s.0).collect::<Vec<_>>(),
            (0..25).collect::<Vec<_>>()
        );
        let written = stats.stage("write").unwrap().frames;
        assert_eq!((stats.frames, written, stats.latency.len()), (25, 25, 25));
        assert_eq!(*finished.lock().unwrap(), Some(true));
    }
}

#[test]
fn a_failing_stage_stops_the_run_and_aborts_the_sink() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let finished = Arc::new(Mutex::new(None));
    let sink = Recorder {
        seen: seen.clone(),
        fail_at: Some(7),
        finished: finished.clone(),
    };
    let mut src = SyntheticSource::parse("synthetic:40x10:gray:1000").unwrap();
    let stop = AtomicBool::new(false);
    let err = run(
        &mut src,
        Box::new(sink),
        &mut CpuSeq::new(),
        &plan(),
        Options::new(2, &stop),
    )
    .unwrap_err();
    assert!(err.to_string().contains("planned failure"), "{err}");
    assert_eq!(
        *finished.lock().unwrap(),
        Some(false),
        "sink aborted, not finished"
    );
    assert_eq!(seen.lock().unwrap().len(), 7);
}

/// The frames a [`VecSink`] collected, without their metadata.
fn frames(v: &Collected) -> Vec<Frame> {
    v.lock().unwrap().iter().map(|(_, f)| f.clone()).collect()
}

/// Frames 0..n with a distinct first byte, reporting the frames in `bad` as bad.
struct Numbered {
    n: usize,
    next: usize,
    bad: Vec<usize>,
}
impl Numbered {
    fn new(n: usize, bad: Vec<usize>) -> Self {
        Numbered { n, next: 0, bad }
    }
}

impl Source for Numbered {
    fn describe(&self) -> String {
        "numbered".into()
    }
    fn len_hint(&self) -> Option<usize> {
        Some(self.n)
    }
    fn next_frame(
        &mut self,
        slots: &mut dyn FrameSlots,
    ) -> Result<Option<(Frame, FrameMeta)>, IoError> {
        if self.next == self.n {
            return Ok(None);
        }
        let i = self.next;
        self.next += 1;
        if self.bad.contains(&i) {
            return Err(IoError::BadFrame {
                input: "numbered".into(),
                index: i,
                msg: "planned".into(),
            });
        }
        let mut f = slots.take(PixelFormat::Yuv420p, 21, 9)?;
        for (k, b) in f.data_mut().iter_mut().enumerate() {
            *b = (k * 7 + i * 31) as u8;
        }
        let meta = FrameMeta {
            index: i,
            ..FrameMeta::default()
        };
        Ok(Some((f, meta)))
    }
}

#[test]
fn device_stages_keep_order_recycle_buffers_and_match_the_host_path() {
    // Copy queues deeper than the pools too: a stage must not wait for a buffer its own copies
    // hold.
    for (inflight, depth) in [1, 2, 4].into_iter().flat_map(|n| [(n, 1), (n, 2), (n, 3)]) {
        let got: Collected = Default::default();
        let stop = AtomicBool::new(false);
        let mut check = CpuSeq::new();
        let mut opts = Options::new(inflight, &stop);
        opts.check = Some(&mut check);
        let mut src = Numbered::new(30, vec![]);
        let stats = run(
            &mut src,
            Box::new(VecSink::sharing(got.clone())),
            &mut MockDevice {
                depth,
                ..MockDevice::new()
            },
            &plan(),
            opts,
        )
        .unwrap();
        let names: Vec<_> = stats.stages.iter().map(|s| s.name).collect();
        assert_eq!(names, ["read", "upload", "filter", "download", "write"]);
        assert!(stats.overlapped && stats.checked);
        let d = stats.device.unwrap();
        assert_eq!(
            (d.h2d, d.kernel, d.d2h),
            (
                Duration::from_micros(90),
                Duration::from_micros(210),
                Duration::from_micros(150)
            )
        );
        assert_eq!(
            frames(&got),
            reference(30),
            "inflight {inflight}, depth {depth}"
        );
        assert_eq!(got.lock().unwrap().len(), 30);
    }
}

#[test]
fn bad_frames_fail_the_run_or_are_skipped_and_counted() {
    let stop = AtomicBool::new(false);
    let got: Collected = Default::default();
    let mut src = Numbered::new(10, vec![3, 7]);
    let err = run(
        &mut src,
        Box::new(VecSink::sharing(got.clone())),
        &mut CpuSeq::new(),
        &plan(),
        Options::new(2, &stop),
    )
    .unwrap_err();
    assert_eq!(err.to_string(), "numbered: frame 3: planned");
    for backend in [
        &mut CpuSeq::new() as &mut dyn Backend,
        &mut MockDevice::new(),
    ] {
        let got: Collected = Default::default();
        let mut opts = Options::new(2, &stop);
        opts.skip_bad = true;
        let mut src = Numbered::new(10, vec![3, 7]);
        let stats = run(
            &mut src,
            Box::new(VecSink::sharing(got.clone())),
            backend,
            &plan(),
            opts,
        )
        .unwrap();
        assert_eq!(
            (stats.frames, stats.skipped, got.lock().unwrap().len()),
            (8, 2, 8)
        );
        assert_eq!(
            stats.skip_messages,
            ["numbered: frame 3: planned", "numbered: frame 7: planned"]
        );
    }
}

/// Delivers `Numbered`'s frames already in device memory when the run has one.
struct OnDevice(Numbered);
impl Source for OnDevice {
    fn describe(&self) -> String {
        "on-device".into()
    }
    fn len_hint(&self) -> Option<usize> {
        Some(self.0.n)
    }
    fn next_frame(
        &mut self,
        slots: &mut dyn FrameSlots,
    ) -> Result<Option<(Frame, FrameMeta)>, IoError> {
        self.0.next_frame(slots)
    }
    fn next_payload(
        &mut self,
        slots: &mut dyn FrameSlots,
        device: Option<&dyn Offload>,
    ) -> Result<Option<(Payload, FrameMeta)>, IoError> {
        let Some((f, meta)) = self.0.next_frame(&mut crate::io::HeapSlots)? else {
            return Ok(None);
        };
        let Some(device) = device else {
            return Ok(Some((Payload::Host(slots.adopt(f)?), meta)));
        };
        let mut d = device.device_frame(&f.shape()).unwrap();
        let plan = CopyPlan::between(&f.shape(), &d.shape).unwrap();
        let dev = d.mem.downcast_mut::<Vec<u8>>().unwrap().as_mut_ptr();
        for c in Pending::of_copy(&plan, f.data().as_ptr().cast_mut(), dev, true) {
            // SAFETY: both frames are alive here; the pieces lie within them.
            unsafe { std::ptr::copy_nonoverlapping(c.src, c.dst, c.len) };
        }
        Ok(Some((Payload::Device(d), meta)))
    }
}

#[test]
fn device_resident_source_frames_skip_the_upload() {
    let stop = AtomicBool::new(false);
    let got: Collected = Default::default();
    let mut src = OnDevice(Numbered::new(12, vec![]));
    let stats = run(
        &mut src,
        Box::new(VecSink::sharing(got.clone())),
        &mut MockDevice::new(),
        &plan(),
        Options::new(2, &stop),
    )
    .unwrap();
    assert_eq!(stats.stage("upload").unwrap().bytes, 0, "nothing uploaded");
    assert_eq!(stats.device.unwrap().h2d, Duration::ZERO);
    assert_eq!(frames(&got), reference(12));
    // --check needs the host input, which a device-resident frame does not have.
    let mut check = CpuSeq::new();
    let mut opts = Options::new(2, &stop);
    opts.check = Some(&mut check);
    let mut src = OnDevice(Numbered::new(3, vec![]));
    let err = run(
        &mut src,
        Box::new(VecSink::new()),
        &mut MockDevice::new(),
        &plan(),
        opts,
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("--check needs frames in host memory"),
        "{err}"
    );
}

/// The frames of `Numbered::new(n)` as cpu-seq filters them, one lane.
fn reference(n: usize) -> Vec<Frame> {
    let want: Collected = Default::default();
    let stop = AtomicBool::new(false);
    let mut src = Numbered::new(n, vec![]);
    run(
        &mut src,
        Box::new(VecSink::sharing(want.clone())),
        &mut CpuSeq::new(),
        &plan(),
        Options::new(2, &stop),
    )
    .unwrap();
    frames(&want)
}

#[test]
fn several_devices_of_different_speeds_keep_order_counts_and_their_bound() {
    let want = reference(60);
    for count in 2..=4 {
        for inflight in [1, 2, 3] {
            // Lane k is 10k ms per frame slower than lane 0. Smaller gaps were within a busy
            // 2-core machine's scheduling noise: at 1 ms lane 1 once took more frames than
            // lane 0; at 2 ms, with the shared `--check` backend and a preempted read stage,
            // both lanes were idle whenever a frame came and took turns (30 and 30).
            let mut devices: Vec<MockDevice> = (0..count)
                .map(|k| MockDevice::slow(Duration::from_millis(10 * k as u64)))
                .collect();
            let made: Vec<_> = devices.iter().map(|d| d.made.clone()).collect();
            let mut backends = lanes(&mut devices);
            let got: Collected = Default::default();
            let stop = AtomicBool::new(false);
            let mut check = CpuSeq::new();
            let mut opts = Options::new(inflight, &stop);
            opts.check = Some(&mut check);
            let stats = run_on(
                &mut Numbered::new(60, vec![]),
                Box::new(VecSink::sharing(got.clone())),
                &mut backends,
                &plan(),
                opts,
            )
            .unwrap();
            let what = format!("{count} lanes, inflight {inflight}");
            let order: Vec<usize> = got.lock().unwrap().iter().map(|(m, _)| m.index).collect();
            assert_eq!(order, (0..60).collect::<Vec<_>>(), "{what}");
            assert_eq!(frames(&got), want, "{what}");
            assert_eq!(stats.lanes.len(), count, "{what}");
            let per_lane: Vec<usize> = stats.lanes.iter().map(|l| l.frames).collect();
            assert_eq!(per_lane.iter().sum::<usize>(), 60, "{what}");
            assert!(per_lane[0] > per_lane[count - 1], "{what}: {per_lane:?}");
            assert!(
                (1..=count * inflight).contains(&stats.held_max),
                "{what}: held {}",
                stats.held_max
            );
            // Host buffers: each lane's input and output pools, nothing more.
            for m in &made {
                assert!(m.load(Ordering::SeqCst) <= 2 * inflight, "{what}");
            }
            let filter = stats.stage("filter").unwrap();
            assert_eq!((filter.frames, filter.lanes), (60, count), "{what}");
            assert_eq!(stats.report().lanes.len(), count);
        }
    }
}

/// `devices` as the lanes of one run.
fn lanes(devices: &mut [MockDevice]) -> Vec<&mut dyn Backend> {
    devices.iter_mut().map(|d| d as &mut dyn Backend).collect()
}

/// 500 frames through `devices` into a [`Recorder`] failing at `sink_fails`: the run's error
/// (it must fail), the frames the sink saw and whether it was aborted.
fn failing_run(
    devices: &mut [MockDevice],
    sink_fails: Option<usize>,
    inflight: usize,
) -> (PipelineError, Vec<usize>, bool) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let finished = Arc::new(Mutex::new(None));
    let sink = Recorder {
        seen: seen.clone(),
        fail_at: sink_fails,
        finished: finished.clone(),
    };
    let stop = AtomicBool::new(false);
    let err = run_on(
        &mut Numbered::new(500, vec![]),
        Box::new(sink),
        &mut lanes(devices),
        &plan(),
        Options::new(inflight, &stop),
    )
    .unwrap_err();
    let seen = seen.lock().unwrap().iter().map(|s| s.0).collect();
    let aborted = *finished.lock().unwrap() == Some(false);
    (err, seen, aborted)
}

#[test]
fn several_devices_drain_on_stop_and_stop_on_a_failing_device() {
    // A stop request (Ctrl-C) after 10 frames are written: what was read is written, in order.
    let stop = AtomicBool::new(false);
    let raise = |n: usize| {
        if n == 10 {
            stop.store(true, Ordering::SeqCst);
        }
    };
    let mut devices = [
        MockDevice::new(),
        MockDevice::slow(Duration::from_millis(2)),
        MockDevice::slow(Duration::from_millis(1)),
    ];
    let mut backends = lanes(&mut devices);
    let got: Collected = Default::default();
    let mut opts = Options::new(2, &stop);
    opts.progress = Some(&raise);
    let stats = run_on(
        &mut Numbered::new(1000, vec![]),
        Box::new(VecSink::sharing(got.clone())),
        &mut backends,
        &plan(),
        opts,
    )
    .unwrap();
    assert!(stats.interrupted);
    let order: Vec<usize> = got.lock().unwrap().iter().map(|(m, _)| m.index).collect();
    assert!(order.len() >= 10 && order.len() < 1000, "{}", order.len());
    assert_eq!(order, (0..stats.frames).collect::<Vec<_>>());
    assert_eq!(frames(&got), reference(stats.frames));

    // One device fails on its 5th frame: the run fails naming it, the others drain, the sink
    // is aborted, nothing hangs.
    for failing in [0, 1, 3] {
        let mut devices: Vec<MockDevice> = (0..4).map(|_| MockDevice::new()).collect();
        devices[failing].fail_after = Some(4);
        let (err, seen, aborted) = failing_run(&mut devices, None, 2);
        assert!(err.to_string().contains("planned kernel failure"), "{err}");
        assert!(aborted, "sink aborted");
        assert_eq!(
            seen,
            (0..seen.len()).collect::<Vec<_>>(),
            "written in order"
        );
    }
    // A device whose stage panics: the run fails (no lane waits for its frames), sink aborted.
    let mut devices: Vec<MockDevice> = (0..3).map(|_| MockDevice::new()).collect();
    devices[1].fail_after = Some(3);
    devices[1].panics = true;
    let (err, _, aborted) = failing_run(&mut devices, None, 2);
    assert!(matches!(err, PipelineError::Panicked), "{err}");
    assert!(aborted);
    // A failing sink stops every lane too.
    let mut devices: Vec<MockDevice> = (0..2).map(|_| MockDevice::new()).collect();
    let (err, _, aborted) = failing_run(&mut devices, Some(9), 3);
    assert!(err.to_string().contains("planned failure"), "{err}");
    assert!(aborted);
}

/// Runs `f` on a thread of its own and fails the test when it takes over a minute: a run that
/// hangs is the failure some tests look for.
fn within_a_minute<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = crossbeam_channel::bounded(1);
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(60))
        .expect("the run hung (or its thread panicked)")
}

#[test]
fn a_device_frame_that_fails_check_stops_the_run() {
    // With --check the host inputs travel to the download stage, which compares and returns
    // them: when it fails, the read stage must not wait for inputs that will never come back.
    for (inflight, wrong_at) in [(1, 0), (2, 3), (4, 9)] {
        let (err, aborted) = within_a_minute(move || {
            let stop = AtomicBool::new(false);
            let finished: Arc<Mutex<Option<bool>>> = Default::default();
            let sink = Recorder {
                seen: Default::default(),
                fail_at: None,
                finished: finished.clone(),
            };
            let mut check = CpuSeq::new();
            let mut opts = Options::new(inflight, &stop);
            opts.check = Some(&mut check);
            let mut device = MockDevice {
                wrong_at: Some(wrong_at),
                ..MockDevice::new()
            };
            let mut src = Numbered::new(200, vec![]);
            let err = run(&mut src, Box::new(sink), &mut device, &plan(), opts).unwrap_err();
            let aborted = *finished.lock().unwrap() == Some(false);
            (err.to_string(), aborted)
        });
        assert!(err.contains(&format!("frame {wrong_at}")), "{err}");
        assert!(aborted, "the sink is aborted, not finished");
    }
}
