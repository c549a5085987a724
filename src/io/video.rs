//! Video files through FFmpeg (ffmpeg-next): any container and codec the linked FFmpeg decodes
//! as a [`Source`], and a [`Sink`] that encodes into the container named by the output's
//! extension.
//!
//! Frames stay in their native pixel format: 8-bit yuv420p/422p/444p (and their full-range
//! `yuvj` twins), nv12, gray, rgb24 and rgba are copied plane by plane into pipeline buffers, with
//! no colour conversion; other formats (10-bit, for instance) are a clear error. Decoder and
//! encoder threading are on. The sink keeps the input's frame rate and timestamps,
//! sets packet durations (FFmpeg 5.1's libx264 wrapper leaves them at 0, which makes mp4 lose the
//! last frame); timestamps are rescaled to one tick per frame of the input's frame rate, and writes under a temporary name that is renamed only when the run succeeds.
//! Audio and other streams are not copied.

use std::path::{Path, PathBuf};

use ff::codec::threading;
use ff::format::Pixel;
use ff::{Dictionary, Rational, Rescale};
use ffmpeg_next as ff;

use super::atomic::PendingFile;
use super::{file_target, FrameMeta, FrameSlots, IoError, Sink, Source, StreamInfo, VideoOptions};
use crate::frame::{Frame, PixelFormat};

fn init() -> Result<(), String> {
    static INIT: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    INIT.get_or_init(|| {
        ff::init().map_err(|e| e.to_string())?;
        // SAFETY: installs a callback with the signature av_log expects; it only formats the
        // message with FFmpeg's own formatter and never unwinds.
        unsafe { ff::ffi::av_log_set_callback(Some(log_callback)) };
        Ok(())
    })
    .clone()
}

/// Print every FFmpeg message (`-v`) instead of keeping them for error messages only.
static VERBOSE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
/// Errors FFmpeg logged since the last frame was delivered (oldest first, at most 16).
static LOGGED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// With `true`, FFmpeg's messages (errors and warnings) are printed on stderr as they come.
pub fn set_verbose(on: bool) {
    VERBOSE.store(on, std::sync::atomic::Ordering::Relaxed);
}

fn logged() -> std::sync::MutexGuard<'static, Vec<String>> {
    LOGGED.lock().unwrap_or_else(|e| e.into_inner())
}

/// FFmpeg's log callback: keeps errors for convflow's messages, prints them (and warnings)
/// only when verbose.
unsafe extern "C" fn log_callback(
    avcl: *mut libc::c_void,
    level: libc::c_int,
    fmt: *const libc::c_char,
    vl: *mut ff::ffi::__va_list_tag,
) {
    let verbose = VERBOSE.load(std::sync::atomic::Ordering::Relaxed);
    if level > ff::ffi::AV_LOG_WARNING || (level > ff::ffi::AV_LOG_ERROR && !verbose) {
        return;
    }
    let mut buf = [0 as libc::c_char; 512];
    let mut prefix: libc::c_int = 1;
    // SAFETY: FFmpeg's formatter writes at most buf.len() bytes, NUL-terminated, consuming the
    // va_list once (as av_log_default_callback does).
    let line = unsafe {
        ff::ffi::av_log_format_line2(
            avcl,
            level,
            fmt,
            vl,
            buf.as_mut_ptr(),
            buf.len() as libc::c_int,
            &mut prefix,
        );
        std::ffi::CStr::from_ptr(buf.as_ptr())
    };
    let line = tidy_log_line(&line.to_string_lossy());
    if line.is_empty() {
        return;
    }
    if verbose {
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "ffmpeg: {line}");
    }
    if level <= ff::ffi::AV_LOG_ERROR {
        let mut l = logged();
        if l.len() < 16 {
            l.push(line);
        }
    }
}

/// One line, without the context's address: `[h264 @ 0x55d…] error` → `[h264] error`.
fn tidy_log_line(raw: &str) -> String {
    let mut s = raw.trim().replace(['\n', '\r'], " ").replace("[NULL] ", "");
    while let Some(at) = s.find(" @ 0x") {
        match s[at..].find(']') {
            Some(end) => s.replace_range(at..at + end, ""),
            None => break,
        }
    }
    s
}

/// The first FFmpeg error logged since the last call, if any (and forgets the rest).
fn take_logged() -> Option<String> {
    let mut l = logged();
    let first = l.first().cloned();
    l.clear();
    first
}

/// Our format for an FFmpeg pixel format, and whether it is full range (`yuvj*`).
fn map_pixel(p: Pixel) -> Option<(PixelFormat, bool)> {
    Some(match p {
        Pixel::YUV420P => (PixelFormat::Yuv420p, false),
        Pixel::YUVJ420P => (PixelFormat::Yuv420p, true),
        Pixel::YUV422P => (PixelFormat::Yuv422p, false),
        Pixel::YUVJ422P => (PixelFormat::Yuv422p, true),
        Pixel::YUV444P => (PixelFormat::Yuv444p, false),
        Pixel::YUVJ444P => (PixelFormat::Yuv444p, true),
        Pixel::NV12 => (PixelFormat::Nv12, false),
        Pixel::GRAY8 => (PixelFormat::Gray8, false),
        Pixel::RGB24 => (PixelFormat::Rgb8, false),
        Pixel::RGBA => (PixelFormat::Rgba8, false),
        _ => return None,
    })
}

fn ff_pixel(f: PixelFormat) -> Pixel {
    match f {
        PixelFormat::Yuv420p => Pixel::YUV420P,
        PixelFormat::Yuv422p => Pixel::YUV422P,
        PixelFormat::Yuv444p => Pixel::YUV444P,
        PixelFormat::Nv12 => Pixel::NV12,
        PixelFormat::Gray8 => Pixel::GRAY8,
        PixelFormat::Rgb8 => Pixel::RGB24,
        PixelFormat::Rgba8 => Pixel::RGBA,
    }
}

fn ratio(r: Rational) -> Option<(i32, i32)> {
    (r.numerator() > 0 && r.denominator() > 0).then(|| (r.numerator(), r.denominator()))
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
    pub fn open(path: &Path) -> Result<Self, IoError> {
        let err = |msg: String| IoError::Video {
            path: path.to_path_buf(),
            msg,
        };
        init().map_err(|e| err(format!("FFmpeg did not start: {e}")))?;
        let input = ff::format::input(path).map_err(|e| err(format!("not a video file FFmpeg can read ({e})")))?;
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
        let decoder = ctx
            .decoder()
            .video()
            .map_err(|e| err(format!("no decoder for this video stream in the linked FFmpeg ({e})")))?;
        let (format, full_range) = map_pixel(decoder.format()).ok_or_else(|| {
            err(format!(
                "pixel format {:?} is not supported (convflow filters 8-bit gray, rgb24, rgba, yuv420p/422p/444p and nv12; convert first, e.g. ffmpeg -i IN -pix_fmt yuv420p OUT)",
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
        let stream_secs = (st.duration() > 0).then(|| st.duration() as f64 * f64::from(st.time_base()));
        // The file's duration stands for the video's only when nothing else is in it.
        let file_secs = (input.duration() > 0 && input.nb_streams() == 1)
            .then(|| input.duration() as f64 / f64::from(ff::ffi::AV_TIME_BASE));
        let expected = frames_hint.or_else(|| stream_secs.or(file_secs).map(|s| (s * fps).round() as usize));
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
            input: self.path.display().to_string(),
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
                        Err(ff::Error::Other { errno }) if errno == ff::util::error::EAGAIN => Ok(()),
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
        self.path.display().to_string()
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

    fn next_frame(&mut self, slots: &mut dyn FrameSlots) -> Result<Option<(Frame, FrameMeta)>, IoError> {
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
                "frame is {:?} {}x{} but the stream started as {} {}x{} (size changes are not supported)",
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
                let Some(line) = y.checked_mul(stride).and_then(|o| src.get(o..o.checked_add(n)?)) else {
                    let e = self.bad(format!("plane {p} of the decoded frame is not laid out as expected"));
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

/// Muxer for an output extension.
fn container(path: &Path) -> Option<&'static str> {
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    Some(match ext.as_str() {
        "mp4" | "m4v" => "mp4",
        "mov" => "mov",
        "mkv" => "matroska",
        "avi" => "avi",
        "ts" => "mpegts",
        "nut" => "nut",
        _ => return None,
    })
}

/// Encodes frames into a video file.
pub struct VideoSink {
    target: PathBuf,
    octx: ff::format::context::Output,
    /// The temporary file FFmpeg writes (declared after `octx`, so it is closed first).
    pending: PendingFile,
    encoder: ff::encoder::Video,
    /// Encoder time base (the input's) and the stream's, which the muxer may change.
    enc_tb: Rational,
    stream_tb: Rational,
    /// One frame's duration in `enc_tb` units.
    frame_duration: i64,
    /// Time base of the input's timestamps.
    in_tb: Option<Rational>,
    last_pts: Option<i64>,
    frame: ff::frame::Video,
    packet: ff::Packet,
}

impl VideoSink {
    pub fn create(path: &Path, info: &StreamInfo, opts: &VideoOptions) -> Result<Self, IoError> {
        let err = |msg: String| IoError::Output {
            path: path.to_path_buf(),
            msg,
        };
        init().map_err(|e| err(format!("FFmpeg did not start: {e}")))?;
        let muxer = container(path)
            .ok_or_else(|| err("unknown video container (use .mp4, .mkv, .mov, .avi, .ts or .nut)".into()))?;
        file_target(path)?;
        let codec = match &opts.codec {
            Some(name) => ff::encoder::find_by_name(name)
                .ok_or_else(|| err(format!("encoder '{name}' is not in the linked FFmpeg")))?,
            None => ff::encoder::find_by_name("libx264")
                .or_else(|| ff::encoder::find_by_name("mpeg4"))
                .ok_or_else(|| {
                    err("the linked FFmpeg has neither libx264 nor mpeg4; choose an encoder with --codec".into())
                })?,
        };
        let pix = ff_pixel(info.format);
        let video = codec
            .video()
            .map_err(|_| err(format!("'{}' is not a video encoder", codec.name())))?;
        if let Some(mut formats) = video.formats() {
            if !formats.any(|f| f == pix) {
                let ok: Vec<String> = video
                    .formats()
                    .into_iter()
                    .flatten()
                    .filter_map(map_pixel)
                    .map(|m| m.0.to_string())
                    .collect();
                return Err(err(format!(
                    "encoder {} cannot take {} frames (it takes: {}); choose another with --codec",
                    codec.name(),
                    info.format,
                    if ok.is_empty() {
                        "none of convflow's formats".into()
                    } else {
                        ok.join(", ")
                    }
                )));
            }
        }
        // Dropping `pending` on any error below removes the temporary file.
        let pending = PendingFile::create(path).map_err(|e| err(format!("cannot create ({e})")))?;
        let mut octx = ff::format::output_as(pending.path(), muxer).map_err(|e| err(format!("cannot create ({e})")))?;
        let global_header = octx.format().flags().contains(ff::format::Flags::GLOBAL_HEADER);
        let result = (|| -> Result<_, IoError> {
            let mut ost = octx
                .add_stream(codec)
                .map_err(|e| err(format!("adding a stream: {e}")))?;
            let mut ctx = ff::codec::context::Context::new_with_codec(codec);
            ctx.set_threading(threading::Config {
                kind: threading::Type::Frame,
                count: 0,
                ..Default::default()
            });
            let mut enc = ctx.encoder().video().map_err(|e| err(format!("encoder: {e}")))?;
            let rate = Rational(info.rate.0, info.rate.1);
            // One tick per frame (as FFmpeg's CLI does for constant-rate outputs); input
            // timestamps are rescaled into it.
            let enc_tb = Rational(info.rate.1, info.rate.0);
            enc.set_width(info.width as u32);
            enc.set_height(info.height as u32);
            enc.set_format(pix);
            enc.set_frame_rate(Some(rate));
            enc.set_time_base(enc_tb);
            if info.full_range {
                enc.set_color_range(ff::color::Range::JPEG);
            }
            if global_header {
                enc.set_flags(ff::codec::Flags::GLOBAL_HEADER);
            }
            let mut dict = Dictionary::new();
            for (k, v) in &opts.codec_opts {
                dict.set(k, v);
            }
            let encoder = enc
                .open_with(dict)
                .map_err(|e| err(format!("cannot open encoder {} ({e}); check --codec-opt", codec.name())))?;
            ost.set_parameters(&encoder);
            ost.set_time_base(enc_tb);
            ost.set_avg_frame_rate(rate);
            octx.write_header()
                .map_err(|e| err(format!("writing the header: {e}")))?;
            let stream_tb = octx.stream(0).map(|s| s.time_base()).unwrap_or(enc_tb);
            let frame_duration = 1i64.rescale(Rational(info.rate.1, info.rate.0), enc_tb).max(1);
            let mut frame = ff::frame::Video::new(pix, info.width as u32, info.height as u32);
            if info.full_range {
                frame.set_color_range(ff::color::Range::JPEG);
            }
            Ok((encoder, enc_tb, stream_tb, frame_duration, frame))
        })();
        let (encoder, enc_tb, stream_tb, frame_duration, frame) = result?;
        Ok(VideoSink {
            target: path.to_path_buf(),
            octx,
            pending,
            encoder,
            enc_tb,
            stream_tb,
            frame_duration,
            in_tb: info.time_base.map(|(n, d)| Rational(n, d)),
            last_pts: None,
            frame,
            packet: ff::Packet::empty(),
        })
    }

    fn write_err(&self, msg: String) -> IoError {
        IoError::Write {
            path: self.target.clone(),
            msg,
        }
    }

    /// Muxes every packet the encoder has ready.
    fn drain(&mut self) -> Result<(), IoError> {
        while self.encoder.receive_packet(&mut self.packet).is_ok() {
            if self.packet.duration() <= 0 {
                self.packet.set_duration(self.frame_duration);
            }
            self.packet.set_stream(0);
            self.packet.rescale_ts(self.enc_tb, self.stream_tb);
            self.packet
                .write_interleaved(&mut self.octx)
                .map_err(|e| IoError::Write {
                    path: self.target.clone(),
                    msg: format!("muxing: {e}"),
                })?;
        }
        Ok(())
    }
}

impl Sink for VideoSink {
    fn describe(&self) -> String {
        self.target.display().to_string()
    }

    fn write_frame(&mut self, frame: &Frame, meta: &FrameMeta) -> Result<(), IoError> {
        for p in 0..frame.planes().len() {
            let stride = self.frame.stride(p);
            let dst = self.frame.data_mut(p);
            for y in 0..frame.planes()[p].height {
                let row = frame.row(p, y);
                dst[y * stride..y * stride + row.len()].copy_from_slice(row);
            }
        }
        // Input timestamps when they increase, else one frame after the last.
        let next = self.last_pts.map_or(0, |l| l + self.frame_duration);
        let input_pts = meta.pts.zip(self.in_tb).map(|(p, tb)| p.rescale(tb, self.enc_tb));
        let pts = match (input_pts, self.last_pts) {
            (Some(p), Some(l)) if p > l => p,
            (Some(p), None) => p,
            _ => next,
        };
        self.last_pts = Some(pts);
        self.frame.set_pts(Some(pts));
        self.encoder
            .send_frame(&self.frame)
            .map_err(|e| self.write_err(format!("frame {}: encoding: {e}", meta.index)))?;
        self.drain()
    }

    fn finish(mut self: Box<Self>) -> Result<(), IoError> {
        self.encoder
            .send_eof()
            .map_err(|e| self.write_err(format!("flushing the encoder: {e}")))?;
        self.drain()?;
        self.octx
            .write_trailer()
            .map_err(|e| self.write_err(format!("writing the trailer: {e}")))?;
        let VideoSink {
            target, octx, pending, ..
        } = *self;
        drop(octx); // closes FFmpeg's handle
        pending.commit().map_err(|e| IoError::Write {
            path: target,
            msg: e.to_string(),
        })
    }

    fn abort(self: Box<Self>) {
        // Dropping the sink closes the file and removes the temporary.
    }
}
