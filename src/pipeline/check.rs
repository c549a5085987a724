//! `--check`: every frame is filtered again by the reference backend (cpu-seq) and compared
//! byte for byte with what the run produced; the first difference fails the run, naming the
//! frame, plane, row and byte.

use std::sync::Mutex;

use super::PipelineError;
use crate::backend::Backend;
use crate::filter::Plan;
use crate::frame::Frame;

/// The reference backend, shared by the lanes of a run, and this lane's output buffer
/// (reused while frames keep their shape).
pub(super) struct Checker<'a, 'b> {
    backend: &'a Mutex<&'b mut dyn Backend>,
    reference: Option<Frame>,
}

impl<'a, 'b> Checker<'a, 'b> {
    pub fn new(backend: &'a Mutex<&'b mut dyn Backend>) -> Self {
        Checker {
            backend,
            reference: None,
        }
    }

    /// Filters `input` with the reference backend and compares the result with `got`.
    pub fn verify(
        &mut self,
        plan: &Plan,
        index: usize,
        input: &Frame,
        got: &Frame,
    ) -> Result<(), PipelineError> {
        let want = match self.reference.take() {
            Some(f) if f.same_shape(input) => self.reference.insert(f),
            _ => self
                .reference
                .insert(Frame::try_like(input).map_err(|e| PipelineError::Io(e.into()))?),
        };
        self.backend
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .filter_frame(plan, input, want)
            .map_err(|source| PipelineError::Backend { index, source })?;
        compare(index, got, want)
    }
}

fn compare(index: usize, got: &Frame, want: &Frame) -> Result<(), PipelineError> {
    let mut first = None;
    let mut count = 0;
    for (p, l) in got.planes().iter().enumerate() {
        for row in 0..l.height {
            let (g, w) = (got.row(p, row), want.row(p, row));
            if g == w {
                continue;
            }
            for col in 0..l.row_samples() {
                let (g, w) = (l.depth.get(g, col), l.depth.get(w, col));
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
