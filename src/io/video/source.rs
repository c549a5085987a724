//! Decoding: the best video stream of a file, frame by frame into pipeline buffers, with bad
//! frames reported (and FFmpeg's first complaint about them folded in) so `--skip-bad` can go
//! on, and truncated files caught at the end.

use std::path::{Path, PathBuf};

use ff::codec::threading;
use ffmpeg_next as ff;

use super::{init, map_pixel, ratio, take_logged, IO_BUFFER};
use crate::frame::Frame;
use crate::io::stop::{StopFlag, StopRead};
use crate::io::{FrameMeta, FrameSlots, IoError, Source, StreamInfo};

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
    packet: ff::Packet,
    eof_sent: bool,
    /// Frames the container declares (frame count or duration), to catch truncated files.
    expected: Option<usize>,
    end_checked: bool,
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
        let mut ctx = ff::codec::context::Context::from_parameters(st.parameters())
            .map_err(|e| err(format!("video stream: {e}")))?;
        ctx.set_threading(threading::Config {
            kind: threading::Type::Frame,
            count: 0,
            ..Default::default()
        });
        let decoder = ctx.decoder().video().map_err(|e| {
            err(format!(
                "no decoder for this video stream in the linked FFmpeg ({e})"
            ))
        })?;
        let (format, full_range) = map_pixel(decoder.format()).ok_or_else(|| {
            err(format!(
                "pixel format {:?} is not supported (convflow filters 8-bit gray, rgb24, rgba, \
                yuv420p/422p/444p and nv12; convert first, e.g. ffmpeg -i IN -pix_fmt yuv420p OUT)",
                decoder.format()
            ))
        })?;
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
        };
        Frame::new(format, info.width, info.height).map_err(|e| err(e.to_string()))?;
        let frames_hint = usize::try_from(st.frames()).ok().filter(|&n| n > 0);
        let fps = rate.0 as f64 / rate.1 as f64;
        let stream_secs =
            (st.duration() > 0).then(|| st.duration() as f64 * f64::from(st.time_base()));
        // The file's duration stands for the video's only when nothing else is in it.
        let file_secs = (input.duration() > 0 && input.nb_streams() == 1)
            .then(|| input.duration() as f64 / f64::from(ff::ffi::AV_TIME_BASE));
        let expected = frames_hint.or_else(|| {
            stream_secs
                .or(file_secs)
                .map(|s| (s * fps).round() as usize)
        });
        Ok(VideoSource {
            path: path.to_path_buf(),
            input,
            stream,
            decoder,
            info,
            frames_hint,
            index: 0,
            decoded: ff::frame::Video::empty(),
            packet: ff::Packet::empty(),
            eof_sent: false,
            expected,
            end_checked: false,
        })
    }

    /// At the end of the stream: an error if clearly fewer frames came than the container
    /// declares (a truncated file), once.
    fn end(&mut self) -> Result<Option<(Frame, FrameMeta)>, IoError> {
        if std::mem::replace(&mut self.end_checked, true) {
            return Ok(None);
        }
        match self.expected {
            // Two frames of slack for edit lists and rounding.
            Some(n) if self.index + 2 < n => Err(self.bad(format!(
                "the file ends after {} frame(s) but its container declares about {n}: truncated",
                self.index
            ))),
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
                Ok(()) if self.packet.stream() != self.stream => continue,
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
    fn stream_info(&self) -> Option<StreamInfo> {
        Some(self.info.clone())
    }

    fn next_frame(
        &mut self,
        slots: &mut dyn FrameSlots,
    ) -> Result<Option<(Frame, FrameMeta)>, IoError> {
        loop {
            match self.decoder.receive_frame(&mut self.decoded) {
                Ok(()) => break,
                Err(ff::Error::Eof) => return self.end(),
                Err(ff::Error::Other { errno }) if errno == ff::util::error::EAGAIN => {
                    if self.eof_sent {
                        return self.end();
                    }
                    self.feed()?;
                }
                Err(e) => {
                    let e = self.bad(format!("could not be decoded ({e})"));
                    self.index += 1;
                    return Err(e);
                }
            }
        }
        let d = &self.decoded;
        let i = &self.info;
        if d.width() as usize != i.width
            || d.height() as usize != i.height
            || map_pixel(d.format()).map(|m| m.0) != Some(i.format)
        {
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
        let mut frame = slots.take(i.format, i.width, i.height)?;
        for p in 0..frame.planes().len() {
            let (stride, rows) = (d.stride(p), frame.planes()[p].height);
            let src = d.data(p);
            for y in 0..rows {
                let row = frame.row_mut(p, y);
                let n = row.len();
                // A decoder's plane that is shorter than its size says (or has a negative
                // stride) is an error, not a panic.
                let Some(line) = y
                    .checked_mul(stride)
                    .and_then(|o| src.get(o..o.checked_add(n)?))
                else {
                    let e = self.bad(format!(
                        "plane {p} of the decoded frame is not laid out as expected"
                    ));
                    self.index += 1;
                    return Err(e);
                };
                row.copy_from_slice(line);
            }
        }
        take_logged(); // what FFmpeg said before this good frame concerns no error to come
        let meta = FrameMeta {
            index: self.index,
            name: None,
            pts: d.timestamp().or(d.pts()),
        };
        self.index += 1;
        Ok(Some((frame, meta)))
    }
}
