//! YUV4MPEG2 (y4m) streams: read from a file or stdin (`-`), written to a file or stdout (`-`).
//!
//! Supported colourspaces: `420jpeg`, `420paldv`, `420mpeg2`, `420` (→ yuv420p), `422`,
//! `444` and `mono` (→ gray), 8 bits; anything else is a clear error. Frames are read into
//! planar frames with tight strides and filtered in their native YUV (no colour conversion).
//! The output header repeats the input's size, frame rate, interlacing and aspect.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};

use super::{existing_parent, temp_sibling, FrameMeta, FrameSlots, IoError, Sink, Source, StreamInfo};
use crate::frame::{Frame, PixelFormat};

/// Header fields carried from the input to the output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Y4mHeader {
    pub width: usize,
    pub height: usize,
    pub format: PixelFormat,
    /// Frame rate `F` and the other tags (`I`, `A`, `X…`) as written, passed through.
    pub rate: String,
    pub extra: Vec<String>,
}

impl Y4mHeader {
    /// A 25 fps progressive header for frames of `format`, if y4m can hold it (gray and the
    /// planar YUV formats; not RGB, RGBA or NV12).
    pub fn for_format(format: PixelFormat, width: usize, height: usize) -> Option<Y4mHeader> {
        matches!(
            format,
            PixelFormat::Gray8 | PixelFormat::Yuv420p | PixelFormat::Yuv422p | PixelFormat::Yuv444p
        )
        .then(|| Y4mHeader {
            width,
            height,
            format,
            rate: "25:1".into(),
            extra: vec!["Ip".into(), "A1:1".into()],
        })
    }

    /// The header a y4m output of `s` gets: its frame rate, progressive, square pixels.
    pub fn for_stream(s: &StreamInfo) -> Option<Y4mHeader> {
        let mut h = Self::for_format(s.format, s.width, s.height)?;
        if s.rate.0 > 0 && s.rate.1 > 0 {
            h.rate = format!("{}:{}", s.rate.0, s.rate.1);
        }
        Some(h)
    }

    /// The frame rate as a fraction (25/1 when the header's is unusable).
    pub fn rate(&self) -> (i32, i32) {
        self.rate
            .split_once(':')
            .and_then(|(n, d)| Some((n.parse::<i32>().ok()?, d.parse::<i32>().ok()?)))
            .filter(|&(n, d)| n > 0 && d > 0)
            .unwrap_or((25, 1))
    }

    fn colourspace(&self) -> &'static str {
        match self.format {
            PixelFormat::Gray8 => "mono",
            PixelFormat::Yuv422p => "422",
            PixelFormat::Yuv444p => "444",
            _ => "420jpeg",
        }
    }

    pub fn line(&self) -> String {
        let mut s = format!("YUV4MPEG2 W{} H{} F{}", self.width, self.height, self.rate);
        for t in &self.extra {
            s.push(' ');
            s.push_str(t);
        }
        s.push_str(&format!(" C{}\n", self.colourspace()));
        s
    }

    /// Parses a header line (without its newline); `origin` names the stream in errors.
    pub fn parse(origin: &Path, line: &str) -> Result<Y4mHeader, IoError> {
        let err = |msg: String| IoError::Read {
            path: origin.to_path_buf(),
            msg,
        };
        let mut words = line.split(' ');
        if words.next() != Some("YUV4MPEG2") {
            return Err(err("not a YUV4MPEG2 stream (bad magic)".into()));
        }
        let (mut w, mut h, mut rate, mut cs, mut extra) = (None, None, "25:1".to_string(), "420jpeg", Vec::new());
        for t in words.filter(|t| !t.is_empty()) {
            let (tag, val) = t.split_at(1);
            match tag {
                "W" => w = val.parse::<usize>().ok(),
                "H" => h = val.parse::<usize>().ok(),
                "F" => rate = val.to_string(),
                "C" => cs = val,
                _ => extra.push(t.to_string()),
            }
        }
        let format = match cs {
            "420jpeg" | "420paldv" | "420mpeg2" | "420" => PixelFormat::Yuv420p,
            "422" => PixelFormat::Yuv422p,
            "444" => PixelFormat::Yuv444p,
            "mono" => PixelFormat::Gray8,
            other => {
                return Err(err(format!(
                    "unsupported y4m colourspace C{other} (supported: 420jpeg, 420paldv, 420mpeg2, 420, 422, 444, mono; 8 bits)"
                )))
            }
        };
        match (w, h) {
            (Some(width), Some(height)) if width > 0 && height > 0 => Ok(Y4mHeader {
                width,
                height,
                format,
                rate,
                extra,
            }),
            _ => Err(err("y4m header lacks a valid W (width) or H (height)".into())),
        }
    }
}

/// Reads frames from a y4m stream.
pub struct Y4mSource {
    origin: PathBuf,
    reader: Box<dyn BufRead + Send>,
    header: Y4mHeader,
    index: usize,
}

impl Y4mSource {
    /// `-` reads standard input.
    pub fn open(path: &Path) -> Result<Self, IoError> {
        let reader: Box<dyn BufRead + Send> = if path.as_os_str() == "-" {
            Box::new(BufReader::with_capacity(1 << 20, std::io::stdin()))
        } else {
            let f = std::fs::File::open(path).map_err(|_| IoError::MissingInput(path.to_path_buf()))?;
            Box::new(BufReader::with_capacity(1 << 20, f))
        };
        Self::from_reader(path, reader)
    }

    pub fn from_reader(origin: &Path, mut reader: Box<dyn BufRead + Send>) -> Result<Self, IoError> {
        let line = read_line(&mut reader, origin, "header")?.ok_or_else(|| IoError::Read {
            path: origin.to_path_buf(),
            msg: "empty input: no y4m header".into(),
        })?;
        let header = Y4mHeader::parse(origin, &line)?;
        Ok(Y4mSource {
            origin: origin.to_path_buf(),
            reader,
            header,
            index: 0,
        })
    }

    pub fn header(&self) -> &Y4mHeader {
        &self.header
    }
}

/// Reads one '\n'-terminated line (at most 4 KiB); None at a clean end of stream.
fn read_line(r: &mut dyn BufRead, origin: &Path, what: &str) -> Result<Option<String>, IoError> {
    let mut buf = Vec::new();
    let n = r.take(4096).read_until(b'\n', &mut buf).map_err(|e| IoError::Read {
        path: origin.to_path_buf(),
        msg: format!("{what}: {e}"),
    })?;
    if n == 0 {
        return Ok(None);
    }
    if buf.last() != Some(&b'\n') {
        return Err(IoError::Read {
            path: origin.to_path_buf(),
            msg: format!("{what}: truncated or overlong line"),
        });
    }
    buf.pop();
    String::from_utf8(buf).map(Some).map_err(|_| IoError::Read {
        path: origin.to_path_buf(),
        msg: format!("{what}: not text"),
    })
}

impl Source for Y4mSource {
    fn describe(&self) -> String {
        format!(
            "{} (y4m {} {}x{})",
            self.origin.display(),
            self.header.format,
            self.header.width,
            self.header.height
        )
    }
    fn len_hint(&self) -> Option<usize> {
        None
    }
    fn stream_info(&self) -> Option<StreamInfo> {
        let h = &self.header;
        Some(StreamInfo {
            format: h.format,
            width: h.width,
            height: h.height,
            rate: h.rate(),
            time_base: None,
            full_range: false,
            y4m: Some(h.clone()),
        })
    }

    fn next_frame(&mut self, slots: &mut dyn FrameSlots) -> Result<Option<(Frame, FrameMeta)>, IoError> {
        let what = format!("frame {}", self.index);
        let err = |msg: String| IoError::Read {
            path: self.origin.clone(),
            msg,
        };
        let Some(line) = read_line(&mut self.reader, &self.origin, &what)? else {
            return Ok(None);
        };
        if !line.starts_with("FRAME") {
            return Err(err(format!(
                "{what}: expected FRAME, found '{}'",
                line.chars().take(20).collect::<String>()
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
                        input: self.origin.display().to_string(),
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
        };
        self.index += 1;
        Ok(Some((frame, meta)))
    }
}

/// Writes frames as a y4m stream: to stdout (`-`) or to a file written under a temporary name
/// and renamed when the run succeeds.
pub struct Y4mSink {
    target: Option<PathBuf>,
    tmp: Option<PathBuf>,
    out: Box<dyn Write + Send>,
    header: Y4mHeader,
    wrote_header: bool,
}

impl Y4mSink {
    pub fn create(path: &Path, header: Y4mHeader) -> Result<Self, IoError> {
        if path.as_os_str() == "-" {
            let out = Box::new(std::io::BufWriter::with_capacity(1 << 20, std::io::stdout()));
            return Ok(Y4mSink {
                target: None,
                tmp: None,
                out,
                header,
                wrote_header: false,
            });
        }
        existing_parent(path)?;
        let tmp = temp_sibling(path, "tmp");
        let f = std::fs::File::create(&tmp).map_err(|e| IoError::Output {
            path: path.to_path_buf(),
            msg: e.to_string(),
        })?;
        Ok(Y4mSink {
            target: Some(path.to_path_buf()),
            tmp: Some(tmp),
            out: Box::new(std::io::BufWriter::with_capacity(1 << 20, f)),
            header,
            wrote_header: false,
        })
    }

    fn name(&self) -> PathBuf {
        self.target.clone().unwrap_or_else(|| PathBuf::from("<stdout>"))
    }
}

impl Sink for Y4mSink {
    fn describe(&self) -> String {
        self.name().display().to_string()
    }
    fn write_frame(&mut self, frame: &Frame, meta: &FrameMeta) -> Result<(), IoError> {
        let name = self.name();
        let err = |e: std::io::Error| match e.kind() {
            std::io::ErrorKind::BrokenPipe => IoError::ClosedPipe,
            _ => IoError::Write {
                path: name.clone(),
                msg: format!("frame {}: {e}", meta.index),
            },
        };
        if !self.wrote_header {
            self.out.write_all(self.header.line().as_bytes()).map_err(err)?;
            self.wrote_header = true;
        }
        self.out.write_all(b"FRAME\n").map_err(err)?;
        for p in 0..frame.planes().len() {
            for y in 0..frame.planes()[p].height {
                self.out.write_all(frame.row(p, y)).map_err(err)?;
            }
        }
        Ok(())
    }
    fn finish(mut self: Box<Self>) -> Result<(), IoError> {
        let path = self.name();
        if !self.wrote_header {
            // An empty input still gives a valid (frame-less) stream.
            self.out
                .write_all(self.header.line().as_bytes())
                .map_err(|e| IoError::Write {
                    path: path.clone(),
                    msg: e.to_string(),
                })?;
        }
        self.out.flush().map_err(|e| IoError::Write {
            path: path.clone(),
            msg: e.to_string(),
        })?;
        drop(self.out);
        if let (Some(tmp), Some(target)) = (&self.tmp, &self.target) {
            std::fs::rename(tmp, target).map_err(|e| IoError::Write {
                path: target.clone(),
                msg: e.to_string(),
            })?;
        }
        Ok(())
    }
    fn abort(self: Box<Self>) {
        if let Some(tmp) = &self.tmp {
            let _ = std::fs::remove_file(tmp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trip_and_errors() {
        let o = Path::new("x.y4m");
        let h = Y4mHeader::parse(o, "YUV4MPEG2 W320 H240 F30000:1001 Ip A1:1 C420jpeg XYSCSS=420JPEG").unwrap();
        assert_eq!((h.width, h.height, h.format), (320, 240, PixelFormat::Yuv420p));
        assert_eq!(
            h.line(),
            "YUV4MPEG2 W320 H240 F30000:1001 Ip A1:1 XYSCSS=420JPEG C420jpeg\n"
        );
        assert_eq!(
            Y4mHeader::parse(o, "YUV4MPEG2 W2 H2").unwrap().format,
            PixelFormat::Yuv420p
        );
        assert_eq!(
            Y4mHeader::parse(o, "YUV4MPEG2 W2 H2 Cmono").unwrap().format,
            PixelFormat::Gray8
        );
        let e = Y4mHeader::parse(o, "YUV4MPEG1 W2 H2").unwrap_err().to_string();
        assert!(e.contains("bad magic"), "{e}");
        let e = Y4mHeader::parse(o, "YUV4MPEG2 W2 H2 C420p10").unwrap_err().to_string();
        assert!(e.contains("unsupported y4m colourspace C420p10"), "{e}");
        let e = Y4mHeader::parse(o, "YUV4MPEG2 W0 H2").unwrap_err().to_string();
        assert!(e.contains("valid W"), "{e}");
    }
}
