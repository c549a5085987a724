//! Video files through FFmpeg (ffmpeg-next): any container and codec the linked FFmpeg decodes
//! as a source ([`source::VideoSource`]), and a sink that encodes into the container named by
//! the output's extension ([`sink::VideoSink`]). This module holds what both share: FFmpeg's
//! start-up, its log, and the pixel-format mapping.
//!
//! FFmpeg never opens a path itself: convflow opens the file and hands FFmpeg a reader or
//! writer (custom I/O). Names are therefore never read as URLs (`file:a.mp4`, `take:1.mp4`
//! are plain file names), any bytes work in a name, input protection and atomic outputs see
//! exactly the file FFmpeg reads or writes, and a read blocked on a FIFO notices a stop
//! request.
//!
//! Frames stay in their native pixel format, 8 to 16 bits (gray, rgb24/rgb48, rgba/rgba64,
//! planar YUV, nv12/p010/p016; `map_pixel`); planar GBR and other RGB channel orders are
//! repacked losslessly, and `--pix-fmt` converts through swscale ([`convert`]). Decoder and
//! encoder threading are on. Everything in the input besides the filtered pixels (other
//! streams, colour tags, side data, metadata, chapters, timestamps) is gathered by the source
//! into a [`Carry`] and put back by the sink. Outputs are written under a temporary name that
//! is renamed only when the run succeeds (removed on any failure).
//!
//! FFmpeg's own log goes through `log_callback`: nothing reaches stderr by default, the first
//! error FFmpeg logged about a failing frame is folded into convflow's one-line error, and
//! [`set_verbose`] prints every message (warnings included) as FFmpeg logs it.

mod carry;
pub mod concat;
pub mod convert;
mod cut;
mod display;
mod encoder;
pub use encoder::WEB_ENCODERS;
mod sink;
mod source;

use ff::format::Pixel;
use ff::Rational;
use ffmpeg_next as ff;

use crate::frame::PixelFormat;
pub use carry::Carry;
pub use sink::VideoSink;
pub use source::VideoSource;

/// FFmpeg's I/O buffer for our own reader and writer.
const IO_BUFFER: usize = 1 << 20;

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
    if level > ff::ffi::AV_LOG_WARNING {
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
        crate::say!("ffmpeg: {line}");
    }
    // Warnings that report an error count too: libx264 warns "Error parsing option" and goes
    // on without it.
    if level <= ff::ffi::AV_LOG_ERROR || line.contains("Error") || line.contains("error") {
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

/// The first error FFmpeg logged for the context named `name` (e.g. an encoder's `[libx264]`)
/// since the last call, removing that context's errors and leaving the others.
pub(super) fn take_logged_from(name: &str) -> Option<String> {
    let tag = format!("[{name}]");
    let mut l = logged();
    let first = l.iter().find(|m| m.starts_with(&tag)).cloned();
    l.retain(|m| !m.starts_with(&tag));
    first
}

/// The first FFmpeg error logged since the last call, if any (and forgets the rest).
pub(super) fn take_logged() -> Option<String> {
    let mut l = logged();
    let first = l.first().cloned();
    l.clear();
    first
}

/// Our format for an FFmpeg pixel format, and whether it is full range (`yuvj*`): every
/// little-endian format of our families, by name (`yuv420p10le` is `yuv420p10`).
pub(super) fn map_pixel(p: Pixel) -> Option<(PixelFormat, bool)> {
    let full = matches!(p, Pixel::YUVJ420P | Pixel::YUVJ422P | Pixel::YUVJ444P);
    let p = match p {
        Pixel::YUVJ420P => Pixel::YUV420P,
        Pixel::YUVJ422P => Pixel::YUV422P,
        Pixel::YUVJ444P => Pixel::YUV444P,
        p => p,
    };
    let name = p.descriptor()?.name();
    if name.ends_with("be") {
        return None;
    }
    PixelFormat::parse(name).ok().map(|f| (f, full))
}

/// FFmpeg's name for one of our formats (`rgb24`, `yuv420p10le`, `p010le`).
pub(super) fn ff_name(f: PixelFormat) -> String {
    match f.name().as_str() {
        "rgb" => "rgb24".into(),
        "gray" | "nv12" | "rgba" | "yuv420p" | "yuv422p" | "yuv444p" => f.name(),
        n => format!("{n}le"),
    }
}

pub(super) fn ff_pixel(f: PixelFormat) -> Pixel {
    let name = std::ffi::CString::new(ff_name(f)).expect("format names have no NUL");
    // SAFETY: av_get_pix_fmt reads a NUL-terminated name.
    Pixel::from(unsafe { ff::ffi::av_get_pix_fmt(name.as_ptr()) })
}

pub(super) fn ratio(r: Rational) -> Option<(i32, i32)> {
    (r.numerator() > 0 && r.denominator() > 0).then(|| (r.numerator(), r.denominator()))
}

/// Encoder options that make an encoder read, write or run files of its own (multi-pass
/// statistics, dumps, analysis and quantizer files, reconstructed output, film-grain tables):
/// refused, as they would bypass input protection and atomic outputs. A key is judged by its
/// dash-separated words (`_` counts as `-`): a word naming such a file (`stats`, `pass`,
/// `dump`, `csv`, `recon`, `analysis`, `rpu`, `table`, `exec`, or any word ending in `file`
/// except `profile`). Parameter strings that encoders parse themselves (`x264-params`,
/// `x264opts`, `x265-params`, `svtav1-params`, …: keys ending in `params` or `opts`) are checked
/// key by key. Flags that turn multi-pass statistics on, in any spelling, are caught on the
/// encoder's context instead ([`multi_pass_flags`]).
pub(super) fn touches_files(key: &str, value: &str) -> bool {
    const WORDS: [&str; 12] = [
        "stats", "stat", "pass", "pass1", "pass2", "dump", "csv", "recon", "analysis", "rpu",
        "table", "exec",
    ];
    let k = key.trim().to_ascii_lowercase().replace('_', "-");
    let named = k
        .split('-')
        .any(|w| WORDS.contains(&w) || (w.ends_with("file") && w != "profile"));
    if named || (k == "scaling-list" && !matches!(value.trim(), "default" | "off" | "")) {
        return true;
    }
    if k.ends_with("params") || k.ends_with("opts") {
        return value.split([':', ',']).any(|kv| {
            let (k2, v2) = kv.split_once('=').unwrap_or((kv, ""));
            touches_files(k2, v2)
        });
    }
    false
}

/// True when the encoder context `ctx` has multi-pass statistics turned on (`flags` pass1 or
/// pass2, however they were spelled: `+pass1`, `0x200`, `512`).
pub(super) fn multi_pass_flags(ctx: *const ff::ffi::AVCodecContext) -> bool {
    let pass = (ff::ffi::AV_CODEC_FLAG_PASS1 | ff::ffi::AV_CODEC_FLAG_PASS2) as i32;
    // SAFETY: `ctx` is a live codec context owned by the caller.
    unsafe { (*ctx).flags & pass != 0 }
}

/// Runs `f` with the process's standard error captured: encoders such as x264 and x265 print
/// to it directly, not through FFmpeg's log. Returns `f`'s result and what was printed (empty,
/// and nothing captured, when verbose). The capture is an in-memory file, so a chatty encoder
/// cannot block on it.
pub(super) fn with_stderr_captured<T>(f: impl FnOnce() -> T) -> (T, String) {
    use std::io::{Read, Seek};
    use std::os::fd::{AsRawFd, FromRawFd};
    if VERBOSE.load(std::sync::atomic::Ordering::Relaxed) {
        return (f(), String::new());
    }
    // SAFETY: memfd_create with a static NUL-terminated name; the descriptor is owned below.
    let memfd = unsafe { libc::memfd_create(c"convflow-stderr".as_ptr(), libc::MFD_CLOEXEC) };
    // SAFETY: dup of our own standard error.
    let saved = unsafe { libc::dup(2) };
    if memfd < 0 || saved < 0 {
        return (f(), String::new());
    }
    // SAFETY: both descriptors were just returned to us and are owned here only.
    let (mut capture, saved) = unsafe {
        (
            std::fs::File::from_raw_fd(memfd),
            std::fs::File::from_raw_fd(saved),
        )
    };
    // SAFETY: dup2 onto descriptor 2, restored below whatever `f` does.
    unsafe { libc::dup2(capture.as_raw_fd(), 2) };
    let out = f();
    // SAFETY: as above, back to the saved standard error.
    unsafe { libc::dup2(saved.as_raw_fd(), 2) };
    let mut text = String::new();
    let _ = capture.seek(std::io::SeekFrom::Start(0));
    let _ = capture.take(1 << 16).read_to_string(&mut text);
    (out, text)
}

/// The first line of captured encoder output, tidied for an error message.
pub(super) fn first_line(text: &str) -> Option<String> {
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(crate::quote::quote_line)
}
