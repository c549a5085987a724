//! YUV4MPEG2 (y4m) streams: read from a file, a FIFO or stdin (`-`), written to a file or
//! stdout (`-`).
//!
//! Supported colourspaces: `420jpeg`, `420paldv`, `420mpeg2`, `420` (→ yuv420p), `422`, `444`
//! and `mono` (→ gray) at 8 bits, and FFmpeg's deeper ones, `420p10`, `422p12`, `444p16`,
//! `mono16`, … (9, 10, 12, 14 or 16 bits, samples as little-endian 16-bit words); anything else
//! is a clear error. Frames are read into planar
//! frames with tight strides and filtered in their native YUV (no colour conversion).
//!
//! Headers are parsed as bytes (they may hold any bytes; nothing here can panic on them), and
//! an output header repeats the input's parameters exactly, in their order: size, rate,
//! interlacing, aspect, the colourspace tag as written (`C420mpeg2` stays `C420mpeg2`) and
//! every `X` parameter. Reads notice a stop request while blocked ([`super::stop`]).

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};

use super::atomic::PendingFile;
use super::stop::{StopFlag, StopRead};
use super::{file_target, FrameMeta, FrameSlots, IoError, Sink, Source, StreamInfo};
use crate::frame::{Depth, Family, Frame, PixelFormat, MAX_SIDE};
use crate::quote::quote_bytes as shown;

/// Longest header line accepted (bytes); frame lines are much shorter in practice.
const MAX_HEADER: u64 = 64 * 1024;
const MAX_FRAME_LINE: u64 = 4096;

/// A y4m stream header. The parameters are kept as written so an output repeats them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Y4mHeader {
    /// Frame width (`W`).
    pub width: usize,
    /// Frame height (`H`).
    pub height: usize,
    /// Pixel format from the `C` tag (`420jpeg`, 8-bit 4:2:0, when there is none).
    pub format: PixelFormat,
    /// Every parameter after the magic, in order, as written (`W320`, `F25:1`, `C420mpeg2`,
    /// `XYSCSS=420MPEG2`, …).
    params: Vec<Vec<u8>>,
}

impl Y4mHeader {
    /// A 25 fps progressive header for frames of `format`, if y4m can hold it (gray and the
    /// planar YUV formats; not RGB, RGBA or NV12).
    pub fn for_format(format: PixelFormat, width: usize, height: usize) -> Option<Y4mHeader> {
        let cs = colourspace_tag(format)?;
        let params = [
            format!("W{width}"),
            format!("H{height}"),
            "F25:1".into(),
            "Ip".into(),
            "A1:1".into(),
            format!("C{cs}"),
        ];
        Some(Y4mHeader {
            width,
            height,
            format,
            params: params.into_iter().map(String::into_bytes).collect(),
        })
    }

    /// The header a y4m output of `s` gets: its frame rate, and what a video input's tags say
    /// of interlacing, pixel aspect, 4:2:0 chroma siting and colour range (as FFmpeg's y4m
    /// muxer writes them); else progressive, square pixels, centred chroma, and a full range
    /// where the frames are full range.
    pub fn for_stream(s: &StreamInfo) -> Option<Y4mHeader> {
        let mut h = Self::for_format(s.format, s.width, s.height)?;
        if s.rate.0 > 0 && s.rate.1 > 0 {
            h.params[2] = format!("F{}:{}", s.rate.0, s.rate.1).into_bytes();
        }
        #[cfg(feature = "video")]
        if let Some(t) = s.carry.as_ref().map(|c| c.y4m_tags()) {
            if let Some(i) = t.interlace {
                h.params[3] = vec![b'I', i];
            }
            if let Some((n, d)) = t.aspect {
                h.params[4] = format!("A{n}:{d}").into_bytes();
            }
            if let (Some(tag), PixelFormat::Yuv420p) = (t.siting_420, s.format) {
                h.params[5] = format!("C{tag}").into_bytes();
            }
            if t.full_range == Some(false) && !s.full_range {
                h.params.push(b"XCOLORRANGE=LIMITED".to_vec());
            }
        }
        if s.full_range {
            h.params.push(b"XCOLORRANGE=FULL".to_vec());
        }
        Some(h)
    }

    /// What the header says a video output should tag: (interlacing `t`/`b`/`p`, pixel aspect,
    /// 4:2:0 chroma siting `420jpeg`/`420mpeg2`/`420paldv`).
    pub fn tags(&self) -> Y4mTags {
        let cs = self.param(b'C').and_then(|c| std::str::from_utf8(c).ok());
        Y4mTags {
            interlace: self.param(b'I').and_then(|v| v.first().copied()),
            aspect: self.param(b'A').and_then(parse_ratio),
            siting_420: match cs {
                Some("420jpeg") => Some("420jpeg"),
                Some("420mpeg2") => Some("420mpeg2"),
                Some("420paldv") => Some("420paldv"),
                _ => None,
            },
            full_range: self.params.iter().find_map(|p| match &p[..] {
                b"XCOLORRANGE=FULL" => Some(true),
                b"XCOLORRANGE=LIMITED" => Some(false),
                _ => None,
            }),
        }
    }

    fn param(&self, tag: u8) -> Option<&[u8]> {
        self.params
            .iter()
            .find(|p| p.first() == Some(&tag))
            .map(|p| &p[1..])
    }

    /// The frame rate as a fraction (25/1 when the header has none, or `F0:0`, unknown).
    pub fn rate(&self) -> (i32, i32) {
        self.param(b'F').and_then(parse_ratio).unwrap_or((25, 1))
    }

    /// The header line, newline included.
    pub fn line(&self) -> Vec<u8> {
        let mut s = b"YUV4MPEG2".to_vec();
        for p in &self.params {
            s.push(b' ');
            s.extend_from_slice(p);
        }
        s.push(b'\n');
        s
    }

    /// Parses a header line (without its newline); `origin` names the stream in errors.
    pub fn parse(origin: &Path, line: &[u8]) -> Result<Y4mHeader, IoError> {
        let err = |msg: String| IoError::Read {
            path: origin.to_path_buf(),
            msg,
        };
        let mut words = line.split(|&b| b == b' ');
        if words.next() != Some(b"YUV4MPEG2".as_slice()) {
            return Err(err("not a YUV4MPEG2 stream (bad magic)".into()));
        }
        let params: Vec<Vec<u8>> = words
            .filter(|t| !t.is_empty())
            .map(<[u8]>::to_vec)
            .collect();
        let (mut w, mut h, mut cs) = (None, None, b"420jpeg".as_slice());
        for p in &params {
            let val = &p[1..];
            match p[0] {
                b'W' => {
                    w = Some(
                        dimension(val)
                            .ok_or_else(|| err(format!("bad width 'W{}'", shown(val))))?,
                    )
                }
                b'H' => {
                    h = Some(
                        dimension(val)
                            .ok_or_else(|| err(format!("bad height 'H{}'", shown(val))))?,
                    )
                }
                b'F' if val != b"0:0" && parse_ratio(val).is_none() => {
                    return Err(err(format!(
                        "bad frame rate 'F{}' (expected N:D)",
                        shown(val)
                    )))
                }
                b'C' => cs = val,
                _ => {}
            }
        }
        let format = colourspace(cs).ok_or_else(|| {
            err(format!(
                "unsupported y4m colourspace C{} (supported: 420jpeg, 420paldv, 420mpeg2, 420, \
                 422, 444, mono, and 420pN, 422pN, 444pN, monoN for N = 9, 10, 12, 14, 16)",
                shown(cs)
            ))
        })?;
        match (w, h) {
            (Some(width), Some(height)) => Ok(Y4mHeader {
                width,
                height,
                format,
                params,
            }),
            _ => Err(err("y4m header lacks a W (width) or H (height)".into())),
        }
    }
}

/// The format of a y4m colourspace tag (FFmpeg's names: `420jpeg`, `420p10`, `mono16`, …).
fn colourspace(tag: &[u8]) -> Option<PixelFormat> {
    let tag = std::str::from_utf8(tag).ok()?;
    let eight = match tag {
        "420jpeg" | "420paldv" | "420mpeg2" | "420" => Some(PixelFormat::Yuv420p),
        "422" => Some(PixelFormat::Yuv422p),
        "444" => Some(PixelFormat::Yuv444p),
        "mono" => Some(PixelFormat::Gray8),
        _ => None,
    };
    if eight.is_some() {
        return eight;
    }
    let (base, bits) = if let Some(b) = tag.strip_prefix("mono") {
        (PixelFormat::Gray8, b)
    } else {
        let (base, rest) = tag.split_at_checked(4)?;
        let base = match base {
            "420p" => PixelFormat::Yuv420p,
            "422p" => PixelFormat::Yuv422p,
            "444p" => PixelFormat::Yuv444p,
            _ => return None,
        };
        (base, rest)
    };
    let bits: u8 = bits.parse().ok().filter(|b| (9..=16).contains(b))?;
    base.with_depth(Depth::new(bits))
        .filter(|f| f.depth().bits() == bits as u32 && f.depth().shift() == 0)
}

/// The y4m colourspace tag of a format (None for those y4m cannot hold: RGB, NV12, P010).
fn colourspace_tag(format: PixelFormat) -> Option<String> {
    let bits = format.depth().bits();
    if format.depth().shift() != 0 {
        return None;
    }
    let base = match format.family() {
        Family::Gray if bits == 8 => return Some("mono".into()),
        Family::Gray => return Some(format!("mono{bits}")),
        Family::Yuv420 if bits == 8 => return Some("420jpeg".into()),
        Family::Yuv420 => "420p",
        Family::Yuv422 if bits == 8 => return Some("422".into()),
        Family::Yuv422 => "422p",
        Family::Yuv444 if bits == 8 => return Some("444".into()),
        Family::Yuv444 => "444p",
        _ => return None,
    };
    Some(format!("{base}{bits}"))
}

/// A frame side: ASCII digits, 1…MAX_SIDE.
fn dimension(v: &[u8]) -> Option<usize> {
    let n: usize = std::str::from_utf8(v).ok()?.parse().ok()?;
    (1..=MAX_SIDE).contains(&n).then_some(n)
}

/// `N:D` with both positive and within i32.
fn parse_ratio(v: &[u8]) -> Option<(i32, i32)> {
    let s = std::str::from_utf8(v).ok()?;
    let (n, d) = s.split_once(':')?;
    let (n, d): (i32, i32) = (n.parse().ok()?, d.parse().ok()?);
    (n > 0 && d > 0).then_some((n, d))
}

/// Interlacing, pixel aspect, 4:2:0 chroma siting and colour range, in y4m's words, shared by
/// y4m headers and a video's colour tags.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Y4mTags {
    /// `p` progressive, `t` top field first, `b` bottom field first.
    pub interlace: Option<u8>,
    /// Pixel aspect ratio as (numerator, denominator), from `A`.
    pub aspect: Option<(i32, i32)>,
    /// `420jpeg` (centred), `420mpeg2` (left), `420paldv` (top-left).
    pub siting_420: Option<&'static str>,
    /// `XCOLORRANGE=FULL` (true) or `=LIMITED` (false), as FFmpeg's y4m muxer writes it.
    pub full_range: Option<bool>,
}

/// Reads frames from a y4m stream.
pub struct Y4mSource {
    origin: PathBuf,
    reader: Box<dyn BufRead + Send>,
    header: Y4mHeader,
    index: usize,
    /// The index to stop before (`--segment`).
    end: Option<usize>,
}

impl Y4mSource {
    /// Opens `path` (`-` for standard input). With `stop`, a read blocked on a pipe or FIFO
    /// ends once the flag is raised.
    pub fn open(path: &Path, stop: Option<StopFlag>) -> Result<Self, IoError> {
        let read = if path.as_os_str() == "-" {
            StopRead::stdin(stop).map_err(|e| IoError::Read {
                path: path.to_path_buf(),
                msg: format!("cannot read standard input: {e}"),
            })?
        } else {
            StopRead::open(path, stop).map_err(|e| IoError::open_input(path, e))?
        };
        if read.file().metadata().is_ok_and(|m| m.is_dir()) {
            return Err(IoError::Read {
                path: path.to_path_buf(),
                msg: "is a directory, not a y4m stream".into(),
            });
        }
        Self::from_reader(path, Box::new(BufReader::with_capacity(1 << 20, read)))
    }

    /// Reads and parses the header from `reader`; `origin` names the stream in errors.
    pub fn from_reader(
        origin: &Path,
        mut reader: Box<dyn BufRead + Send>,
    ) -> Result<Self, IoError> {
        let line =
            read_line(&mut reader, origin, "header", MAX_HEADER)?.ok_or_else(|| IoError::Read {
                path: origin.to_path_buf(),
                msg: "empty input: no y4m header".into(),
            })?;
        let header = Y4mHeader::parse(origin, &line)?;
        Ok(Y4mSource {
            origin: origin.to_path_buf(),
            reader,
            header,
            index: 0,
            end: None,
        })
    }

    /// The stream's header.
    pub fn header(&self) -> &Y4mHeader {
        &self.header
    }
}

/// Reads one '\n'-terminated line of at most `max` bytes; None at a clean end of stream.
fn read_line(
    r: &mut dyn BufRead,
    origin: &Path,
    what: &str,
    max: u64,
) -> Result<Option<Vec<u8>>, IoError> {
    let mut buf = Vec::new();
    let n = r
        .take(max)
        .read_until(b'\n', &mut buf)
        .map_err(|e| IoError::Read {
            path: origin.to_path_buf(),
            msg: format!("{what}: {e}"),
        })?;
    if n == 0 {
        return Ok(None);
    }
    if buf.last() != Some(&b'\n') {
        let msg = if n as u64 == max {
            format!("{what}: line longer than {max} bytes")
        } else {
            format!("{what}: the stream ends inside the line")
        };
        return Err(IoError::Read {
            path: origin.to_path_buf(),
            msg,
        });
    }
    buf.pop();
    Ok(Some(buf))
}

impl Source for Y4mSource {
    fn describe(&self) -> String {
        format!(
            "{} (y4m {} {}x{})",
            crate::quote::path(&self.origin),
            self.header.format,
            self.header.width,
            self.header.height
        )
    }
    fn files(&self) -> Vec<PathBuf> {
        match self.origin.as_os_str() == "-" {
            true => Vec::new(), // standard input: the CLI adds its file, if it is one
            false => vec![self.origin.clone()],
        }
    }
    fn len_hint(&self) -> Option<usize> {
        self.end.map(|e| e - self.index)
    }
    /// Finds where every frame starts (reading the FRAME lines only) and goes to the part's
    /// first: a y4m file can be split, standard input and pipes cannot.
    fn segment(&mut self, seg: super::segment::Segment) -> Result<(), IoError> {
        let unsplittable = |msg: &str| IoError::Unsplittable {
            input: self.describe(),
            msg: format!("--segment {seg}: {msg}"),
        };
        let regular = self.origin.as_os_str() != "-"
            && std::fs::metadata(&self.origin).is_ok_and(|m| m.is_file());
        if !regular || self.index > 0 {
            return Err(unsplittable(
                "a y4m stream from standard input or a pipe can only be read whole; give the file",
            ));
        }
        let io = |e: std::io::Error| IoError::Read {
            path: self.origin.clone(),
            msg: e.to_string(),
        };
        let h = &self.header;
        let frame_len = Frame::packed_len(h.format, h.width, h.height)
            .map_err(|e| unsplittable(&e.to_string()))? as u64;
        let file = std::fs::File::open(&self.origin).map_err(io)?;
        let len = file.metadata().map_err(io)?.len();
        let mut r = BufReader::with_capacity(4096, file);
        let header = read_line(&mut r, &self.origin, "header", MAX_HEADER)?.unwrap_or_default();
        let mut at = header.len() as u64 + 1;
        let mut starts = Vec::new();
        while at < len {
            use std::io::Seek;
            r.seek(std::io::SeekFrom::Start(at)).map_err(io)?;
            let what = format!("frame {}", starts.len());
            let Some(line) = read_line(&mut r, &self.origin, &what, MAX_FRAME_LINE)? else {
                break;
            };
            starts.push(at);
            at += line.len() as u64 + 1 + frame_len;
        }
        let part = seg.range(starts.len());
        let from = starts.get(part.start).copied().unwrap_or(len);
        let mut file = r.into_inner();
        std::io::Seek::seek(&mut file, std::io::SeekFrom::Start(from)).map_err(io)?;
        self.reader = Box::new(BufReader::with_capacity(1 << 20, file));
        (self.index, self.end) = (part.start, Some(part.end));
        Ok(())
    }
    fn stream_info(&self) -> Option<StreamInfo> {
        let h = &self.header;
        Some(StreamInfo {
            format: h.format,
            width: h.width,
            height: h.height,
            rate: h.rate(),
            time_base: None,
            full_range: h.tags().full_range == Some(true),
            #[cfg(feature = "video")]
            carry: None,
            y4m: Some(h.clone()),
        })
    }

    fn next_frame(
        &mut self,
        slots: &mut dyn FrameSlots,
    ) -> Result<Option<(Frame, FrameMeta)>, IoError> {
        if self.end.is_some_and(|e| self.index >= e) {
            return Ok(None);
        }
        let what = format!("frame {}", self.index);
        let err = |msg: String| IoError::Read {
            path: self.origin.clone(),
            msg,
        };
        let Some(line) = read_line(&mut self.reader, &self.origin, &what, MAX_FRAME_LINE)? else {
            return Ok(None);
        };
        if !(line.starts_with(b"FRAME") && matches!(line.get(5), None | Some(b' '))) {
            return Err(err(format!(
                "{what}: expected FRAME, found '{}'",
                shown(&line)
            )));
        }
        let h = &self.header;
        let mut frame = slots.take(h.format, h.width, h.height)?;
        let need = frame.data().len();
        let mut got = 0;
        while got < need {
            match self.reader.read(&mut frame.data_mut()[got..]) {
                // The stream ends inside this frame: it is lost, and the next read finds the end.
                Ok(0) => {
                    return Err(IoError::BadFrame {
                        input: crate::quote::path(&self.origin),
                        index: self.index,
                        msg: format!("truncated ({got} of {need} bytes)"),
                    })
                }
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(err(format!("{what}: {e}"))),
            }
        }
        let meta = FrameMeta {
            index: self.index,
            name: None,
            pts: None,
            ..Default::default()
        };
        self.index += 1;
        Ok(Some((frame, meta)))
    }
}

/// Where a y4m sink writes.
enum Out {
    Stdout(std::io::BufWriter<std::io::Stdout>),
    File(std::io::BufWriter<PendingFile>),
}

/// Writes frames as a y4m stream: to stdout (`-`) or to a file written under a temporary name
/// and renamed when the run succeeds (removed on any failure).
pub struct Y4mSink {
    name: PathBuf,
    out: Out,
    header: Y4mHeader,
    wrote_header: bool,
}

impl Y4mSink {
    /// A sink writing `header` then each frame to `path` (`-` for standard output); the header
    /// is written with the first frame. A file output is checked and created up front.
    pub fn create(path: &Path, header: Y4mHeader) -> Result<Self, IoError> {
        let out = if path.as_os_str() == "-" {
            Out::Stdout(std::io::BufWriter::with_capacity(
                1 << 20,
                std::io::stdout(),
            ))
        } else {
            file_target(path)?;
            let f = PendingFile::create(path).map_err(|e| IoError::Output {
                path: path.to_path_buf(),
                msg: e.to_string(),
            })?;
            Out::File(std::io::BufWriter::with_capacity(1 << 20, f))
        };
        let name = match out {
            Out::Stdout(_) => PathBuf::from("<stdout>"),
            Out::File(_) => path.to_path_buf(),
        };
        Ok(Y4mSink {
            name,
            out,
            header,
            wrote_header: false,
        })
    }

    fn writer(&mut self) -> &mut dyn Write {
        match &mut self.out {
            Out::Stdout(w) => w,
            Out::File(w) => w,
        }
    }

    fn io_err(&self, what: String) -> impl Fn(std::io::Error) -> IoError + '_ {
        move |e| match e.kind() {
            std::io::ErrorKind::BrokenPipe => IoError::ClosedPipe,
            _ => IoError::Write {
                path: self.name.clone(),
                msg: format!("{what}{e}"),
            },
        }
    }
}

impl Sink for Y4mSink {
    fn describe(&self) -> String {
        crate::quote::path(&self.name)
    }
    fn write_frame(&mut self, frame: &Frame, meta: &FrameMeta) -> Result<(), IoError> {
        let h = &self.header;
        super::same_shape(frame, (h.format, h.width, h.height), meta.index, &self.name)?;
        let result = (|| {
            if !self.wrote_header {
                let line = self.header.line();
                self.writer().write_all(&line)?;
                self.wrote_header = true;
            }
            let w = self.writer();
            w.write_all(b"FRAME\n")?;
            for p in 0..frame.planes().len() {
                for y in 0..frame.planes()[p].height {
                    w.write_all(frame.row(p, y))?;
                }
            }
            Ok(())
        })();
        result.map_err(self.io_err(format!("frame {}: ", meta.index)))
    }
    fn finish(mut self: Box<Self>) -> Result<(), IoError> {
        if !self.wrote_header {
            // An empty input still gives a valid (frame-less) stream.
            let line = self.header.line();
            let r = self.writer().write_all(&line);
            r.map_err(self.io_err(String::new()))?;
        }
        let name = self.name.clone();
        let err = |e: std::io::Error| match e.kind() {
            std::io::ErrorKind::BrokenPipe => IoError::ClosedPipe,
            _ => IoError::Write {
                path: name.clone(),
                msg: e.to_string(),
            },
        };
        match self.out {
            Out::Stdout(mut w) => w.flush().map_err(err),
            // Dropping the writer on any error removes the temporary file.
            Out::File(w) => w
                .into_inner()
                .map_err(|e| err(e.into_error()))?
                .commit()
                .map_err(err),
        }
    }
    fn abort(self: Box<Self>) {
        // Dropping the pending file removes it.
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trip_keeps_every_parameter_and_its_order() {
        let o = Path::new("x.y4m");
        let line = b"YUV4MPEG2 W320 H240 F30000:1001 It A1:1 C420mpeg2 XYSCSS=420MPEG2";
        let h = Y4mHeader::parse(o, line).unwrap();
        assert_eq!(
            (h.width, h.height, h.format),
            (320, 240, PixelFormat::Yuv420p)
        );
        assert_eq!(h.rate(), (30000, 1001));
        assert_eq!(h.line(), [line.as_slice(), b"\n"].concat());
        let h = Y4mHeader::parse(o, b"YUV4MPEG2 C420paldv W2 H2").unwrap();
        assert_eq!(h.line(), b"YUV4MPEG2 C420paldv W2 H2\n");
        assert_eq!(h.rate(), (25, 1));
        assert_eq!(
            Y4mHeader::parse(o, b"YUV4MPEG2 W2 H2 Cmono")
                .unwrap()
                .format,
            PixelFormat::Gray8
        );
    }

    #[test]
    fn deep_colourspaces_map_both_ways() {
        let o = Path::new("x.y4m");
        for (tag, format) in [
            ("420p10", PixelFormat::Yuv420p10),
            ("mono16", PixelFormat::Gray16),
            ("444p12", PixelFormat::parse("yuv444p12").unwrap()),
            ("422p9", PixelFormat::parse("yuv422p9").unwrap()),
        ] {
            let h = Y4mHeader::parse(o, format!("YUV4MPEG2 W4 H2 C{tag}").as_bytes()).unwrap();
            assert_eq!(h.format, format, "{tag}");
            assert_eq!(colourspace_tag(format).as_deref(), Some(tag));
        }
        assert_eq!(colourspace_tag(PixelFormat::P010), None);
        assert_eq!(colourspace_tag(PixelFormat::Rgb16), None);
    }

    #[test]
    fn header_errors_are_one_line_and_never_panic() {
        let o = Path::new("x.y4m");
        let cases: [(&[u8], &str); 8] = [
            (b"YUV4MPEG1 W2 H2", "bad magic"),
            (
                b"YUV4MPEG2 W2 H2 C420p11",
                "unsupported y4m colourspace C420p11",
            ),
            (b"YUV4MPEG2 W0 H2", "bad width"),
            (b"YUV4MPEG2 W2", "lacks a W"),
            (b"YUV4MPEG2 W4 H4 F25:1 \xc3\xa9 C420jpeg", ""),
            (b"YUV4MPEG2 W4 H4 F\xc3\xa9 C420jpeg", "bad frame rate"),
            (b"YUV4MPEG2 W99999999999999999999999 H4", "bad width"),
            (
                b"YUV4MPEG2 W4 H4 C\xff\n\r",
                "unsupported y4m colourspace C\\xff\\n\\r",
            ),
        ];
        for (line, want) in cases {
            match Y4mHeader::parse(o, line) {
                Ok(h) => assert!(want.is_empty(), "{h:?}"),
                Err(e) => {
                    let e = e.to_string();
                    assert!(
                        e.contains(want) && !e.contains('\n') && !e.contains('\r'),
                        "{e}"
                    );
                }
            }
        }
    }
}
