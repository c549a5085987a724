//! Runs a filter over a stream: frames from a [`Source`], through a backend, into a [`Sink`].
//!
//! This is the sequential driver (decode → filter → encode on one thread); it guarantees frame
//! order, frames in == frames out, and that a failed run leaves no output behind. With a check
//! backend (`--check`) every frame is also filtered by `cpu-seq` and compared byte for byte.

use std::time::{Duration, Instant};

use crate::backend::{Backend, BackendError};
use crate::filter::Plan;
use crate::frame::Frame;
use crate::io::{IoError, Sink, Source};

#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    #[error(transparent)]
    Io(#[from] IoError),
    #[error("frame {index}: {source}")]
    Backend { index: usize, source: BackendError },
    #[error("frame {index}: --check found {count} samples that differ from cpu-seq (first at plane {plane}, row {row}, byte {col}: {got} vs {want})")]
    CheckMismatch {
        index: usize,
        count: usize,
        plane: usize,
        row: usize,
        col: usize,
        got: u8,
        want: u8,
    },
    #[error("{read} frames read but {written} written")]
    FrameCount { read: usize, written: usize },
}

/// What a run did, for the report.
#[derive(Clone, Debug, Default)]
pub struct RunStats {
    pub frames: usize,
    pub megapixels: f64,
    pub wall: Duration,
    pub read: Duration,
    pub filter: Duration,
    pub write: Duration,
    pub checked: bool,
}

/// Filters every frame of `source` into `sink`. On any error the sink is aborted, so nothing
/// that looks like a finished output remains.
pub fn run(
    source: &mut dyn Source,
    sink: Box<dyn Sink>,
    backend: &mut dyn Backend,
    plan: &Plan,
    mut check: Option<&mut dyn Backend>,
) -> Result<RunStats, PipelineError> {
    let start = Instant::now();
    let mut stats = RunStats {
        checked: check.is_some(),
        ..RunStats::default()
    };
    let mut sink = Some(sink);
    let result = (|| -> Result<(), PipelineError> {
        let mut out: Option<Frame> = None;
        let mut reference: Option<Frame> = None;
        let mut written = 0;
        loop {
            let t = Instant::now();
            let Some((frame, meta)) = source.next_frame()? else {
                break;
            };
            stats.read += t.elapsed();
            stats.frames += 1;
            stats.megapixels += (frame.width() * frame.height()) as f64 / 1e6;

            // Reuse the output buffer while the shape stays the same.
            let dst = match out.take() {
                Some(f) if f.same_shape(&frame) => out.insert(f),
                _ => out.insert(Frame::like(&frame)),
            };
            let t = Instant::now();
            backend
                .filter_frame(plan, &frame, dst)
                .map_err(|source| PipelineError::Backend {
                    index: meta.index,
                    source,
                })?;
            stats.filter += t.elapsed();

            if let Some(check) = check.as_deref_mut() {
                let want = match reference.take() {
                    Some(f) if f.same_shape(&frame) => reference.insert(f),
                    _ => reference.insert(Frame::like(&frame)),
                };
                check
                    .filter_frame(plan, &frame, want)
                    .map_err(|source| PipelineError::Backend {
                        index: meta.index,
                        source,
                    })?;
                compare(meta.index, dst, want)?;
            }

            let t = Instant::now();
            sink.as_mut()
                .expect("sink present until finish")
                .write_frame(dst, &meta)?;
            stats.write += t.elapsed();
            written += 1;
        }
        if written != stats.frames {
            return Err(PipelineError::FrameCount {
                read: stats.frames,
                written,
            });
        }
        Ok(())
    })();
    match result {
        Ok(()) => {
            sink.take().expect("sink present").finish()?;
            stats.wall = start.elapsed();
            Ok(stats)
        }
        Err(e) => {
            if let Some(s) = sink.take() {
                s.abort();
            }
            Err(e)
        }
    }
}

fn compare(index: usize, got: &Frame, want: &Frame) -> Result<(), PipelineError> {
    let mut first = None;
    let mut count = 0;
    for (p, l) in got.planes().iter().enumerate() {
        for row in 0..l.height {
            for (col, (&g, &w)) in got.row(p, row).iter().zip(want.row(p, row)).enumerate() {
                if g != w {
                    count += 1;
                    first.get_or_insert((p, row, col, g, w));
                }
            }
        }
    }
    match first {
        None => Ok(()),
        Some((plane, row, col, got, want)) => Err(PipelineError::CheckMismatch {
            index,
            count,
            plane,
            row,
            col,
            got,
            want,
        }),
    }
}
