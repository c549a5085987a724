//! A synthetic source (`synthetic:WIDTHxHEIGHT:FORMAT:FRAMES`), to measure filtering without
//! file I/O limits (with the `null` sink, [`super::NullSink`]). Frames are deterministic noise
//! over a moving gradient, never constant, so nothing runs on zeros; four distinct frames are
//! generated and cycled.
//!
//! To take the source itself out of the measurement, a frame buffer that this source has
//! already filled is handed on as it is: the pipeline recycles a fixed set of buffers, so after
//! the first few frames the source writes nothing (frame `t` then shows whichever of the four
//! patterns its buffer got first). With fresh buffers every frame, frame `t` of a whole run is
//! pattern `t % 4` (a `--segment` part generates its patterns from its own first frame).

use std::path::Path;

use super::{FrameMeta, FrameSlots, IoError, Source, StreamInfo};
use crate::frame::{Frame, PixelFormat};

/// Generates `frames` frames of `format` at `width × height`.
pub struct SyntheticSource {
    spec: String,
    format: PixelFormat,
    width: usize,
    height: usize,
    frames: usize,
    /// The first frame (0, or a `--segment`'s first).
    start: usize,
    next: usize,
    cache: Vec<Frame>,
    /// Buffers (by [`Frame::id`]) this source has filled, most recent last.
    filled: Vec<u64>,
}

/// Distinct frames a synthetic source cycles through.
const CYCLE: usize = 4;

impl SyntheticSource {
    /// Parses `synthetic:WxH:FORMAT:FRAMES`.
    pub fn parse(spec: &str) -> Result<Self, IoError> {
        let err = |msg: &str| IoError::Read {
            path: crate::quote::quote(spec).into(),
            msg: format!(
                "{msg} (write synthetic:WIDTHxHEIGHT:FORMAT:FRAMES, e.g. \
                synthetic:1920x1080:rgb:100)"
            ),
        };
        let parts: Vec<&str> = spec.split(':').collect();
        if parts.len() != 4 || parts[0] != "synthetic" {
            return Err(err("bad synthetic source"));
        }
        let (w, h) = parts[1].split_once('x').ok_or_else(|| err("bad size"))?;
        let (width, height) = match (w.parse::<usize>(), h.parse::<usize>()) {
            (Ok(w), Ok(h)) if w > 0 && h > 0 => (w, h),
            _ => return Err(err("bad size")),
        };
        let format = PixelFormat::parse(parts[2]).map_err(|e| err(&e))?;
        let frames = parts[3]
            .parse::<usize>()
            .map_err(|_| err("bad frame count"))?;
        // Layout only: frames are allocated by the pipeline, within its memory budget.
        Frame::packed_len(format, width, height).map_err(|e| err(&e.to_string()))?;
        Ok(SyntheticSource {
            spec: spec.to_string(),
            format,
            width,
            height,
            frames,
            start: 0,
            next: 0,
            cache: Vec::new(),
            filled: Vec::new(),
        })
    }

    /// The frames' pixel format.
    pub fn format(&self) -> PixelFormat {
        self.format
    }
    /// The frames' (width, height) in pixels.
    pub fn size(&self) -> (usize, usize) {
        (self.width, self.height)
    }
}

/// True for `synthetic:…` inputs.
pub fn is_synthetic(input: &Path) -> bool {
    input.to_str().is_some_and(|s| s.starts_with("synthetic:"))
}

impl Source for SyntheticSource {
    fn describe(&self) -> String {
        self.spec.clone()
    }
    fn len_hint(&self) -> Option<usize> {
        Some(self.frames - self.start)
    }
    fn segment(&mut self, seg: super::segment::Segment) -> Result<(), IoError> {
        let r = seg.range(self.frames);
        (self.start, self.next, self.frames) = (r.start, r.start, r.end);
        Ok(())
    }
    fn stream_info(&self) -> Option<StreamInfo> {
        Some(StreamInfo {
            format: self.format,
            width: self.width,
            height: self.height,
            rate: (25, 1),
            time_base: None,
            full_range: false,
            #[cfg(feature = "video")]
            carry: None,
            y4m: None,
        })
    }

    fn next_frame(
        &mut self,
        slots: &mut dyn FrameSlots,
    ) -> Result<Option<(Frame, FrameMeta)>, IoError> {
        if self.next == self.frames {
            return Ok(None);
        }
        let t = self.next;
        // The slot first: the pipeline checks the frame size against its memory budget there.
        let mut frame = slots.take(self.format, self.width, self.height)?;
        // A few distinct frames are generated once and then cycled, so this source runs at
        // memory-copy speed and never limits what it measures.
        if self.cache.len() < CYCLE.min(self.frames) {
            let pattern = self.generate(t).map_err(|e| IoError::Read {
                path: crate::quote::quote(&self.spec).into(),
                msg: e.to_string(),
            })?;
            self.cache.push(pattern);
        }
        if !self.filled.contains(&frame.id()) {
            let pattern = &self.cache[t % self.cache.len()];
            for p in 0..pattern.planes().len() {
                frame.plane_mut(p).copy_from(&pattern.plane(p));
            }
            if self.filled.len() == 256 {
                self.filled.remove(0);
            }
            self.filled.push(frame.id());
        }
        let meta = FrameMeta {
            index: t,
            name: None,
            pts: None,
            ..Default::default()
        };
        self.next += 1;
        Ok(Some((frame, meta)))
    }
}

impl SyntheticSource {
    fn generate(&self, t: usize) -> Result<Frame, crate::frame::FrameError> {
        let mut frame = Frame::new(self.format, self.width, self.height)?;
        let depth = self.format.depth();
        let bits = depth.bits();
        let mut s = (t as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        for p in 0..frame.planes().len() {
            let n = frame.planes()[p].row_samples();
            for y in 0..frame.planes()[p].height {
                let row = frame.row_mut(p, y);
                for x in 0..n {
                    s ^= s << 13;
                    s ^= s >> 7;
                    s ^= s << 17;
                    // A gradient in the top two bits, noise below, at the format's depth.
                    let gradient = ((x + 2 * y + 3 * t) as u64 & 0xc0) << (bits - 8);
                    let noise = (s >> 40) & ((1 << (bits - 2)) - 1);
                    depth.put(row, x, (gradient | noise) as u16);
                }
            }
        }
        Ok(frame)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_generates_distinct_frames() {
        let mut s = SyntheticSource::parse("synthetic:33x7:nv12:3").unwrap();
        let a = s.next_frame(&mut crate::io::HeapSlots).unwrap().unwrap().0;
        let b = s.next_frame(&mut crate::io::HeapSlots).unwrap().unwrap().0;
        assert_eq!(
            (a.width(), a.height(), a.format()),
            (33, 7, PixelFormat::Nv12)
        );
        assert!(a.data() != b.data() && a.data().iter().any(|&v| v != a.data()[0]));
        assert!(
            s.next_frame(&mut crate::io::HeapSlots).unwrap().is_some()
                && s.next_frame(&mut crate::io::HeapSlots).unwrap().is_none()
        );
        for bad in [
            "synthetic:0x5:rgb:1",
            "synthetic:5x5:bgr:1",
            "synthetic:5x5:rgb",
            "synthetic:5:rgb:2",
            "synthetic:5x5:rgb:-1",
        ] {
            assert!(SyntheticSource::parse(bad).is_err(), "{bad}");
        }
    }
}
