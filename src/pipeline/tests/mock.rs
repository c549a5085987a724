//! A device backend for the pipeline's tests whose "device memory" is host vectors, laid out
//! as a GPU's (`device_shape`) and copied row by row as a `CopyPlan` says; its copies and
//! kernels run only when they are finished, as a device's would.
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::backend::{Backend, BackendError, CpuSeq};
use crate::device::{device_shape, CopyPlan, CopyQueue, DeviceError, DeviceFrame, Offload};
use crate::filter::Plan;
use crate::frame::{Frame, PixelFormat, Shape};

/// A device backend whose "device memory" is host vectors: drives the five-stage path
/// (pools, queues, recycling) without a GPU. `delay` makes its kernels slower, `fail_after`
/// fails its kernel on that many frames, `made` counts the host buffers its offload allocated,
/// `depth` is its copy queues' depth.
pub(super) struct MockDevice {
    pub(super) cpu: CpuSeq,
    pub(super) delay: Duration,
    pub(super) depth: usize,
    pub(super) fail_after: Option<usize>,
    /// Panic instead of returning the error.
    pub(super) panics: bool,
    /// Gets this frame wrong (one sample off), as a broken kernel would.
    pub(super) wrong_at: Option<usize>,
    pub(super) filtered: usize,
    pub(super) made: Arc<AtomicUsize>,
    /// Frames started on the "device", oldest first.
    pub(super) kernels: std::collections::VecDeque<(Plan, Shape, Pending)>,
}
pub(super) struct MockOffload {
    made: Arc<AtomicUsize>,
    depth: usize,
}

/// Copies as a device runs them: later. A copy is only carried out when the stage finishes it,
/// so a stage that hands a frame on, or lets a buffer go, before then sees stale bytes.
pub(super) struct MockQueue {
    depth: usize,
    pending: std::collections::VecDeque<(Vec<Pending>, Duration)>,
    /// Polls so far: every other one says the copy is still running.
    polls: usize,
    /// Copies finished so far.
    finished: usize,
}

/// Started work (a copy, a frame's kernels): `len` bytes from `src` to `dst`.
pub(super) struct Pending {
    pub(super) src: *const u8,
    pub(super) dst: *mut u8,
    pub(super) len: usize,
}

// SAFETY: the pointers are only followed by the thread that started the work, under the
// contract of `CopyQueue` and `Backend::start_device` (the buffers stay alive and untouched
// until the work is finished).
unsafe impl Send for Pending {}

impl Pending {
    /// The pieces of a frame's copy between its host bytes and its device bytes as `plan`
    /// lays them out (`upload`: host to device), row by row when the layouts differ.
    pub(super) fn of_copy(
        plan: &CopyPlan,
        host: *mut u8,
        dev: *mut u8,
        upload: bool,
    ) -> Vec<Pending> {
        let piece = |h: usize, d: usize, len: usize| {
            // SAFETY: offsets within the frames' buffers, as the plan computes them.
            let (h, d) = unsafe { (host.add(h), dev.add(d)) };
            let (src, dst) = if upload { (h, d) } else { (d, h) };
            Pending {
                src: src.cast_const(),
                dst,
                len,
            }
        };
        match plan {
            CopyPlan::Whole { len } => vec![piece(0, 0, *len)],
            CopyPlan::Planes(planes) => planes
                .iter()
                .flat_map(|p| {
                    (0..p.rows).map(move |r| {
                        let (h, d) = (p.host_offset + r * p.host_stride, p.device_offset);
                        piece(h, d + r * p.device_stride, p.row_bytes)
                    })
                })
                .collect(),
        }
    }
}

impl MockDevice {
    pub(super) fn new() -> Self {
        Self::slow(Duration::ZERO)
    }
    pub(super) fn slow(delay: Duration) -> Self {
        MockDevice {
            cpu: CpuSeq::new(),
            delay,
            fail_after: None,
            panics: false,
            wrong_at: None,
            filtered: 0,
            made: Arc::default(),
            kernels: Default::default(),
            depth: 2,
        }
    }
}

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
        self.made.fetch_add(1, Ordering::SeqCst);
        Ok(Frame::new(f, w, h).unwrap())
    }
    fn device_frame(&self, shape: &Shape) -> Result<DeviceFrame, DeviceError> {
        let shape = device_shape(shape);
        Ok(DeviceFrame {
            mem: Box::new(vec![0u8; shape.len]),
            shape,
        })
    }
    fn queue(&self) -> Result<Box<dyn CopyQueue>, DeviceError> {
        Ok(Box::new(MockQueue {
            depth: self.depth,
            pending: Default::default(),
            polls: 0,
            finished: 0,
        }))
    }
}

impl MockQueue {
    fn push(&mut self, copy: Vec<Pending>, device: Duration) -> Result<(), DeviceError> {
        assert!(
            self.pending.len() < self.depth,
            "more copies than the queue's depth"
        );
        self.pending.push_back((copy, device));
        Ok(())
    }
}

impl CopyQueue for MockQueue {
    unsafe fn start_upload(
        &mut self,
        src: &Frame,
        dst: &mut DeviceFrame,
    ) -> Result<(), DeviceError> {
        let plan = CopyPlan::between(&src.shape(), &dst.shape)?;
        let dev = dst.mem.downcast_mut::<Vec<u8>>().unwrap();
        assert_eq!(dev.len(), dst.shape.len);
        let host = src.data().as_ptr().cast_mut();
        self.push(
            Pending::of_copy(&plan, host, dev.as_mut_ptr(), true),
            Duration::from_micros(3),
        )
    }
    unsafe fn start_download(
        &mut self,
        src: &DeviceFrame,
        dst: &mut Frame,
    ) -> Result<(), DeviceError> {
        let plan = CopyPlan::between(&dst.shape(), &src.shape)?;
        let dev = src.mem.downcast_ref::<Vec<u8>>().unwrap();
        assert_eq!(dev.len(), src.shape.len);
        let host = dst.data_mut().as_mut_ptr();
        self.push(
            Pending::of_copy(&plan, host, dev.as_ptr().cast_mut(), false),
            Duration::from_micros(5),
        )
    }
    fn finish(&mut self) -> Result<Option<Duration>, DeviceError> {
        let (pieces, device) = self.pending.pop_front().expect("a copy in flight");
        for c in pieces {
            // SAFETY: the contract of `start_*` keeps both buffers alive and untouched until
            // now.
            unsafe { std::ptr::copy_nonoverlapping(c.src, c.dst, c.len) };
        }
        // Like the CUDA queue, time a sample of the copies: one in three.
        self.finished += 1;
        Ok((self.finished % 3 == 1).then_some(device))
    }
    fn depth(&self) -> usize {
        self.depth
    }
    fn done(&mut self) -> bool {
        self.polls += 1;
        self.polls.is_multiple_of(2)
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
        self.cpu.filter_frame(plan, src, dst)
    }
    fn offload(&mut self) -> Result<Option<Arc<dyn Offload>>, BackendError> {
        Ok(Some(Arc::new(MockOffload {
            made: self.made.clone(),
            depth: self.depth,
        })))
    }
    unsafe fn start_device(
        &mut self,
        plan: &Plan,
        src: &DeviceFrame,
        dst: &mut DeviceFrame,
    ) -> Result<(), BackendError> {
        assert!(
            self.kernels.len() < self.depth,
            "more frames than the device's depth"
        );
        let src_bytes = src.mem.downcast_ref::<Vec<u8>>().unwrap();
        let work = Pending {
            src: src_bytes.as_ptr(),
            dst: dst.mem.downcast_mut::<Vec<u8>>().unwrap().as_mut_ptr(),
            len: src_bytes.len(),
        };
        self.kernels
            .push_back((plan.clone(), src.shape.clone(), work));
        Ok(())
    }
    /// The kernels run when they are finished, like a device's: a stage that hands a frame
    /// on earlier passes stale bytes.
    fn finish_device(&mut self) -> Result<Option<Duration>, BackendError> {
        let (plan, shape, work) = self.kernels.pop_front().expect("a frame in flight");
        if Some(self.filtered) == self.fail_after {
            assert!(!self.panics, "planned kernel panic");
            return Err(BackendError::Unsupported("planned kernel failure".into()));
        }
        self.filtered += 1;
        std::thread::sleep(self.delay);
        // SAFETY: `start_device`'s contract keeps both buffers alive and untouched until now.
        let (src, dst) = unsafe {
            (
                std::slice::from_raw_parts(work.src, work.len),
                std::slice::from_raw_parts_mut(work.dst, work.len),
            )
        };
        let input = host_view(&shape, src);
        let mut out = Frame::like(&input);
        self.cpu.filter_frame(&plan, &input, &mut out)?;
        dst.copy_from_slice(out.data());
        if Some(self.filtered - 1) == self.wrong_at {
            dst[0] ^= 1;
        }
        Ok(Some(Duration::from_micros(7)))
    }
    fn device_depth(&self) -> usize {
        self.depth
    }
}
