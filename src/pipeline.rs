//! Runs a filter over a stream as a staged pipeline: read → filter → write, each stage on its
//! own thread, joined by bounded crossbeam channels.
//!
//! The read stage pulls frames from a [`Source`], the filter stage runs the backend (and, with
//! `--check`, cpu-seq alongside, comparing byte for byte), the write stage feeds the [`Sink`].
//! Channels hold at most `inflight` frames, so a slow stage applies backpressure; one worker per
//! stage and FIFO channels keep frame order. Output frames are recycled from the write stage
//! back to the filter stage, so steady state allocates no output buffers. Any error stops every
//! stage (channels disconnect), the sink is aborted so nothing that looks finished remains, and a
//! successful run has written exactly as many frames as it read. Raising `stop` (the CLI does
//! on Ctrl-C) ends reading; the frames already read drain through and the output is finalized.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crossbeam_channel::bounded;
use hdrhistogram::Histogram;

use crate::backend::{Backend, BackendError};
use crate::filter::Plan;
use crate::frame::Frame;
use crate::io::{FrameMeta, IoError, Sink, Source};

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
    #[error("a pipeline stage panicked")]
    Panicked,
}

/// One stage's totals.
#[derive(Clone, Debug, Default)]
pub struct StageStats {
    pub name: &'static str,
    pub frames: usize,
    /// Time spent working (not waiting on channels).
    pub busy: Duration,
    /// Bytes of frame data handled.
    pub bytes: u64,
    /// The read stage stopped early because `stop` was raised (Ctrl-C).
    pub interrupted: bool,
}

/// What a run did, for the report.
#[derive(Clone, Debug)]
pub struct RunStats {
    pub frames: usize,
    pub megapixels: f64,
    pub wall: Duration,
    pub read: StageStats,
    pub filter: StageStats,
    pub write: StageStats,
    /// Per-frame latency from the start of its read to the end of its write, in µs.
    pub latency: Histogram<u64>,
    pub checked: bool,
}

impl RunStats {
    /// The report as JSON (for `--report FILE.json`): totals, each stage, latency percentiles.
    pub fn to_json(&self) -> serde_json::Value {
        let wall = self.wall.as_secs_f64();
        let stage = |s: &StageStats| {
            let busy = s.busy.as_secs_f64();
            serde_json::json!({
                "name": s.name,
                "frames": s.frames,
                "busy_s": busy,
                "fps": s.frames as f64 / busy.max(1e-9),
                "mb_per_s": s.bytes as f64 / busy.max(1e-9) / 1e6,
                "utilisation": busy / wall.max(1e-9),
            })
        };
        let l = &self.latency;
        serde_json::json!({
            "frames": self.frames,
            "megapixels": self.megapixels,
            "wall_s": wall,
            "fps": self.frames as f64 / wall.max(1e-9),
            "interrupted": self.read.interrupted,
            "checked_against_cpu_seq": self.checked,
            "bottleneck": self.bottleneck().name,
            "stages": self.stages().map(stage),
            "latency_us": {
                "p50": l.value_at_quantile(0.5),
                "p90": l.value_at_quantile(0.9),
                "p99": l.value_at_quantile(0.99),
                "max": l.max(),
            },
        })
    }

    pub fn stages(&self) -> [&StageStats; 3] {
        [&self.read, &self.filter, &self.write]
    }

    /// The stage with the most busy time.
    pub fn bottleneck(&self) -> &StageStats {
        self.stages().into_iter().max_by_key(|s| s.busy).expect("three stages")
    }
}

/// A frame in flight with its metadata and the instant its read started.
type InFlight = (Frame, FrameMeta, Instant);

/// Filters every frame of `source` into `sink` with at most `inflight` frames queued between
/// stages. On any error the sink is aborted.
pub fn run(
    source: &mut dyn Source,
    sink: Box<dyn Sink>,
    backend: &mut dyn Backend,
    plan: &Plan,
    check: Option<&mut dyn Backend>,
    inflight: usize,
    stop: &AtomicBool,
) -> Result<RunStats, PipelineError> {
    let inflight = inflight.max(1);
    let start = Instant::now();
    let checked = check.is_some();
    let (tx_in, rx_in) = bounded::<InFlight>(inflight);
    let (tx_out, rx_out) = bounded::<InFlight>(inflight);
    let (tx_free, rx_free) = bounded::<Frame>(inflight + 2);
    let mut sink = sink;
    let mut latency = Histogram::<u64>::new_with_bounds(1, 24 * 3600 * 1_000_000, 3).expect("valid bounds");
    let mut write = StageStats {
        name: "write",
        ..StageStats::default()
    };

    let (read, filter, written) = std::thread::scope(|scope| {
        let reader = scope.spawn(move || -> Result<(StageStats, f64), PipelineError> {
            let mut st = StageStats {
                name: "read",
                ..StageStats::default()
            };
            let mut megapixels = 0.0;
            loop {
                let t = Instant::now();
                if stop.load(Ordering::Relaxed) {
                    st.interrupted = true;
                    break; // Ctrl-C: read no more; frames in flight still drain to the sink
                }
                let Some((frame, meta)) = source.next_frame()? else {
                    break;
                };
                st.busy += t.elapsed();
                st.frames += 1;
                st.bytes += frame.data().len() as u64;
                megapixels += (frame.width() * frame.height()) as f64 / 1e6;
                if tx_in.send((frame, meta, t)).is_err() {
                    break; // a later stage stopped; its error is reported
                }
            }
            Ok((st, megapixels))
        });
        let filterer = scope.spawn(move || -> Result<StageStats, PipelineError> {
            let mut st = StageStats {
                name: "filter",
                ..StageStats::default()
            };
            let mut check = check;
            let mut reference: Option<Frame> = None;
            for (frame, meta, t0) in rx_in {
                let t = Instant::now();
                let mut dst = match rx_free.try_recv() {
                    Ok(f) if f.same_shape(&frame) => f,
                    _ => Frame::like(&frame),
                };
                backend
                    .filter_frame(plan, &frame, &mut dst)
                    .map_err(|source| PipelineError::Backend {
                        index: meta.index,
                        source,
                    })?;
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
                    compare(meta.index, &dst, want)?;
                }
                st.busy += t.elapsed();
                st.frames += 1;
                st.bytes += frame.data().len() as u64;
                if tx_out.send((dst, meta, t0)).is_err() {
                    break;
                }
            }
            Ok(st)
        });
        // The write stage runs here, on the caller's thread, which owns the sink.
        let written = (|| -> Result<usize, PipelineError> {
            let mut n = 0;
            for (frame, meta, t0) in rx_out.iter() {
                let t = Instant::now();
                sink.write_frame(&frame, &meta)?;
                write.busy += t.elapsed();
                write.frames += 1;
                write.bytes += frame.data().len() as u64;
                let _ = latency.record(t0.elapsed().as_micros().max(1) as u64);
                let _ = tx_free.try_send(frame);
                n += 1;
            }
            Ok(n)
        })();
        drop(rx_out); // unblocks the filter stage if the write stage stopped early
        let filter = filterer.join().unwrap_or(Err(PipelineError::Panicked));
        let read = reader.join().unwrap_or(Err(PipelineError::Panicked));
        (read, filter, written)
    });

    let outcome = (|| {
        let (read, megapixels) = read?;
        let filter = filter?;
        let written = written?;
        if written != read.frames {
            return Err(PipelineError::FrameCount {
                read: read.frames,
                written,
            });
        }
        Ok((read, megapixels, filter))
    })();
    match outcome {
        Ok((read, megapixels, filter)) => {
            sink.finish()?;
            Ok(RunStats {
                frames: read.frames,
                megapixels,
                wall: start.elapsed(),
                read,
                filter,
                write,
                latency,
                checked,
            })
        }
        Err(e) => {
            sink.abort();
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::CpuSeq;
    use crate::filter::{spec::parse_spec, Filter};
    use crate::io::synthetic::SyntheticSource;
    use std::sync::{Arc, Mutex};

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
            self.seen.lock().unwrap().push((meta.index, frame.data()[0]));
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
            let stats = run(
                &mut src,
                Box::new(sink),
                &mut CpuSeq::new(),
                &plan(),
                None,
                inflight,
                &AtomicBool::new(false),
            )
            .unwrap();
            let seen = seen.lock().unwrap();
            assert_eq!(
                seen.iter().map(|s| s.0).collect::<Vec<_>>(),
                (0..25).collect::<Vec<_>>()
            );
            assert_eq!((stats.frames, stats.write.frames, stats.latency.len()), (25, 25, 25));
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
        let err = run(
            &mut src,
            Box::new(sink),
            &mut CpuSeq::new(),
            &plan(),
            None,
            2,
            &AtomicBool::new(false),
        )
        .unwrap_err();
        assert!(err.to_string().contains("planned failure"), "{err}");
        assert_eq!(*finished.lock().unwrap(), Some(false), "sink aborted, not finished");
        assert_eq!(seen.lock().unwrap().len(), 7);
    }
}
