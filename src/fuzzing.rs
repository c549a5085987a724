//! Entry points for fuzzing every parser of untrusted input: the test suite's seeded mutation
//! fuzzer (`tests/fuzz.rs`) and the `cargo fuzz` targets (`fuzz/`) call the same functions.
//!
//! Each takes raw bytes, runs the parser the CLI runs on them, and returns `Ok` or the error's
//! message. A parser passes when it never panics and every error is one non-empty line.
//! Frame buffers are capped ([`MAX_FRAME_BYTES`]) as the pipeline's memory budget would.

use std::io::Cursor;
use std::path::Path;

use crate::filter::spec;
use crate::frame::{Frame, PixelFormat};
use crate::io::segment::Segment;
use crate::io::{self, FrameSlots, IoError, Source};

/// Largest frame a fuzzed source may ask for.
pub const MAX_FRAME_BYTES: usize = 16 << 20;

/// Frames read from fuzzed streams: heap frames up to a cap in bytes.
struct CappedSlots(usize);

impl FrameSlots for CappedSlots {
    fn take(&mut self, format: PixelFormat, width: usize, height: usize) -> Result<Frame, IoError> {
        let too_big = |msg: String| IoError::Read {
            path: "<fuzz>".into(),
            msg,
        };
        let len = Frame::packed_len(format, width, height).map_err(|e| too_big(e.to_string()))?;
        if len > self.0 {
            return Err(too_big(format!(
                "frame of {len} bytes over the fuzzing cap"
            )));
        }
        Frame::new(format, width, height).map_err(|e| too_big(e.to_string()))
    }
}

fn message(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// Reads a y4m stream (header and every frame); Ok(frames read).
pub fn y4m_stream(bytes: &[u8]) -> Result<usize, String> {
    let origin = Path::new("fuzz.y4m");
    let reader = Box::new(Cursor::new(bytes.to_vec()));
    let mut src = io::y4m::Y4mSource::from_reader(origin, reader).map_err(message)?;
    count_frames(&mut src)
}

/// Every frame of `src`; Ok(frames read).
fn count_frames(src: &mut dyn Source) -> Result<usize, String> {
    let mut n = 0;
    while src
        .next_frame(&mut CappedSlots(MAX_FRAME_BYTES))
        .map_err(message)?
        .is_some()
    {
        n += 1;
    }
    Ok(n)
}

/// Parses a `--kernel` spec (the bytes as the shell would pass them: lossy UTF-8).
pub fn kernel_spec(bytes: &[u8]) -> Result<usize, String> {
    let text = String::from_utf8_lossy(bytes);
    spec::parse_spec(&text)
        .map(|k| k.weights().len())
        .map_err(message)
}

/// Parses the contents of a `--kernel-file`.
pub fn kernel_file(bytes: &[u8]) -> Result<usize, String> {
    spec::parse_kernel_bytes("fuzz.txt", bytes)
        .map(|k| k.weights().len())
        .map_err(message)
}

/// Parses a `synthetic:` input spec and generates its first frame.
pub fn synthetic_spec(bytes: &[u8]) -> Result<usize, String> {
    let text = String::from_utf8_lossy(bytes);
    let mut src = io::synthetic::SyntheticSource::parse(&text).map_err(message)?;
    // Generated frames are not parsed: a small cap keeps the cases fast.
    Ok(src
        .next_frame(&mut CappedSlots(1 << 20))
        .map_err(message)?
        .map_or(0, |_| 1))
}

/// Decodes a still image (PNG, JPEG, BMP, TIFF: format from the first bytes).
pub fn image(bytes: &[u8]) -> Result<usize, String> {
    let cap = Some(MAX_FRAME_BYTES as u64);
    // The header alone (what `auto` reads to size an image's work) never panics either, and
    // gives the size of every image that decodes.
    let header = io::still::header_of(Cursor::new(bytes));
    let frame = io::still::decode_within(Cursor::new(bytes), Path::new("fuzz.img"), cap)
        .map_err(message)?;
    let pixels = header.map(|(w, h, _)| w * h);
    if pixels != Some(frame.width() * frame.height()) {
        panic!(
            "the header gives {header:?}, the decoded image {}x{}",
            frame.width(),
            frame.height()
        );
    }
    Ok(frame.data().len())
}

/// Parses a `--segment` value (lossy UTF-8, as the shell passes it); Ok(parts).
pub fn segment_spec(bytes: &[u8]) -> Result<usize, String> {
    Segment::parse(&String::from_utf8_lossy(bytes)).map(|s| s.count)
}

/// Reads part `seg` (`I/N`) of the y4m file at `path`: the frame index built from its FRAME
/// lines, the seek, every frame of the part; Ok(frames).
pub fn y4m_segment(path: &Path, seg: &str) -> Result<usize, String> {
    let seg = Segment::parse(seg)?;
    let mut src = io::y4m::Y4mSource::open(path, None).map_err(message)?;
    src.segment(seg).map_err(message)?;
    count_frames(&mut src)
}

/// Joins `parts` into `out` as `convflow concat` does; Ok(frames or packets joined).
pub fn concat(parts: &[std::path::PathBuf], out: &Path) -> Result<usize, String> {
    io::concat::concat(parts, out)
        .map(|j| j.per_part.iter().sum())
        .map_err(message)
}

/// Opens a video file through FFmpeg and decodes every frame; Ok(frames).
#[cfg(feature = "video")]
pub fn video_file(path: &Path) -> Result<usize, String> {
    video_part(path, None)
}

/// [`video_file`] for part `seg` (`I/N`, cut by time as `--segment` cuts): the seek, the
/// frames dropped before the cut, every frame of the part.
#[cfg(feature = "video")]
pub fn video_segment(path: &Path, seg: &str) -> Result<usize, String> {
    video_part(path, Some(Segment::parse(seg)?))
}

#[cfg(feature = "video")]
fn video_part(path: &Path, seg: Option<Segment>) -> Result<usize, String> {
    let mut src = io::video::VideoSource::open(path, None).map_err(message)?;
    if let Some(seg) = seg {
        src.segment(seg).map_err(message)?;
    }
    let mut n = 0;
    loop {
        match src.next_frame(&mut CappedSlots(MAX_FRAME_BYTES)) {
            Ok(Some(_)) => n += 1,
            Ok(None) => return Ok(n),
            // The pipeline goes on after a bad frame with --skip-bad: so does this.
            Err(IoError::BadFrame { .. }) if n < 10_000 => n += 1,
            Err(e) => return Err(message(e)),
        }
    }
}
