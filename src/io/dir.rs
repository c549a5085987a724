//! Frame directories: every image file of a directory in natural order (`f2` before `f10`),
//! written back under the same names.
//!
//! Hidden files (names starting with '.') and subdirectories are skipped; any other file must
//! decode as an image of the same size as the first, or the run stops naming it. Names are
//! kept as bytes (a name need not be UTF-8). An output directory is staged whole and moved into
//! place only when the run succeeds ([`PendingDir`]).

use std::cmp::Ordering;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::atomic::PendingDir;
use super::still::{encode, load_with_profile, output_format};
use super::{existing_parent, FrameMeta, FrameSlots, IoError, SideData, Sink, Source, StreamInfo};
use crate::frame::Frame;

/// The file name a directory output gives frame `index` (0-based) of a source without names
/// (video, y4m, synthetic frames), counted from 1 as FFmpeg's image sequences are:
/// `frame_000001.png` for the first (`.tif` for TIFF frames).
pub fn frame_file_name(index: usize, tiff: bool) -> OsString {
    let ext = if tiff { "tif" } else { "png" };
    format!("frame_{:06}.{ext}", index + 1).into()
}

/// True for names [`frame_file_name`] makes.
pub fn is_frame_file_name(name: &OsStr) -> bool {
    let b = name.as_bytes();
    b.len() >= 16
        && b.starts_with(b"frame_")
        && (b.ends_with(b".png") || b.ends_with(b".tif"))
        && b[6..b.len() - 4].iter().all(u8::is_ascii_digit)
}

/// Compares names so that digit runs compare as numbers: `a2.png < a10.png`.
pub fn natural_cmp(a: &[u8], b: &[u8]) -> Ordering {
    let (mut a, mut b) = (a, b);
    loop {
        match (a.first(), b.first()) {
            (None, None) => return Ordering::Equal,
            (None, _) => return Ordering::Less,
            (_, None) => return Ordering::Greater,
            (Some(x), Some(y)) if x.is_ascii_digit() && y.is_ascii_digit() => {
                let da = a.iter().take_while(|c| c.is_ascii_digit()).count();
                let db = b.iter().take_while(|c| c.is_ascii_digit()).count();
                let (na, nb) = (&a[..da], &b[..db]);
                let strip = |n: &[u8]| -> usize {
                    n.iter()
                        .take_while(|&&c| c == b'0')
                        .count()
                        .min(n.len() - 1)
                };
                let (ta, tb) = (&na[strip(na)..], &nb[strip(nb)..]);
                let ord = ta.len().cmp(&tb.len()).then(ta.cmp(tb)).then(da.cmp(&db));
                if ord != Ordering::Equal {
                    return ord;
                }
                a = &a[da..];
                b = &b[db..];
            }
            (Some(x), Some(y)) => {
                if x != y {
                    return x.cmp(y);
                }
                a = &a[1..];
                b = &b[1..];
            }
        }
    }
}

/// Lists the candidate frame files of `dir` in natural order.
pub fn list_frames(dir: &Path) -> Result<Vec<PathBuf>, IoError> {
    let read_err = |e: std::io::Error| IoError::Read {
        path: dir.to_path_buf(),
        msg: e.to_string(),
    };
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(read_err)? {
        let entry = entry.map_err(read_err)?;
        let name = entry.file_name();
        if name.as_bytes().starts_with(b".") || entry.path().is_dir() {
            continue;
        }
        names.push(name);
    }
    names.sort_by(|a, b| natural_cmp(a.as_bytes(), b.as_bytes()));
    if names.is_empty() {
        return Err(IoError::EmptyDir(dir.to_path_buf()));
    }
    Ok(names.into_iter().map(|n| dir.join(n)).collect())
}

/// Reads a directory's image files in natural order, one frame each, names kept for a
/// directory output.
pub struct DirSource {
    dir: PathBuf,
    files: Vec<PathBuf>,
    /// The frames read: `start..end` of `files` (all of them, or a `--segment`'s).
    start: usize,
    end: usize,
    next: usize,
    first: Option<(usize, usize)>,
    /// The first frame and its side data (a colour profile), read early to declare the stream
    /// for a video or y4m output.
    peeked: Option<(Frame, SideData)>,
    rate: Option<(i32, i32)>,
}

impl DirSource {
    /// Lists `dir`'s frame files ([`list_frames`]); no image is decoded yet. An error when the
    /// directory cannot be read or holds no image files.
    pub fn open(dir: &Path) -> Result<Self, IoError> {
        let files = list_frames(dir)?;
        Ok(DirSource {
            dir: dir.to_path_buf(),
            start: 0,
            end: files.len(),
            files,
            next: 0,
            first: None,
            peeked: None,
            rate: None,
        })
    }
}

impl Source for DirSource {
    fn describe(&self) -> String {
        format!(
            "{} ({} files)",
            crate::quote::path(&self.dir),
            self.files.len()
        )
    }
    fn files(&self) -> Vec<PathBuf> {
        let mut v = vec![self.dir.clone()];
        v.extend(self.files.iter().cloned());
        v
    }
    fn len_hint(&self) -> Option<usize> {
        Some(self.end - self.start)
    }
    fn segment(&mut self, seg: super::segment::Segment) -> Result<(), IoError> {
        let r = seg.range(self.files.len());
        (self.start, self.next, self.end) = (r.start, r.start, r.end);
        Ok(())
    }
    fn stream_info(&self) -> Option<StreamInfo> {
        let ((f, _), rate) = (self.peeked.as_ref()?, self.rate?);
        Some(StreamInfo {
            format: f.format(),
            width: f.width(),
            height: f.height(),
            rate,
            time_base: None,
            y4m: None,
            full_range: false,
            #[cfg(feature = "video")]
            carry: None,
        })
    }
    /// Reads the first image now: its format and size are the stream's, at `rate` frames per
    /// second.
    fn declare_stream(&mut self, rate: (i32, i32)) -> Result<Option<StreamInfo>, IoError> {
        if self.peeked.is_none() && self.next == self.start {
            let first = self
                .files
                .get(self.start)
                .filter(|_| self.start < self.end)
                .ok_or_else(|| IoError::EmptyDir(self.dir.clone()))?;
            self.peeked = Some(load_with_profile(first)?);
        }
        self.rate = Some(rate);
        Ok(self.stream_info())
    }
    fn next_frame(
        &mut self,
        slots: &mut dyn FrameSlots,
    ) -> Result<Option<(Frame, FrameMeta)>, IoError> {
        let Some(path) = self.files.get(self.next).filter(|_| self.next < self.end) else {
            return Ok(None);
        };
        let peeked = if self.next == self.start {
            self.peeked.take()
        } else {
            None
        };
        let (frame, side_data) = match peeked.map_or_else(|| load_with_profile(path), Ok) {
            Ok(f) => f,
            Err(e) => {
                // A damaged file loses its frame only; the sequence can go on (`--skip-bad`).
                let index = self.next;
                self.next += 1;
                return Err(IoError::BadFrame {
                    input: crate::quote::path(&self.dir),
                    index,
                    msg: e.to_string(),
                });
            }
        };
        // Sizes must agree (a frame sequence); channel layouts may differ from file to file.
        let size = (frame.width(), frame.height());
        match self.first {
            None => self.first = Some(size),
            Some(first) if first != size => {
                return Err(IoError::MixedSizes {
                    path: path.clone(),
                    got: format!("{}x{}", size.0, size.1),
                    want: format!("{}x{}", first.0, first.1),
                });
            }
            Some(_) => {}
        }
        let meta = FrameMeta {
            index: self.next,
            name: path.file_name().map(|n| n.to_os_string()),
            pts: None,
            side_data,
            ..Default::default()
        };
        self.next += 1;
        Ok(Some((slots.adopt(frame)?, meta)))
    }
}

/// Writes frames into a hidden staging directory; `finish` moves them into the output.
pub struct DirSink {
    out: PathBuf,
    staging: PendingDir,
    names: Vec<OsString>,
    tiff: bool,
}

impl DirSink {
    /// A directory output; frames without names of their own become `frame_000001.png`, … (or
    /// `.tif` with `tiff`).
    pub fn create(out: &Path, tiff: bool) -> Result<Self, IoError> {
        if out.exists() && !out.is_dir() {
            return Err(IoError::Output {
                path: out.to_path_buf(),
                msg: "exists and is not a directory".into(),
            });
        }
        existing_parent(out)?;
        let staging = PendingDir::create(out).map_err(|e| IoError::Output {
            path: out.to_path_buf(),
            msg: e.to_string(),
        })?;
        Ok(DirSink {
            out: out.to_path_buf(),
            staging,
            names: Vec::new(),
            tiff,
        })
    }
}

impl Sink for DirSink {
    fn describe(&self) -> String {
        format!("{}/", crate::quote::path(&self.out))
    }
    fn write_frame(&mut self, frame: &Frame, meta: &FrameMeta) -> Result<(), IoError> {
        let name = meta
            .name
            .clone()
            .unwrap_or_else(|| frame_file_name(meta.index, self.tiff));
        let shown = self.out.join(&name);
        let format = output_format(&shown)?;
        let path = self.staging.path().join(&name);
        let file = std::fs::File::create_new(&path).map_err(|e| IoError::Write {
            path: shown.clone(),
            msg: e.to_string(),
        })?;
        let icc = super::still::icc_profile(&meta.side_data);
        encode(
            frame,
            format,
            &mut std::io::BufWriter::new(file),
            &shown,
            icc,
        )?;
        self.names.push(name);
        Ok(())
    }
    fn finish(self: Box<Self>) -> Result<(), IoError> {
        let DirSink {
            out,
            staging,
            names,
            ..
        } = *self;
        staging.commit(&names).map_err(|e| IoError::Output {
            path: out,
            msg: e.to_string(),
        })
    }
    fn abort(self: Box<Self>) {
        // Dropping the staging directory removes it.
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn natural_order() {
        let mut v = vec!["f10.png", "f2.png", "f1.png", "f02.png", "a.png", "f1a.png"];
        v.sort_by(|a, b| natural_cmp(a.as_bytes(), b.as_bytes()));
        assert_eq!(
            v,
            vec!["a.png", "f1.png", "f1a.png", "f2.png", "f02.png", "f10.png"]
        );
    }

    #[test]
    fn generated_frame_names_are_recognised() {
        assert!(is_frame_file_name(&frame_file_name(42, false)));
        assert!(is_frame_file_name(&frame_file_name(12_345_678, true)));
        assert_eq!(frame_file_name(0, false), "frame_000001.png");
        assert!(!is_frame_file_name(OsStr::new("frame_00001x.png")));
        assert!(!is_frame_file_name(OsStr::new("photo.png")));
    }
}
