//! Video files through FFmpeg (ffmpeg-next): any container and codec the linked FFmpeg decodes
//! as a source ([`source::VideoSource`]), and a sink that encodes into the container named by
//! the output's extension ([`sink::VideoSink`]). This module holds what both share: FFmpeg's
//! start-up, its log, and the pixel-format mapping.
//!
//! Frames stay in their native pixel format: 8-bit yuv420p/422p/444p (and their full-range
//! `yuvj` twins), nv12, gray, rgb24 and rgba are copied plane by plane into pipeline buffers, with
//! no colour conversion; other formats (10-bit, for instance) are a clear error. Decoder and
//! encoder threading are on. The sink keeps the input's frame rate and timestamps, sets packet
//! durations (FFmpeg 5.1's libx264 wrapper leaves them at 0, which makes mp4 lose the last
//! frame), rescales timestamps to one tick per frame of the input's frame rate, and writes under
//! a temporary name that is renamed only when the run succeeds (removed on any failure). Audio
//! and other streams are not copied.
//!
//! FFmpeg's own log goes through [`log_callback`]: nothing reaches stderr by default, the first
//! error FFmpeg logged about a failing frame is folded into convflow's one-line error, and
//! [`set_verbose`] prints every message (warnings included) as FFmpeg logs it.

mod sink;
mod source;

use ff::format::Pixel;
use ff::Rational;
use ffmpeg_next as ff;

use crate::frame::PixelFormat;
pub use sink::VideoSink;
pub use source::VideoSource;

pub(super) fn init() -> Result<(), String> {
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
pub(super) fn take_logged() -> Option<String> {
    let mut l = logged();
    let first = l.first().cloned();
    l.clear();
    first
}

/// Our format for an FFmpeg pixel format, and whether it is full range (`yuvj*`).
pub(super) fn map_pixel(p: Pixel) -> Option<(PixelFormat, bool)> {
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

pub(super) fn ff_pixel(f: PixelFormat) -> Pixel {
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

pub(super) fn ratio(r: Rational) -> Option<(i32, i32)> {
    (r.numerator() > 0 && r.denominator() > 0).then(|| (r.numerator(), r.denominator()))
}
