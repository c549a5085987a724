//! The pipeline driven without a GPU: order and counts at every depth, failures that stop the
//! run and abort the sink, the five-stage device path through a mock device backend, bad
//! frames, device-resident source frames.
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::*;
use crate::backend::{BackendError, CpuSeq};
use crate::device::{CopyQueue, DeviceError};
use crate::filter::{spec::parse_spec, Filter};
use crate::frame::{PixelFormat, Shape};
use crate::io::memory::Collected;
use crate::io::synthetic::SyntheticSource;
use crate::io::{FrameMeta, FrameSlots, VecSink};

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

/// A device backend whose "device memory" is host vectors: drives the five-stage path
/// (pools, queues, recycling) without a GPU.
struct MockDevice(CpuSeq);
struct MockOffload;
struct MockQueue;

fn host_view(shape: &Shape, bytes: &[u8]) -> Frame {
    let strides: Vec<usize> = shape.planes.iter().map(|l| l.stride).collect();
    Frame::from_parts(
        shape.format,
        shape.width,
        shape.height,
        &strides,
        bytes.to_vec(),
    )
    .unwrap()
}

impl Offload for MockOffload {
    fn host_frame(
        &self,
        f: PixelFormat,
        w: usize,
        h: usize,
        _: bool,
    ) -> Result<Frame, DeviceError> {
        Ok(Frame::new(f, w, h).unwrap())
    }
    fn device_frame(&self, shape: &Shape) -> Result<DeviceFrame, DeviceError> {
        Ok(DeviceFrame {
            shape: shape.clone(),
            mem: Box::new(vec![0u8; shape.len]),
        })
    }
    fn queue(&self) -> Result<Box<dyn CopyQueue>, DeviceError> {
        Ok(Box::new(MockQueue))
    }
}

impl CopyQueue for MockQueue {
    fn upload(&mut self, src: &Frame, dst: &mut DeviceFrame) -> Result<Duration, DeviceError> {
        dst.mem
            .downcast_mut::<Vec<u8>>()
            .unwrap()
            .copy_from_slice(src.data());
        Ok(Duration::from_micros(3))
    }
    fn download(&mut self, src: &DeviceFrame, dst: &mut Frame) -> Result<Duration, DeviceError> {
        dst.data_mut()
            .copy_from_slice(src.mem.downcast_ref::<Vec<u8>>().unwrap());
        Ok(Duration::from_micros(5))
    }
}

impl Backend for MockDevice {
    fn name(&self) -> String {
        "mock device".into()
    }
    fn filter_frame(
        &mut self,
        plan: &Plan,
        src: &Frame,
        dst: &mut Frame,
    ) -> Result<(), BackendError> {
        self.0.filter_frame(plan, src, dst)
    }
    fn offload(&mut self) -> Result<Option<Arc<dyn Offload>>, BackendError> {
        Ok(Some(Arc::new(MockOffload)))
    }
    fn filter_device(
        &mut self,
        plan: &Plan,
        src: &DeviceFrame,
        dst: &mut DeviceFrame,
    ) -> Result<Duration, BackendError> {
        let input = host_view(&src.shape, src.mem.downcast_ref::<Vec<u8>>().unwrap());
        let mut out = Frame::like(&input);
        self.0.filter_frame(plan, &input, &mut out)?;
        dst.mem
            .downcast_mut::<Vec<u8>>()
            .unwrap()
            .copy_from_slice(out.data());
        Ok(Duration::from_micros(7))
    }
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
    for inflight in [1, 2, 4] {
        let got: Collected = Default::default();
        let want: Collected = Default::default();
        let stop = AtomicBool::new(false);
        let mut check = CpuSeq::new();
        let mut opts = Options::new(inflight, &stop);
        opts.check = Some(&mut check);
        let mut src = Numbered::new(30, vec![]);
        let stats = run(
            &mut src,
            Box::new(VecSink::sharing(got.clone())),
            &mut MockDevice(CpuSeq::new()),
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
        let mut src = Numbered::new(30, vec![]);
        run(
            &mut src,
            Box::new(VecSink::sharing(want.clone())),
            &mut CpuSeq::new(),
            &plan(),
            Options::new(inflight, &stop),
        )
        .unwrap();
        assert_eq!(frames(&got), frames(&want), "inflight {inflight}");
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
        &mut MockDevice(CpuSeq::new()),
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
        d.mem
            .downcast_mut::<Vec<u8>>()
            .unwrap()
            .copy_from_slice(f.data());
        Ok(Some((Payload::Device(d), meta)))
    }
}

#[test]
fn device_resident_source_frames_skip_the_upload() {
    let stop = AtomicBool::new(false);
    let got: Collected = Default::default();
    let want: Collected = Default::default();
    let mut src = OnDevice(Numbered::new(12, vec![]));
    let stats = run(
        &mut src,
        Box::new(VecSink::sharing(got.clone())),
        &mut MockDevice(CpuSeq::new()),
        &plan(),
        Options::new(2, &stop),
    )
    .unwrap();
    assert_eq!(stats.stage("upload").unwrap().bytes, 0, "nothing uploaded");
    assert_eq!(stats.device.unwrap().h2d, Duration::ZERO);
    let mut src = Numbered::new(12, vec![]);
    run(
        &mut src,
        Box::new(VecSink::sharing(want.clone())),
        &mut CpuSeq::new(),
        &plan(),
        Options::new(2, &stop),
    )
    .unwrap();
    assert_eq!(frames(&got), frames(&want));
    // --check needs the host input, which a device-resident frame does not have.
    let mut check = CpuSeq::new();
    let mut opts = Options::new(2, &stop);
    opts.check = Some(&mut check);
    let mut src = OnDevice(Numbered::new(3, vec![]));
    let err = run(
        &mut src,
        Box::new(VecSink::new()),
        &mut MockDevice(CpuSeq::new()),
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
