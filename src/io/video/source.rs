//! Decoding: the best video stream of a file, frame by frame into pipeline buffers, with bad
//! frames reported (and FFmpeg's first complaint about them folded in) so `--skip-bad` can go
//! on, and truncated files caught at the end. Everything else in the file (other streams'
//! packets, tags, side data, chapters) is gathered into a [`Carry`] for a video output.

use std::path::{Path, PathBuf};

use ff::codec::threading;
use ff::{Rational, Rescale};
use ffmpeg_next as ff;

use super::carry::{Carried, Carry, FRAME_SIDE_DATA};
use super::convert::{from_ff, repacked_twin, Converter};
use super::cut::{Cut, Place};
use super::{ff_pixel, init, map_pixel, ratio, take_logged, IO_BUFFER};
use crate::frame::Frame;
use crate::io::stop::{StopFlag, StopRead};
use crate::io::{FrameMeta, FrameSlots, IoError, Source, StreamInfo};

/// A frame-threaded decoder for the video stream `st`.
fn open_decoder(st: &ff::format::stream::Stream<'_>) -> Result<ff::decoder::Video, String> {
    let mut ctx = ff::codec::context::Context::from_parameters(st.parameters())
        .map_err(|e| format!("video stream: {e}"))?;
    ctx.set_threading(threading::Config {
        kind: threading::Type::Frame,
        count: 0,
        ..Default::default()
    });
    ctx.decoder()
        .video()
        .map_err(|e| format!("no decoder for this video stream in the linked FFmpeg ({e})"))
}

/// Opens `path` ourselves and gives FFmpeg a reader: the file (seekable) when it is a regular
/// file, else a reader that notices `stop` while it waits (a FIFO, a character device).
fn open_input(path: &Path, stop: Option<StopFlag>) -> Result<ff::format::context::Input, IoError> {
    let read = StopRead::open(path, stop.clone()).map_err(|e| IoError::open_input(path, e))?;
    let meta = read
        .file()
        .metadata()
        .map_err(|e| IoError::open_input(path, e))?;
    let video_err = |msg: String| IoError::Video {
        path: path.to_path_buf(),
        msg,
    };
    if meta.is_dir() {
        return Err(video_err("is a directory".into()));
    }
    let io = if meta.is_file() {
        ff::format::context::StreamIo::from_read_seek_with_capacity(read.into_file(), IO_BUFFER)
    } else {
        ff::format::context::StreamIo::from_read_with_capacity(read, IO_BUFFER)
    }
    .map_err(|e| video_err(format!("cannot read ({e})")))?;
    // The name is only a hint for the format probe (never opened).
    let name = path.to_string_lossy();
    let opened = match stop {
        Some(stop) => {
            ff::format::input_from_stream_with_interrupt(io, Some(&name), None, move || {
                stop.load(std::sync::atomic::Ordering::Relaxed)
            })
        }
        None => ff::format::input_from_stream(io, Some(&name), None),
    };
    opened.map_err(|e| video_err(format!("not a video file FFmpeg can read ({e})")))
}

/// Decodes the best video stream of a file.
pub struct VideoSource {
    path: PathBuf,
    input: ff::format::context::Input,
    stream: usize,
    decoder: ff::decoder::Video,
    info: StreamInfo,
    frames_hint: Option<usize>,
    index: usize,
    decoded: ff::frame::Video,
    /// Planar RGB repacked as interleaved RGB: the converter and its output frame.
    repack: Option<(Converter, ff::frame::Video)>,
    packet: ff::Packet,
    eof_sent: bool,
    /// What the container declares, to catch truncated files.
    declared: Declared,
    /// Start of the first frame and end of the last one so far, in the stream's time base.
    span: Option<(i64, i64)>,
    /// One frame at the nominal rate, in the stream's time base.
    nominal: i64,
    end_checked: bool,
    /// Everything a video output keeps besides the frames, and the sender of the other
    /// streams' packets (dropped at the end of the file).
    carry: Carry,
    packets: Option<crossbeam_channel::Sender<Carried>>,
    /// `--segment`: the part of the stream this source delivers.
    cut: Option<Cut>,
}

/// The length a container declares for the video stream.
#[derive(Clone, Copy, Debug)]
enum Declared {
    /// A frame count (mp4's sample table, for instance): exact.
    Frames(usize),
    /// A duration in seconds (the stream's, or the file's when the video is all it holds): a
    /// time, compared with the time the decoded frames span, so variable frame rates pass.
    Seconds(f64),
    Nothing,
}

impl VideoSource {
    /// Opens `path`; with `stop`, a read blocked on a FIFO ends when it is raised.
    pub fn open(path: &Path, stop: Option<StopFlag>) -> Result<Self, IoError> {
        let err = |msg: String| IoError::Video {
            path: path.to_path_buf(),
            msg,
        };
        init().map_err(|e| err(format!("FFmpeg did not start: {e}")))?;
        let input = open_input(path, stop)?;
        let st = input
            .streams()
            .best(ff::media::Type::Video)
            .ok_or_else(|| err("holds no video stream".into()))?;
        let stream = st.index();
        let decoder = open_decoder(&st).map_err(err)?;
        let (w, h) = (decoder.width(), decoder.height());
        // Planar GBR (RGB video) is repacked into interleaved RGB: the same samples.
        let repack = match repacked_twin(decoder.format()) {
            Some(twin) => Some((
                twin,
                Converter::repack(decoder.format(), ff_pixel(twin), w, h).map_err(&err)?,
            )),
            None => None,
        };
        let native = match &repack {
            Some((twin, _)) => Some((*twin, true)),
            None => map_pixel(decoder.format()),
        };
        let (format, full_range) = native.ok_or_else(|| {
            err(format!(
                "pixel format {} is not supported (convflow filters gray, rgb24/rgb48, \
                rgba/rgba64, planar gbr, planar yuv 4:2:0/4:2:2/4:4:4 and nv12/p010/p016 at 8 \
                to 16 bits; --pix-fmt FMT converts, e.g. --pix-fmt yuv444p16)",
                decoder
                    .format()
                    .descriptor()
                    .map_or("unknown".to_string(), |d| d.name().to_string())
            ))
        })?;
        // Full range: a yuvj format, or the stream's tag (deeper formats have no yuvj twin).
        let full_range = full_range || decoder.color_range() == ff::color::Range::JPEG;
        let rate = ratio(st.avg_frame_rate())
            .or_else(|| ratio(st.rate()))
            .unwrap_or((25, 1));
        let info = StreamInfo {
            format,
            width: decoder.width() as usize,
            height: decoder.height() as usize,
            rate,
            time_base: ratio(st.time_base()),
            y4m: None,
            full_range,
            carry: None,
        };
        Frame::new(format, info.width, info.height).map_err(|e| err(e.to_string()))?;
        let frames_hint = usize::try_from(st.frames()).ok().filter(|&n| n > 0);
        // The stream's own duration, or Matroska's per-track DURATION tag.
        let stream_secs = (st.duration() > 0)
            .then(|| st.duration() as f64 * f64::from(st.time_base()))
            .or_else(|| st.metadata().get("DURATION").and_then(parse_clock));
        // The file's duration stands for the video's only when nothing else is in it.
        let file_secs = (input.duration() > 0 && input.nb_streams() == 1)
            .then(|| input.duration() as f64 / f64::from(ff::ffi::AV_TIME_BASE));
        let declared = match (frames_hint, stream_secs.or(file_secs)) {
            (Some(n), _) => Declared::Frames(n),
            (None, Some(s)) => Declared::Seconds(s),
            (None, None) => Declared::Nothing,
        };
        let tb = st.time_base();
        let nominal = if tb.numerator() > 0 && tb.denominator() > 0 {
            1i64.rescale(Rational(rate.1, rate.0), tb).max(1)
        } else {
            1
        };
        let (carry, packets) = Carry::gather(&input, stream, &decoder);
        let info = StreamInfo {
            carry: Some(carry.clone()),
            ..info
        };
        Ok(VideoSource {
            path: path.to_path_buf(),
            input,
            stream,
            decoder,
            info,
            frames_hint,
            index: 0,
            decoded: ff::frame::Video::empty(),
            repack: repack.map(|(twin, c)| (c, ff::frame::Video::new(ff_pixel(twin), w, h))),
            packet: ff::Packet::empty(),
            eof_sent: false,
            declared,
            span: None,
            nominal,
            end_checked: false,
            carry,
            packets: Some(packets),
            cut: None,
        })
    }

    /// Seeks to the keyframe at or before `at` (stream time base), and starts decoding afresh.
    fn seek_to(&mut self, at: i64) -> Result<(), IoError> {
        let tb = self
            .input
            .stream(self.stream)
            .map_or(Rational(1, 1), |s| s.time_base());
        let ts = at.rescale_with(tb, Rational(1, ff::ffi::AV_TIME_BASE), ff::Rounding::Down);
        self.input
            .seek(ts, ..ts)
            .map_err(|e| IoError::Unsplittable {
                input: crate::quote::path(&self.path),
                msg: format!("--segment: cannot seek in this file ({e})"),
            })?;
        self.decoder.flush();
        self.eof_sent = false;
        if let Some(c) = &mut self.cut {
            (c.aim, c.landed) = (Some(at), false);
            c.held.clear();
        }
        Ok(())
    }

    /// After a seek that missed the part's start: seeks earlier, twice as far back each time,
    /// and from the stream's first timestamp reads the file again from its first byte.
    fn seek_earlier(&mut self) -> Result<(), IoError> {
        let Some(cut) = &mut self.cut else {
            return Ok(());
        };
        let aim = cut.aim.unwrap_or(cut.start).saturating_sub(cut.step);
        cut.step = cut.step.saturating_mul(2);
        take_logged();
        if aim > cut.start {
            self.seek_to(aim)
        } else {
            self.rewind()
        }
    }

    /// Whether the input ended with no frame decoded since the last seek: the seek landed on
    /// pictures that need frames before them and no keyframe followed (MPEG-TS seeks by byte
    /// position), so it missed as surely as one that lands late.
    fn landed_nowhere(&self) -> bool {
        self.cut
            .as_ref()
            .is_some_and(|c| !c.landed && c.aim.is_some())
    }

    /// Reads the file again from its first byte (a seek to the start may land on a later
    /// keyframe in containers that seek by byte position, MPEG-TS for one).
    fn rewind(&mut self) -> Result<(), IoError> {
        self.input = open_input(&self.path, None)?;
        self.decoder.flush();
        self.eof_sent = false;
        if let Some(c) = &mut self.cut {
            (c.aim, c.landed) = (None, true);
            c.held.clear();
        }
        Ok(())
    }

    /// After the part's last frame: the copied streams' packets up to its end time (they may
    /// be stored a little after the video's), read for a few seconds' worth of video.
    fn finish_part(&mut self) {
        let Some(hi) = self.cut.as_ref().and_then(|c| c.hi) else {
            return;
        };
        let vtb = self
            .input
            .stream(self.stream)
            .map_or(Rational(1, 1), |s| s.time_base());
        let margin = 5i64.rescale(Rational(1, 1), vtb);
        let mut packet = ff::Packet::empty();
        while packet.read(&mut self.input).is_ok() {
            if packet.stream() == self.stream {
                if packet.dts().is_some_and(|d| d >= hi.saturating_add(margin)) {
                    break;
                }
                continue;
            }
            self.pass_on(std::mem::replace(&mut packet, ff::Packet::empty()));
        }
    }

    /// Sends another stream's packet to the sink (when one claimed them), if it belongs to the
    /// part being read.
    fn pass_on(&mut self, p: ff::Packet) {
        let Some(tx) = self.packets.as_ref().filter(|_| self.carry.claimed()) else {
            return;
        };
        if let Some(cut) = &mut self.cut {
            let tb = |i: usize| {
                self.input
                    .stream(i)
                    .map_or(Rational(1, 1), |s| s.time_base())
            };
            let vtb = tb(self.stream);
            let t = p.pts().or(p.dts()).map(|t| t.rescale(tb(p.stream()), vtb));
            if !cut.keeps(t) {
                return;
            }
            if !cut.landed {
                cut.held.push(p);
                return;
            }
        }
        // A sink that went away wants no more.
        let _ = tx.send((p.stream(), p));
    }

    /// At the end of the stream: an error if clearly fewer frames came than the container
    /// declares, or they span clearly less time than it declares (a truncated file), once.
    fn end(&mut self) -> Result<Option<(Frame, FrameMeta)>, IoError> {
        if !self.end_checked {
            self.finish_part();
        }
        self.packets = None; // the other streams are complete
        if std::mem::replace(&mut self.end_checked, true) {
            return Ok(None);
        }
        // A part before the last ends early; the last one counts only its own frames.
        let declared = match (&self.cut, self.declared) {
            (None, d) => d,
            (Some(c), Declared::Seconds(s)) if c.hi.is_none() => Declared::Seconds(s),
            (Some(_), _) => Declared::Nothing,
        };
        let tb = f64::from(
            self.input
                .stream(self.stream)
                .map_or(Rational(0, 1), |s| s.time_base()),
        );
        match declared {
            // Two frames of slack for edit lists and rounding.
            Declared::Frames(n) if self.index + 2 < n => Err(self.bad(format!(
                "the file ends after {} frame(s) but its container declares {n}: truncated",
                self.index
            ))),
            Declared::Seconds(want) if tb > 0.0 => {
                // Durations are written either as a span or as the last frame's end (when the
                // first timestamp is not 0): what the frames reach by either measure.
                let got = self.span.map_or(0.0, |(a, b)| (b - a).max(b) as f64 * tb);
                // Two nominal frames of slack, as for counts.
                if got + 2.0 * self.nominal as f64 * tb + 1e-3 < want {
                    Err(self.bad(format!(
                        "the file ends after {} frame(s) spanning {got:.3} s but its container \
                         declares {want:.3} s: truncated",
                        self.index
                    )))
                } else {
                    Ok(None)
                }
            }
            _ => Ok(None),
        }
    }

    /// A bad-frame error, with the first error FFmpeg logged about it.
    fn bad(&self, msg: String) -> IoError {
        let msg = match take_logged() {
            Some(log) => format!("{msg}; FFmpeg: {log}"),
            None => msg,
        };
        IoError::BadFrame {
            input: crate::quote::path(&self.path),
            index: self.index,
            msg,
        }
    }

    /// Feeds the decoder the next packet of our stream (or the end of the stream).
    fn feed(&mut self) -> Result<(), IoError> {
        loop {
            match self.packet.read(&mut self.input) {
                Ok(()) if self.packet.stream() != self.stream => {
                    let p = std::mem::replace(&mut self.packet, ff::Packet::empty());
                    self.pass_on(p);
                    continue;
                }
                Ok(()) => {
                    return match self.decoder.send_packet(&self.packet) {
                        Ok(()) => Ok(()),
                        Err(ff::Error::Other { errno }) if errno == ff::util::error::EAGAIN => {
                            Ok(())
                        }
                        Err(e) => Err(self.bad(format!("corrupt data ({e})"))),
                    };
                }
                Err(ff::Error::Eof) => {
                    self.eof_sent = true;
                    // The other streams are complete, unless a seek that decoded nothing will
                    // read the file again (`landed_nowhere`).
                    if !self.landed_nowhere() {
                        self.packets = None;
                    }
                    let _ = self.decoder.send_eof();
                    return Ok(());
                }
                Err(e) => {
                    // A damaged container: what was decoded so far stays valid.
                    self.eof_sent = true;
                    let _ = self.decoder.send_eof();
                    return Err(self.bad(format!("unreadable data ({e})")));
                }
            }
        }
    }
}

impl Source for VideoSource {
    fn describe(&self) -> String {
        crate::quote::path(&self.path)
    }
    fn files(&self) -> Vec<PathBuf> {
        vec![self.path.clone()]
    }
    fn len_hint(&self) -> Option<usize> {
        self.frames_hint
    }
    /// Cuts by time: the parts' boundaries are the stream's start plus k/N of its duration.
    /// Reading starts at the keyframe at or before this part's start (earlier still if the
    /// demuxer lands after it); frames shown before the start are decoded and dropped, and the
    /// part ends before the first frame shown at or after the next part's start. Other streams'
    /// packets go with the part their timestamps fall in. Frames keep their timestamps; their
    /// index counts from the part's first frame.
    fn segment(&mut self, seg: crate::io::segment::Segment) -> Result<(), IoError> {
        let unsplittable = |msg: String| IoError::Unsplittable {
            input: crate::quote::path(&self.path),
            msg: format!("--segment {seg}: {msg}"),
        };
        if self.index > 0 || self.cut.is_some() {
            return Err(unsplittable("frames were already read".into()));
        }
        if !std::fs::metadata(&self.path).is_ok_and(|m| m.is_file()) {
            return Err(unsplittable(
                "a video from a pipe can only be read whole; give the file".into(),
            ));
        }
        let st = self
            .input
            .stream(self.stream)
            .ok_or_else(|| unsplittable("no video stream".into()))?;
        let tb = st.time_base();
        let start = Some(st.start_time())
            .filter(|&t| t != ff::ffi::AV_NOPTS_VALUE)
            .unwrap_or(0);
        let duration = if st.duration() > 0 {
            st.duration()
        } else if self.input.duration() > 0 {
            self.input
                .duration()
                .rescale(Rational(1, ff::ffi::AV_TIME_BASE), tb)
        } else {
            0
        };
        if duration <= 0 || tb.numerator() <= 0 {
            return Err(unsplittable(
                "the file does not say how long its video is, so it cannot be cut by time".into(),
            ));
        }
        let (lo, hi) = seg.times(start, duration);
        // Parts are cut by time: how many frames one holds is known only once it is read.
        self.frames_hint = None;
        self.cut = Some(Cut {
            lo,
            hi,
            aim: None,
            landed: lo.is_none(),
            step: 1i64.rescale(Rational(1, 1), tb).max(1),
            start,
            held: Vec::new(),
        });
        match lo {
            Some(lo) => self.seek_to(lo),
            None => Ok(()),
        }
    }
    fn stream_info(&self) -> Option<StreamInfo> {
        Some(self.info.clone())
    }

    fn next_frame(
        &mut self,
        slots: &mut dyn FrameSlots,
    ) -> Result<Option<(Frame, FrameMeta)>, IoError> {
        if self.end_checked && self.cut.is_some() {
            return Ok(None); // the part has ended
        }
        loop {
            match self.decoder.receive_frame(&mut self.decoded) {
                Ok(()) => {}
                Err(ff::Error::Eof) if self.landed_nowhere() => {
                    self.seek_earlier()?;
                    continue;
                }
                Err(ff::Error::Eof) => return self.end(),
                Err(ff::Error::Other { errno }) if errno == ff::util::error::EAGAIN => {
                    if self.eof_sent && self.landed_nowhere() {
                        self.seek_earlier()?;
                        continue;
                    }
                    if self.eof_sent {
                        return self.end();
                    }
                    self.feed()?;
                    continue;
                }
                Err(e) => {
                    let e = self.bad(format!("could not be decoded ({e})"));
                    self.index += 1;
                    return Err(e);
                }
            }
            let Some(cut) = &mut self.cut else { break };
            let Some(pts) = self.decoded.timestamp().or(self.decoded.pts()) else {
                return Err(IoError::Video {
                    path: self.path.clone(),
                    msg: "--segment: a frame has no timestamp, so the video cannot be cut by time"
                        .into(),
                });
            };
            let place = cut.place(pts, self.decoded.is_key());
            if !matches!(place, Place::Missed) && !cut.held.is_empty() {
                // The seek landed well: what was read since goes on.
                for p in std::mem::take(&mut cut.held) {
                    self.pass_on(p);
                }
            }
            match place {
                Place::In => break,
                // Decoded from the keyframe on, shown before the part: dropped (with what the
                // decoder said about the frames it could not rebuild before the keyframe).
                Place::Before => {
                    take_logged();
                }
                Place::After => return self.end(),
                Place::Missed => self.seek_earlier()?,
            }
        }
        let i = &self.info;
        let d = &self.decoded;
        let own = match &self.repack {
            Some((c, _)) => d.format() == c.from,
            None => map_pixel(d.format()).map(|m| m.0) == Some(i.format),
        };
        if d.width() as usize != i.width || d.height() as usize != i.height || !own {
            let e = self.bad(format!(
                "frame is {:?} {}x{} but the stream started as {} {}x{} (size changes are not \
                supported)",
                d.format(),
                d.width(),
                d.height(),
                i.format,
                i.width,
                i.height
            ));
            self.index += 1;
            return Err(e);
        }
        // (Before a buffer is taken from the pool: an error must not keep one.)
        // A frame the decoder reports damaged (it concealed errors, or logged one since the
        // last good frame) is a bad frame, not a good one with garbage in it.
        // SAFETY: plain fields of a decoded frame.
        let (flags, errors) = unsafe {
            (
                (*self.decoded.as_ptr()).flags,
                (*self.decoded.as_ptr()).decode_error_flags,
            )
        };
        let name = self
            .decoder
            .codec()
            .map_or(String::new(), |c| c.name().to_string());
        // Before the first good frame, decoders complain about what they skip (a stream that
        // starts mid-GOP): only the frame's own flags count then.
        let complaint = super::take_logged_from(&name);
        let complained = complaint.is_some() && self.index > 0;
        if flags & ff::ffi::AV_FRAME_FLAG_CORRUPT != 0 || errors != 0 || complained {
            let why = complaint
                .or_else(take_logged)
                .map_or(String::new(), |c| format!("; FFmpeg: {c}"));
            let e = IoError::BadFrame {
                input: crate::quote::path(&self.path),
                index: self.index,
                msg: format!("damaged data (the decoder concealed errors){why}"),
            };
            take_logged();
            self.index += 1;
            return Err(e);
        }
        let mut frame = slots.take(i.format, i.width, i.height)?;
        let copied = match &mut self.repack {
            Some((c, out)) => c
                .run(&self.decoded, out)
                .and_then(|()| from_ff(out, &mut frame)),
            None => from_ff(&self.decoded, &mut frame),
        };
        if let Err(e) = copied {
            let e = self.bad(e);
            self.index += 1;
            return Err(e);
        }
        let d = &self.decoded;
        take_logged(); // what FFmpeg said before this good frame concerns no error to come
        let pts = d.timestamp().or(d.pts());
        // SAFETY: plain fields of a decoded frame; its side-data array holds nb_side_data
        // valid entries.
        let (duration, side_data) = unsafe {
            let f = &*d.as_ptr();
            let side: crate::io::SideData = (0..f.nb_side_data.max(0) as usize)
                .map(|i| &**f.side_data.add(i))
                .filter(|s| FRAME_SIDE_DATA.contains(&s.type_) && !s.data.is_null())
                .map(|s| {
                    (
                        s.type_ as u32,
                        std::slice::from_raw_parts(s.data, s.size).to_vec(),
                    )
                })
                .collect();
            ((f.pkt_duration > 0).then_some(f.pkt_duration), side)
        };
        if let Some(p) = pts {
            let end = p + duration.unwrap_or(self.nominal);
            self.span = Some(self.span.map_or((p, end), |(a, b)| (a.min(p), b.max(end))));
        }
        let meta = FrameMeta {
            index: self.index,
            name: None,
            pts,
            duration,
            side_data,
        };
        self.index += 1;
        Ok(Some((frame, meta)))
    }
}

/// Seconds of a clock time `HH:MM:SS.fraction` (Matroska's DURATION tag).
fn parse_clock(text: &str) -> Option<f64> {
    let mut parts = text.trim().split(':');
    let (h, m, s) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let secs =
        h.parse::<f64>().ok()? * 3600.0 + m.parse::<f64>().ok()? * 60.0 + s.parse::<f64>().ok()?;
    (secs.is_finite() && secs > 0.0).then_some(secs)
}

#[cfg(test)]
mod tests {
    #[test]
    fn clock_times() {
        assert_eq!(super::parse_clock("00:00:02.020000000"), Some(2.02));
        assert_eq!(super::parse_clock("01:02:03.5"), Some(3723.5));
        for bad in ["", "2.0", "a:b:c", "00:00:00.000", "1:2:3:4", "00:00:inf"] {
            assert_eq!(super::parse_clock(bad), None, "{bad}");
        }
    }
}
