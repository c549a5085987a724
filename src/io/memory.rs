//! Sinks that keep frames in the process: [`NullSink`] (`-o null`: counts and discards, to
//! measure without file I/O) and [`VecSink`] (collects copies of every frame with its
//! metadata, for library users and tests).

use std::sync::{Arc, Mutex};

use super::{FrameMeta, IoError, Sink};
use crate::frame::Frame;

/// Discards frames (`-o null`), counting them.
#[derive(Default)]
pub struct NullSink {
    /// Frames written so far.
    pub frames: usize,
}

impl Sink for NullSink {
    fn describe(&self) -> String {
        "null".into()
    }
    fn write_frame(&mut self, _frame: &Frame, _meta: &FrameMeta) -> Result<(), IoError> {
        self.frames += 1;
        Ok(())
    }
    fn finish(self: Box<Self>) -> Result<(), IoError> {
        Ok(())
    }
    fn abort(self: Box<Self>) {}
}

/// Frames collected by a [`VecSink`]: (metadata, a heap copy of the frame), in order.
pub type Collected = Arc<Mutex<Vec<(FrameMeta, Frame)>>>;

/// Collects a copy of every frame; the frames stay readable through [`VecSink::frames`] after
/// the sink is handed to the pipeline. `finish` and `abort` leave what was collected.
#[derive(Default)]
pub struct VecSink {
    frames: Collected,
}

impl VecSink {
    /// A sink with an empty list of its own.
    pub fn new() -> Self {
        Self::default()
    }

    /// A sink that adds to frames collected before (several runs into one list).
    pub fn sharing(frames: Collected) -> Self {
        VecSink { frames }
    }

    /// A handle on the collected frames.
    pub fn frames(&self) -> Collected {
        self.frames.clone()
    }
}

impl Sink for VecSink {
    fn describe(&self) -> String {
        "memory".into()
    }
    fn write_frame(&mut self, frame: &Frame, meta: &FrameMeta) -> Result<(), IoError> {
        let mut v = self.frames.lock().unwrap_or_else(|e| e.into_inner());
        v.push((meta.clone(), frame.clone()));
        Ok(())
    }
    fn finish(self: Box<Self>) -> Result<(), IoError> {
        Ok(())
    }
    fn abort(self: Box<Self>) {}
}
