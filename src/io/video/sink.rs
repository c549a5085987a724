//! Encoding: frames into the container the output's extension names, with the input's frame
//! rate and timestamps, under a temporary name renamed only when the run succeeds.

use std::path::{Path, PathBuf};

use ff::codec::threading;
use ff::{Rational, Rescale};
use ffmpeg_next as ff;

use std::sync::{Arc, Mutex};

use super::{
    ff_pixel, first_line, init, map_pixel, multi_pass_flags, touches_files, with_stderr_captured,
    IO_BUFFER,
};
use crate::frame::Frame;
use crate::io::atomic::PendingFile;
use crate::io::{file_target, FrameMeta, IoError, Sink, StreamInfo, VideoOptions};

/// The output file, shared between FFmpeg's writer (custom I/O) and the sink, which takes it
/// back to commit it once FFmpeg has let go.
#[derive(Clone)]
struct Shared(Arc<Mutex<PendingFile>>);

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, PendingFile> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl std::io::Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.lock().write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.lock().flush()
    }
}

impl std::io::Seek for Shared {
    fn seek(&mut self, pos: std::io::SeekFrom) -> std::io::Result<u64> {
        self.lock().seek(pos)
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
    /// The temporary file FFmpeg writes through its custom I/O (declared after `octx`, so
    /// FFmpeg lets go first).
    file: Shared,
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
        let muxer = container(path).ok_or_else(|| {
            err("unknown video container (use .mp4, .mkv, .mov, .avi, .ts or .nut)".into())
        })?;
        file_target(path)?;
        let codec = match &opts.codec {
            Some(name) => ff::encoder::find_by_name(name)
                .ok_or_else(|| err(format!("encoder '{name}' is not in the linked FFmpeg")))?,
            None => ff::encoder::find_by_name("libx264")
                .or_else(|| ff::encoder::find_by_name("mpeg4"))
                .ok_or_else(|| {
                    err(
                        "the linked FFmpeg has neither libx264 nor mpeg4; choose an encoder with \
                        --codec"
                            .into(),
                    )
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
        if let Some((k, v)) = opts.codec_opts.iter().find(|(k, v)| touches_files(k, v)) {
            return Err(err(format!(
                "--codec-opt {}={}: options that make the encoder read or write files of its own \
                 (multi-pass statistics, dumps) are not supported",
                crate::quote::quote(k),
                crate::quote::quote(v)
            )));
        }
        // Dropping the file on any error below removes the temporary. FFmpeg writes through
        // our writer and never opens a path itself.
        let pending = PendingFile::create(path).map_err(|e| err(format!("cannot create ({e})")))?;
        let seekable = !pending.is_direct();
        let file = Shared(Arc::new(Mutex::new(pending)));
        let io = if seekable {
            ff::format::context::StreamIo::from_write_seek_with_capacity(file.clone(), IO_BUFFER)
        } else {
            ff::format::context::StreamIo::from_write_with_capacity(file.clone(), IO_BUFFER)
        };
        let name = path.to_string_lossy();
        let mut octx = io
            .and_then(|io| ff::format::output_to_stream(io, Some(&name), Some(muxer)))
            .map_err(|e| err(format!("cannot create ({e})")))?;
        let global_header = octx
            .format()
            .flags()
            .contains(ff::format::Flags::GLOBAL_HEADER);
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
            let mut enc = ctx
                .encoder()
                .video()
                .map_err(|e| err(format!("encoder: {e}")))?;
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
            let encoder = open_encoder(enc, codec, &opts.codec_opts).map_err(err)?;
            ost.set_parameters(&encoder);
            ost.set_time_base(enc_tb);
            ost.set_avg_frame_rate(rate);
            octx.write_header()
                .map_err(|e| err(format!("writing the header: {e}")))?;
            let stream_tb = octx.stream(0).map(|s| s.time_base()).unwrap_or(enc_tb);
            let frame_duration = 1i64
                .rescale(Rational(info.rate.1, info.rate.0), enc_tb)
                .max(1);
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
            file,
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
        crate::quote::path(&self.target)
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
        let input_pts = meta
            .pts
            .zip(self.in_tb)
            .map(|(p, tb)| p.rescale(tb, self.enc_tb));
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
        // Encoders print their closing statistics to stderr themselves (x265): kept for -v.
        let (flushed, _) = with_stderr_captured(|| -> Result<(), IoError> {
            self.encoder
                .send_eof()
                .map_err(|e| self.write_err(format!("flushing the encoder: {e}")))?;
            self.drain()?;
            self.octx
                .write_trailer()
                .map_err(|e| self.write_err(format!("writing the trailer: {e}")))
        });
        let VideoSink {
            target,
            octx,
            encoder,
            file,
            ..
        } = *self;
        let ((), _) = with_stderr_captured(|| drop(encoder));
        drop(octx); // FFmpeg lets go of the writer
        flushed?;
        let pending = Arc::try_unwrap(file.0)
            .map_err(|_| IoError::Write {
                path: target.clone(),
                msg: "FFmpeg still holds the output".into(),
            })?
            .into_inner()
            .unwrap_or_else(|e| e.into_inner());
        pending.commit().map_err(|e| IoError::Write {
            path: target,
            msg: e.to_string(),
        })
    }

    fn abort(self: Box<Self>) {
        // Dropping the sink closes the file and removes the temporary; the encoder's closing
        // chatter is dropped with it.
        let ((), _) = with_stderr_captured(|| drop(self));
    }
}

/// Opens `enc` with `options`: every option must be one the encoder (or its private options)
/// takes, or the error names those it did not; flags that turn on multi-pass statistics are
/// refused; and an encoder that complains while opening (an error in FFmpeg's log, such as
/// x264's "Error parsing option", or on standard error) has failed even when it goes on. Its
/// complaint is folded into the error.
fn open_encoder(
    mut enc: ff::encoder::video::Video,
    codec: ff::Codec,
    options: &[(String, String)],
) -> Result<ff::encoder::video::Encoder, String> {
    let name = codec.name().to_string();
    // Options are set on the context (and its private options) one by one before it opens, so
    // that each bad one is named and what they turn on can be checked before the encoder opens
    // any file.
    let mut unused = Vec::new();
    for (k, v) in options {
        let (ck, cv) = match (
            std::ffi::CString::new(k.as_str()),
            std::ffi::CString::new(v.as_str()),
        ) {
            (Ok(ck), Ok(cv)) => (ck, cv),
            _ => {
                return Err(format!(
                    "--codec-opt {}: contains a NUL byte",
                    crate::quote::quote(k)
                ))
            }
        };
        // SAFETY: a live, unopened codec context and two NUL-terminated strings.
        let res = unsafe {
            ff::ffi::av_opt_set(
                enc.as_mut_ptr().cast(),
                ck.as_ptr(),
                cv.as_ptr(),
                ff::ffi::AV_OPT_SEARCH_CHILDREN,
            )
        };
        if res == ff::ffi::AVERROR_OPTION_NOT_FOUND {
            unused.push(k.clone());
        } else if res < 0 {
            let why = super::take_logged_from(&name).map_or(String::new(), |l| format!(": {l}"));
            return Err(format!(
                "encoder {name}: --codec-opt {}={} is not a valid value ({}){why}",
                crate::quote::quote(k),
                crate::quote::quote(v),
                ff::Error::from(res)
            ));
        }
    }
    if !unused.is_empty() {
        let unused: Vec<String> = unused.iter().map(|u| crate::quote::quote(u)).collect();
        return Err(format!(
            "encoder {name} does not take the option(s) {} (check --codec-opt; \
             `ffmpeg -h encoder={name}` lists what it takes)",
            unused.join(", ")
        ));
    }
    // SAFETY: the pointer is only read while `enc` is alive.
    if multi_pass_flags(unsafe { enc.as_ptr() }) {
        return Err(format!(
            "encoder {name}: --codec-opt flags turn on multi-pass statistics, which the encoder \
             writes to files of its own; not supported"
        ));
    }
    super::take_logged_from(&name);
    let (res, printed) = with_stderr_captured(|| {
        // SAFETY: a context made for `codec`, options already applied, not opened yet.
        unsafe { ff::ffi::avcodec_open2(enc.as_mut_ptr(), codec.as_ptr(), std::ptr::null_mut()) }
    });
    // What the encoder said: an error in FFmpeg's log, else one on standard error.
    let complaint = super::take_logged_from(&name).or_else(|| {
        printed
            .lines()
            .find(|l| l.to_ascii_lowercase().contains("error"))
            .map(crate::quote::quote_line)
    });
    if res < 0 {
        let why = complaint
            .or_else(|| first_line(&printed))
            .map_or(String::new(), |l| format!(": {l}"));
        return Err(format!(
            "cannot open encoder {name} ({}){why}; check --codec and --codec-opt",
            ff::Error::from(res)
        ));
    }
    if let Some(c) = complaint {
        return Err(format!(
            "encoder {name} reported an error while opening: {c}; check --codec-opt"
        ));
    }
    Ok(ff::encoder::video::Encoder(enc))
}
