//! A source whose first frame is read ahead: [`Primed`] reads it (into a heap frame) when it is
//! made, while something else that the run must wait for is being prepared — the CLI creates
//! the CUDA context (~200 ms) on another thread meanwhile, so opening a video and decoding its
//! first frame no longer come after it. The run then gets that first frame, or the error or end
//! of input that reading it gave, exactly as the source would have given it, copied into one
//! of the run's own buffers; every later frame comes straight from the source. Only a stream
//! whose frames are known to fit the memory budget and that has no other streams is primed
//! ([`prime`]): a frame too large is still refused by the run's own check before anything is
//! allocated, and audio or subtitle packets are never read before a sink takes them.

use std::path::PathBuf;

use super::{segment, FrameMeta, FrameSlots, HeapSlots, IoError, Payload, Source, StreamInfo};
use crate::device::Offload;
use crate::frame::Frame;

/// What reading the first frame gave.
type First = Result<Option<(Frame, FrameMeta)>, IoError>;

/// `inner` with its first frame already read (see the module).
pub struct Primed {
    inner: Box<dyn Source>,
    first: Option<First>,
}

/// `inner` with its first frame read now, when its stream (format and size) is known,
/// `buffers` frames of it fit the memory budget ([`crate::memory::check`]) and it has no other
/// streams to carry; else `inner` as it is, so that a frame too large is refused by the run's
/// own check before any allocation, and no audio packet is read before a sink takes it.
pub fn prime(inner: Box<dyn Source>, buffers: usize) -> Box<dyn Source> {
    if primable(inner.as_ref(), buffers) {
        Box::new(Primed::new(inner))
    } else {
        inner
    }
}

/// Whether `source`'s frame size is known, `buffers` such frames fit the memory budget, and it
/// has no other streams: their packets, read along with the first frame, go only to a sink
/// that has already claimed them (`video::Carry`), and the sink comes later.
fn primable(source: &dyn Source, buffers: usize) -> bool {
    source.stream_info().is_some_and(|s| {
        !s.has_passengers()
            && Frame::packed_len(s.format, s.width, s.height).is_ok_and(|len| {
                crate::memory::check("", (len as u64).saturating_mul(buffers as u64)).is_ok()
            })
    })
}

impl Primed {
    /// Reads `inner`'s first frame now. Its stream, length and files are already known, and
    /// `--segment` must be applied before.
    pub fn new(mut inner: Box<dyn Source>) -> Primed {
        let first = inner.next_frame(&mut HeapSlots);
        Primed {
            inner,
            first: Some(first),
        }
    }
}

impl Source for Primed {
    fn describe(&self) -> String {
        self.inner.describe()
    }
    fn files(&self) -> Vec<PathBuf> {
        self.inner.files()
    }
    fn len_hint(&self) -> Option<usize> {
        self.inner.len_hint()
    }
    fn segment(&mut self, seg: segment::Segment) -> Result<(), IoError> {
        Err(IoError::Unsplittable {
            input: self.describe(),
            msg: format!("--segment {seg} after its first frame was read"),
        })
    }
    fn stream_info(&self) -> Option<StreamInfo> {
        self.inner.stream_info()
    }
    fn declare_stream(&mut self, rate: (i32, i32)) -> Result<Option<StreamInfo>, IoError> {
        self.inner.declare_stream(rate)
    }
    fn next_frame(
        &mut self,
        slots: &mut dyn FrameSlots,
    ) -> Result<Option<(Frame, FrameMeta)>, IoError> {
        match self.first.take() {
            Some(first) => match first? {
                Some((frame, meta)) => Ok(Some((slots.adopt(frame)?, meta))),
                None => Ok(None),
            },
            None => self.inner.next_frame(slots),
        }
    }
    fn next_payload(
        &mut self,
        slots: &mut dyn FrameSlots,
        device: Option<&dyn Offload>,
    ) -> Result<Option<(Payload, FrameMeta)>, IoError> {
        if self.first.is_some() {
            return Ok(self.next_frame(slots)?.map(|(f, m)| (Payload::Host(f), m)));
        }
        self.inner.next_payload(slots, device)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::synthetic::SyntheticSource;

    fn frames(mut s: Box<dyn Source>) -> Vec<(Vec<u8>, usize)> {
        let mut out = Vec::new();
        while let Some((f, m)) = s.next_frame(&mut HeapSlots).unwrap() {
            out.push((f.data().to_vec(), m.index));
        }
        out
    }

    #[test]
    fn gives_the_same_frames_as_the_source() {
        let spec = "synthetic:33x17:rgb:5";
        let plain = frames(Box::new(SyntheticSource::parse(spec).unwrap()));
        let primed = Primed::new(Box::new(SyntheticSource::parse(spec).unwrap()));
        assert_eq!(primed.len_hint(), Some(5));
        assert_eq!(primed.stream_info().unwrap().width, 33);
        assert_eq!(frames(Box::new(primed)), plain);
        assert_eq!(plain.len(), 5);
    }

    /// A source whose first read fails: the error comes at the run's first read, then the
    /// frames after it.
    struct FailsFirst(usize);

    impl Source for FailsFirst {
        fn describe(&self) -> String {
            "fails-first".into()
        }
        fn len_hint(&self) -> Option<usize> {
            None
        }
        fn next_frame(
            &mut self,
            slots: &mut dyn FrameSlots,
        ) -> Result<Option<(Frame, FrameMeta)>, IoError> {
            self.0 += 1;
            match self.0 {
                1 => Err(IoError::BadFrame {
                    input: "fails-first".into(),
                    index: 0,
                    msg: "corrupt".into(),
                }),
                2 => {
                    let f = slots.take(crate::frame::PixelFormat::Gray8, 4, 2)?;
                    Ok(Some((f, FrameMeta::default())))
                }
                _ => Ok(None),
            }
        }
    }

    #[test]
    fn primes_only_frames_whose_pools_fit_the_memory_budget() {
        let small = SyntheticSource::parse("synthetic:64x48:rgb:3").unwrap();
        assert!(primable(&small, 17));
        let huge = SyntheticSource::parse("synthetic:65536x65536:rgba:1").unwrap();
        assert!(!primable(&huge, 3));
        // Image inputs have no stream before their first frame: never primed.
        assert!(!primable(&FailsFirst(0), 3));
    }

    #[test]
    fn replays_an_error_then_goes_on() {
        let mut p = Primed::new(Box::new(FailsFirst(0)));
        assert!(matches!(
            p.next_frame(&mut HeapSlots),
            Err(IoError::BadFrame { .. })
        ));
        assert!(p.next_frame(&mut HeapSlots).unwrap().is_some());
        assert!(p.next_frame(&mut HeapSlots).unwrap().is_none());
        assert!(p.segment(segment::Segment::parse("1/2").unwrap()).is_err());
    }
}
