//! Encoding: frames into the container the output's extension names, under a temporary name
//! renamed only when the run succeeds. What a video input carries besides its frames
//! ([`Carry`]) is put back: the other streams copied packet for packet and interleaved by the
//! muxer (those the container cannot hold are left out, with a note), the colour description,
//! aspect ratio and field order on the encoder, the stream and every frame (interlaced input
//! coded interlaced where the encoder codes fields), stream and frame side data (a display
//! matrix the container cannot hold is said in a note), metadata, dispositions and chapters.
//! Frames keep the input's timestamps, in the input's time base (variable frame rates stay
//! variable, the first timestamp stays), and packets get the input frames' durations. The
//! header is written when the first frame comes, so that HDR side data found only on frames
//! reaches the stream.

use std::path::{Path, PathBuf};

use ff::codec::threading;
use ff::{Rational, Rescale};
use ffmpeg_next as ff;

use std::sync::{Arc, Mutex};

use super::carry::{
    add_passengers, muxer_name, put_file_tags, put_video_tags, Carried, Carry, FRAME_SIDE_DATA,
};
use super::convert::{to_ff, Converter};
use super::display::holds_display_matrix;
use super::encoder::{
    codes_fields, default_encoder, lossless_twins, open_encoder, with_encoder_defaults,
};
use super::{
    ff_pixel, first_line, init, map_pixel, touches_files, with_stderr_captured, IO_BUFFER,
};
use crate::frame::{Family, Frame};
use crate::io::atomic::PendingFile;
use crate::io::{file_target, FrameMeta, IoError, OutputOptions, Sink, StreamInfo};
use ff::ffi;

/// The output file, shared between FFmpeg's writer (custom I/O) and the sink, which takes it
/// back to commit it once FFmpeg has let go.
#[derive(Clone)]
pub(super) struct Shared(pub(super) Arc<Mutex<PendingFile>>);

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

/// A muxer `muxer` writing `path` through our own I/O into a temporary file (removed if
/// dropped uncommitted), and that file, which the caller commits once FFmpeg has let go.
pub(super) fn create_output(
    path: &Path,
    muxer: &str,
) -> Result<(ff::format::context::Output, Shared), String> {
    let pending = PendingFile::create(path).map_err(|e| format!("cannot create ({e})"))?;
    let seekable = !pending.is_direct();
    let file = Shared(Arc::new(Mutex::new(pending)));
    let io = if seekable {
        ff::format::context::StreamIo::from_write_seek_with_capacity(file.clone(), IO_BUFFER)
    } else {
        ff::format::context::StreamIo::from_write_with_capacity(file.clone(), IO_BUFFER)
    };
    let name = path.to_string_lossy();
    let octx = io
        .and_then(|io| ff::format::output_to_stream(io, Some(&name), Some(muxer)))
        .map_err(|e| format!("cannot create ({e})"))?;
    Ok((octx, file))
}

/// Muxer for an output extension.
pub(super) fn container(path: &Path) -> Option<&'static str> {
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    Some(match ext.as_str() {
        "mp4" | "m4v" => "mp4",
        "mov" => "mov",
        "mkv" => "matroska",
        "webm" => "webm",
        "avi" => "avi",
        "ts" => "mpegts",
        "nut" => "nut",
        _ => return None,
    })
}

/// Encodes frames into a video file.
pub struct VideoSink {
    target: PathBuf,
    /// The encoder and pixel format chosen, for reports (`libx264 yuv420p10le`).
    encoding: String,
    octx: ff::format::context::Output,
    /// The temporary file FFmpeg writes through its custom I/O (declared after `octx`, so
    /// FFmpeg lets go first).
    file: Shared,
    encoder: ff::encoder::Video,
    /// Encoder time base (the input's when it has one) and the stream's, which the muxer may
    /// change when it writes the header.
    enc_tb: Rational,
    stream_tb: Rational,
    /// One frame's duration at the nominal rate, in `enc_tb` units.
    frame_duration: i64,
    /// Time base of the input's timestamps.
    in_tb: Option<Rational>,
    last_pts: Option<i64>,
    /// Timestamps are put back on the frame grid from the first one (see `create`).
    snap: bool,
    first_pts: Option<i64>,
    /// Input frames' durations by timestamp (in `enc_tb`), for the packets the encoder makes.
    durations: std::collections::HashMap<i64, i64>,
    header_written: bool,
    /// Format and size every frame must have.
    shape: (crate::frame::PixelFormat, usize, usize),
    /// The colour description every frame gets.
    colour: Option<super::carry::Colour>,
    /// Streams copied packet for packet: their packets, and for each input stream index its
    /// output stream index and input time base.
    carried: Option<crossbeam_channel::Receiver<Carried>>,
    routes: std::collections::HashMap<usize, Route>,
    /// Side data the video stream already has (types), so a frame's does not repeat it.
    stream_side: Vec<ffi::AVPacketSideDataType>,
    /// What was left out, said once by the caller.
    notes: Vec<String>,
    frame: ff::frame::Video,
    /// For an encoder that takes the frames only repacked (P010 as yuv420p10, RGB as GBR
    /// planes): the converter and the frame it fills.
    repack: Option<(Converter, ff::frame::Video)>,
    packet: ff::Packet,
}

impl VideoSink {
    /// Opens an encoder and the container named by `path`'s extension for frames as `info`
    /// describes them (`opts`: codec and its options), carrying over what `info.carry` holds.
    /// Everything is checked before the first frame: an unknown container, an encoder that
    /// cannot take the frames' format, or options that would write files are
    /// [`IoError::Output`]. The file is written under a temporary name until `finish`.
    pub fn create(path: &Path, info: &StreamInfo, opts: &OutputOptions) -> Result<Self, IoError> {
        let err = |msg: String| IoError::Output {
            path: path.to_path_buf(),
            msg,
        };
        init().map_err(|e| err(format!("FFmpeg did not start: {e}")))?;
        let muxer = container(path).ok_or_else(|| {
            err("unknown video container (use .mp4, .mkv, .webm, .mov, .avi, .ts or .nut)".into())
        })?;
        file_target(path)?;
        let own = ff_pixel(info.format);
        // The frames' own format, else a lossless repacking of it: the same samples.
        let candidates: Vec<ff::format::Pixel> = std::iter::once(own)
            .chain(lossless_twins(own).iter().copied())
            .collect();
        let codec = match &opts.codec {
            Some(name) => ff::encoder::find_by_name(name)
                .ok_or_else(|| err(format!("encoder '{name}' is not in the linked FFmpeg")))?,
            None => default_encoder(&candidates, own, muxer).ok_or_else(|| {
                err(format!(
                    "no encoder of the linked FFmpeg takes {} frames for {}; choose one \
                         with --codec, convert with --pix-fmt (yuv420p, yuv444p10, …) or write \
                         .mkv (FFV1 keeps every format)",
                    info.format,
                    muxer_name(muxer)
                ))
            })?,
        };
        let video = codec
            .video()
            .map_err(|_| err(format!("'{}' is not a video encoder", codec.name())))?;
        let takes = |p: ff::format::Pixel| video.formats().is_none_or(|mut f| f.any(|f| f == p));
        let pix = candidates
            .iter()
            .copied()
            .find(|&p| takes(p))
            .unwrap_or(own);
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
        let (mut octx, file) = create_output(path, muxer).map_err(err)?;
        let global_header = octx
            .format()
            .flags()
            .contains(ff::format::Flags::GLOBAL_HEADER);
        let carry = info.carry.as_ref();
        // RGB frames (planar GBR video, or converted from YUV) are tagged as RGB; YUV frames
        // converted from RGB get the matrix the conversion used (untagged).
        // A y4m input's header says interlacing, aspect and chroma siting.
        let y4m = info
            .y4m
            .as_ref()
            .map(|h| Carry::colour_of_y4m(h.tags(), info.full_range));
        let colour = carry.map(Carry::colour).or(y4m).map(|mut c| {
            if matches!(info.format.family(), Family::Rgb | Family::Rgba) {
                c.matrix = ffi::AVColorSpace::AVCOL_SPC_RGB;
                c.range = ffi::AVColorRange::AVCOL_RANGE_JPEG;
            } else if c.matrix == ffi::AVColorSpace::AVCOL_SPC_RGB {
                c.matrix = ffi::AVColorSpace::AVCOL_SPC_UNSPECIFIED;
            }
            c
        });
        let in_tb = info
            .time_base
            .map(|(n, d)| Rational(n, d))
            .filter(|r| r.numerator() > 0 && r.denominator() > 0);
        // The input's time base keeps its timestamps exactly. A constant-rate input whose time
        // base cannot express its frame period (29.97 fps in Matroska's milliseconds) gets a
        // finer one that holds both, and its timestamps are put back on the frame grid
        // (`snap`): the rounding was the container's, the rate is the stream's. MPEG-4 part 2
        // cannot express time bases finer than 1/65535 and gets one tick per frame; MPEG-1 and
        // MPEG-2 video code only their standard frame rates, one tick per frame always.
        let tick = Rational(info.rate.1, info.rate.0);
        let constant = carry.is_none_or(Carry::constant_rate);
        let (enc_tb, snap) = match in_tb.map(|tb| (tb, grid_time_base(tb, tick))) {
            Some((_, Some(fine))) if constant => (fine, true),
            Some((tb, _)) => (tb, false),
            None => (tick, false),
        };
        use ff::codec::Id;
        let (enc_tb, snap) = match codec.id() {
            Id::MPEG4 if enc_tb.denominator() >= 1 << 16 => (tick, false),
            Id::MPEG1VIDEO | Id::MPEG2VIDEO => (tick, false),
            _ => (enc_tb, snap),
        };
        let (w, h) = (info.width as u32, info.height as u32);
        let rate = Rational(info.rate.0, info.rate.1);
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
        enc.set_width(w);
        enc.set_height(h);
        enc.set_format(pix);
        enc.set_frame_rate(Some(rate));
        enc.set_time_base(enc_tb);
        if info.full_range {
            enc.set_color_range(ff::color::Range::JPEG);
        }
        if let Some(c) = colour {
            // SAFETY: plain fields of an encoder context that is not open yet.
            unsafe {
                let e = &mut *enc.as_mut_ptr();
                if c.range != ffi::AVColorRange::AVCOL_RANGE_UNSPECIFIED {
                    e.color_range = c.range;
                }
                e.color_primaries = c.primaries;
                e.color_trc = c.trc;
                e.colorspace = c.matrix;
                e.chroma_sample_location = c.chroma;
                e.field_order = c.field_order;
                e.sample_aspect_ratio = c.sar.into();
            }
        }
        let mut flags = ff::codec::Flags::empty();
        if global_header {
            flags |= ff::codec::Flags::GLOBAL_HEADER;
        }
        // Interlaced input stays interlaced in the bitstream where the encoder codes fields
        // (MPEG-TS and MP4 have no field-order tag of their own; the frames say which field
        // is first). Each frame is still filtered whole, as the README says.
        if colour.is_some_and(|c| c.interlaced()) && codes_fields(codec.name()) {
            flags |= ff::codec::Flags::INTERLACED_DCT | ff::codec::Flags::INTERLACED_ME;
        }
        if !flags.is_empty() {
            // SAFETY: a plain field of an encoder context that is not open yet; the flags
            // its codec's defaults set are kept.
            unsafe { (*enc.as_mut_ptr()).flags |= flags.bits() as std::ffi::c_int };
        }
        let options = with_encoder_defaults(codec.name(), &opts.codec_opts);
        let encoder = open_encoder(enc, codec, &options).map_err(err)?;
        ost.set_parameters(&encoder);
        ost.set_time_base(enc_tb);
        ost.set_avg_frame_rate(rate);
        if let Some(c) = colour {
            // SAFETY: a plain field of a stream of the output being set up (muxers such as
            // Matroska's read the aspect there).
            unsafe { (*ost.as_mut_ptr()).sample_aspect_ratio = c.sar.into() };
        }
        let mut stream_side = Vec::new();
        if let Some(c) = carry {
            // SAFETY: a stream of the output being set up, before its header is written.
            unsafe { put_video_tags(ost.as_mut_ptr(), c) }
                .map_err(|e| err(format!("stream side data: {e}")))?;
            stream_side = c.video_tags().side_data.iter().map(|d| d.kind).collect();
        }
        let mut notes = Vec::new();
        let mut routes = std::collections::HashMap::new();
        let mut carried = None;
        if let Some(c) = carry {
            put_file_tags(&mut octx, c);
            if !holds_display_matrix(muxer) {
                notes.extend(c.display_note(muxer_name(muxer)));
            }
            // With --streams video-only the caller says what is left out.
            if !opts.video_only {
                let (added, left_out) =
                    add_passengers(&mut octx, muxer, &encoder, c).map_err(err)?;
                notes.extend(left_out);
                for (index, out, tb) in added {
                    let (in_tb, out_tb) = (tb, tb); // out_tb is the muxer's, once known
                    routes.insert(index, Route { out, in_tb, out_tb });
                }
                if !routes.is_empty() {
                    carried = Some(c.claim());
                }
            }
        }
        let frame_duration = 1i64
            .rescale(Rational(info.rate.1, info.rate.0), enc_tb)
            .max(1);
        let mut frame = ff::frame::Video::new(own, w, h);
        let mut repack = (pix != own).then(|| ff::frame::Video::new(pix, w, h));
        for f in std::iter::once(&mut frame).chain(repack.as_mut()) {
            if info.full_range {
                f.set_color_range(ff::color::Range::JPEG);
            }
        }
        let repack = match repack {
            Some(to) => Some((
                Converter::repack(own, pix, w, h)
                    .map_err(|e| err(format!("repacking {} for the encoder: {e}", info.format)))?,
                to,
            )),
            None => None,
        };
        Ok(VideoSink {
            target: path.to_path_buf(),
            encoding: format!(
                "{} {}",
                codec.name(),
                pix.descriptor().map_or("?", |d| d.name())
            ),
            octx,
            file,
            encoder,
            enc_tb,
            stream_tb: enc_tb,
            frame_duration,
            in_tb,
            last_pts: None,
            snap,
            first_pts: None,
            durations: std::collections::HashMap::new(),
            header_written: false,
            shape: (info.format, info.width, info.height),
            colour,
            carried,
            routes,
            stream_side,
            notes,
            frame,
            repack,
            packet: ff::Packet::empty(),
        })
    }

    fn write_err(&self, msg: String) -> IoError {
        IoError::Write {
            path: self.target.clone(),
            msg,
        }
    }

    /// Writes the header before the first packet, with the side data of the first frame that
    /// the stream lacks (HDR metadata that a decoder found only on frames).
    fn header(&mut self, first: Option<&FrameMeta>) -> Result<(), IoError> {
        if std::mem::replace(&mut self.header_written, true) {
            return Ok(());
        }
        for (kind, bytes) in first.map_or(&[][..], |m| &m.side_data[..]) {
            let to = match *kind {
                k if k
                    == ffi::AVFrameSideDataType::AV_FRAME_DATA_MASTERING_DISPLAY_METADATA
                        as u32 =>
                {
                    ffi::AVPacketSideDataType::AV_PKT_DATA_MASTERING_DISPLAY_METADATA
                }
                k if k == ffi::AVFrameSideDataType::AV_FRAME_DATA_CONTENT_LIGHT_LEVEL as u32 => {
                    ffi::AVPacketSideDataType::AV_PKT_DATA_CONTENT_LIGHT_LEVEL
                }
                _ => continue,
            };
            if self.stream_side.contains(&to) {
                continue;
            }
            // SAFETY: the output's video stream, before the header; the block is filled with
            // exactly its size.
            unsafe {
                let st = *(*self.octx.as_mut_ptr()).streams;
                let dst = ffi::av_stream_new_side_data(st, to, bytes.len());
                if !dst.is_null() {
                    std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst, bytes.len());
                }
            }
        }
        let (res, printed) = with_stderr_captured(|| self.octx.write_header());
        res.map_err(|e| {
            let why = super::take_logged()
                .or_else(|| first_line(&printed))
                .map_or(String::new(), |l| format!(": {l}"));
            let hint = if self.routes.is_empty() {
                ""
            } else {
                " (--streams video-only leaves the other streams out)"
            };
            self.write_err(format!("writing the header: {e}{why}{hint}"))
        })?;
        self.stream_tb = self.octx.stream(0).map_or(self.enc_tb, |s| s.time_base());
        for r in self.routes.values_mut() {
            r.out_tb = self.octx.stream(r.out).map_or(r.out_tb, |s| s.time_base());
        }
        Ok(())
    }

    /// Muxes the copied packets that have come so far (the source has sent them all by the
    /// time the last frame arrives).
    fn carry_packets(&mut self) -> Result<(), IoError> {
        let Some(rx) = &self.carried else {
            return Ok(());
        };
        while let Ok((index, mut p)) = rx.try_recv() {
            let Some(r) = self.routes.get(&index) else {
                continue;
            };
            p.rescale_ts(r.in_tb, r.out_tb);
            p.set_stream(r.out);
            p.set_position(-1);
            p.write_interleaved(&mut self.octx)
                .map_err(|e| IoError::Write {
                    path: self.target.clone(),
                    msg: format!("muxing copied stream {index}: {e}"),
                })?;
        }
        Ok(())
    }

    /// Muxes every packet the encoder has ready.
    fn drain(&mut self) -> Result<(), IoError> {
        while self.encoder.receive_packet(&mut self.packet).is_ok() {
            let pts = self.packet.pts();
            let known = pts.and_then(|p| self.durations.remove(&p));
            if self.packet.duration() <= 0 {
                self.packet
                    .set_duration(known.unwrap_or(self.frame_duration));
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
        if self.durations.len() > 4096 {
            self.durations.clear(); // an encoder that rewrites timestamps
        }
        Ok(())
    }
}

impl Sink for VideoSink {
    fn describe(&self) -> String {
        format!("{} ({})", crate::quote::path(&self.target), self.encoding)
    }

    fn notes(&self) -> Vec<String> {
        self.notes.clone()
    }

    fn write_frame(&mut self, frame: &Frame, meta: &FrameMeta) -> Result<(), IoError> {
        crate::io::same_shape(frame, self.shape, meta.index, &self.target)?;
        self.header(Some(meta))?;
        self.carry_packets()?;
        // The encoder may still hold the last frame's buffers (frame threads): new ones then.
        writable(&mut self.frame)
            .map_err(|e| self.write_err(format!("frame {}: {e}", meta.index)))?;
        to_ff(frame, &mut self.frame);
        // Input timestamps when they increase, else one frame after the last.
        let next = self.last_pts.map_or(0, |l| l + self.frame_duration);
        let to_enc = |t: i64, tb: Rational| t.rescale(tb, self.enc_tb);
        let mut input_pts = meta.pts.zip(self.in_tb).map(|(p, tb)| to_enc(p, tb));
        if let (true, Some(p)) = (self.snap, input_pts) {
            let first = *self.first_pts.get_or_insert(p);
            let d = self.frame_duration;
            input_pts = Some(first + ((p - first) as f64 / d as f64).round() as i64 * d);
        }
        let pts = match (input_pts, self.last_pts) {
            (Some(p), Some(l)) if p > l => p,
            (Some(p), None) => p,
            _ => next,
        };
        self.last_pts = Some(pts);
        if let Some(d) = meta.duration.zip(self.in_tb).map(|(d, tb)| to_enc(d, tb)) {
            self.durations.insert(pts, d.max(1));
        }
        let sent = match &mut self.repack {
            Some((scaler, to)) => writable(to)
                .and_then(|()| {
                    scaler
                        .run(&self.frame, to)
                        .map_err(|e| format!("repacking: {e}"))
                })
                .and_then(|()| {
                    prepare_frame(to, pts, self.colour, &meta.side_data);
                    self.encoder
                        .send_frame(to)
                        .map_err(|e| format!("encoding: {e}"))
                }),
            None => {
                prepare_frame(&mut self.frame, pts, self.colour, &meta.side_data);
                self.encoder
                    .send_frame(&self.frame)
                    .map_err(|e| format!("encoding: {e}"))
            }
        };
        sent.map_err(|e| self.write_err(format!("frame {}: {e}", meta.index)))?;
        self.drain()
    }

    fn finish(mut self: Box<Self>) -> Result<(), IoError> {
        // Encoders print their closing statistics to stderr themselves (x265): kept for -v.
        let (flushed, _) = with_stderr_captured(|| -> Result<(), IoError> {
            self.header(None)?;
            self.encoder
                .send_eof()
                .map_err(|e| self.write_err(format!("flushing the encoder: {e}")))?;
            self.drain()?;
            self.carry_packets()?;
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

/// For an input time base `tb` that cannot express the frame period `tick` exactly, the
/// coarsest 1/N time base that expresses both (N = lcm of the denominators), if N stays
/// reasonable; None when `tb` expresses `tick` already (or nothing simple does).
fn grid_time_base(tb: Rational, tick: Rational) -> Option<Rational> {
    let (a, b, c, d) = (
        i64::from(tb.numerator()),
        i64::from(tb.denominator()),
        i64::from(tick.numerator()),
        i64::from(tick.denominator()),
    );
    if (c * b) % (d * a) == 0 || a != 1 {
        return None;
    }
    let gcd = |mut x: i64, mut y: i64| {
        while y != 0 {
            (x, y) = (y, x % y);
        }
        x
    };
    let n = b / gcd(b, d) * d;
    (n <= 1 << 24 && (c * n) % d == 0).then_some(Rational(1, n as i32))
}

/// Where a copied stream's packets go: the output stream and the two time bases.
struct Route {
    out: usize,
    in_tb: Rational,
    out_tb: Rational,
}

/// Makes `frame`'s buffers its own before they are written (an encoder may still hold them).
fn writable(frame: &mut ff::frame::Video) -> Result<(), String> {
    // SAFETY: a frame allocated with buffers; FFmpeg copies them when they are shared.
    let res = unsafe { ffi::av_frame_make_writable(frame.as_mut_ptr()) };
    if res < 0 {
        return Err(format!("frame buffer: {}", ff::Error::from(res)));
    }
    Ok(())
}

/// Timestamp, colour description, field order and side data of a frame about to be encoded.
fn prepare_frame(
    frame: &mut ff::frame::Video,
    pts: i64,
    colour: Option<super::carry::Colour>,
    side_data: &[(u32, Vec<u8>)],
) {
    frame.set_pts(Some(pts));
    // SAFETY: plain fields of a frame we own; side data is removed and added through FFmpeg's
    // functions, each new block filled with exactly its size.
    unsafe {
        let f = frame.as_mut_ptr();
        if let Some(c) = colour {
            if c.range != ffi::AVColorRange::AVCOL_RANGE_UNSPECIFIED {
                (*f).color_range = c.range;
            }
            (*f).color_primaries = c.primaries;
            (*f).color_trc = c.trc;
            (*f).colorspace = c.matrix;
            (*f).chroma_location = c.chroma;
            (*f).sample_aspect_ratio = c.sar.into();
            (*f).interlaced_frame = c.interlaced().into();
            (*f).top_field_first = c.top_first().into();
        }
        for kind in FRAME_SIDE_DATA {
            ffi::av_frame_remove_side_data(f, kind);
        }
        for (kind, bytes) in side_data {
            let Some(&kind) = FRAME_SIDE_DATA.iter().find(|k| **k as u32 == *kind) else {
                continue;
            };
            let sd = ffi::av_frame_new_side_data(f, kind, bytes.len());
            if !sd.is_null() {
                std::ptr::copy_nonoverlapping(bytes.as_ptr(), (*sd).data, bytes.len());
            }
        }
    }
}
