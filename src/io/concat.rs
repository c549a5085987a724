//! `convflow concat PART… -o OUT`: joins the outputs of `--segment` runs (or any parts of the
//! same kind and format) without decoding or re-encoding anything. Directories of frames join
//! into one directory (the same file name in two parts is refused), y4m files with the same
//! header into one stream, video files packet for packet ([`crate::io::video::concat`]). The
//! output appears under its name only when complete, and may not be one of the parts.

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};

use super::atomic::{PendingDir, PendingFile};
use super::IoError;

/// What was joined.
#[derive(Clone, Debug)]
pub struct Joined {
    /// What kind of parts: "frame directories", "y4m files" or "video files".
    pub kind: &'static str,
    /// What `per_part` counts: "frames", or "packets" (of every stream, for video files).
    pub unit: &'static str,
    /// Frames or packets from each part, in order.
    pub per_part: Vec<usize>,
}

/// Joins `parts` (at least one) into `out`.
pub fn concat(parts: &[PathBuf], out: &Path) -> Result<Joined, IoError> {
    let Some(first) = parts.first() else {
        return Err(IoError::Unsuitable {
            path: out.to_path_buf(),
            msg: "no parts to join".into(),
        });
    };
    for p in parts {
        std::fs::metadata(p).map_err(|e| IoError::open_input(p, e))?;
    }
    let dirs = parts.iter().filter(|p| p.is_dir()).count();
    if dirs == parts.len() {
        return join_dirs(parts, out);
    }
    if dirs > 0 {
        return Err(IoError::Unsuitable {
            path: out.to_path_buf(),
            msg: "the parts mix directories and files: join parts of one kind".into(),
        });
    }
    if super::is_y4m(first) {
        return join_y4m(parts, out);
    }
    #[cfg(feature = "video")]
    {
        let j = super::video::concat::concat(parts, out)?;
        Ok(Joined {
            kind: "video files",
            unit: "packets",
            per_part: j.packets,
        })
    }
    #[cfg(not(feature = "video"))]
    Err(IoError::Unsuitable {
        path: out.to_path_buf(),
        msg: "joining video files needs the 'video' feature (FFmpeg)".into(),
    })
}

fn read_err(path: &Path) -> impl Fn(std::io::Error) -> IoError + '_ {
    move |e| IoError::Read {
        path: path.to_path_buf(),
        msg: e.to_string(),
    }
}

/// Frame directories: every part's frame files (as a directory input lists them), copied
/// into one directory.
fn join_dirs(parts: &[PathBuf], out: &Path) -> Result<Joined, IoError> {
    let mut names: Vec<OsString> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut sources = Vec::new();
    let mut per_part = Vec::new();
    for p in parts {
        let files = super::dir::list_frames(p)?;
        per_part.push(files.len());
        for f in files {
            let name = f.file_name().unwrap_or_default().to_os_string();
            if !seen.insert(name.clone()) {
                return Err(IoError::Unsuitable {
                    path: out.to_path_buf(),
                    msg: format!(
                        "two parts hold a frame named '{}' (the second in {}): the parts must be \
                         different frames",
                        crate::quote::path(Path::new(&name)),
                        crate::quote::path(p)
                    ),
                });
            }
            names.push(name);
            sources.push(f);
        }
    }
    let write_err = |e: std::io::Error| IoError::Write {
        path: out.to_path_buf(),
        msg: e.to_string(),
    };
    let pending = PendingDir::create(out).map_err(write_err)?;
    for (src, name) in sources.iter().zip(&names) {
        std::fs::copy(src, pending.path().join(name)).map_err(write_err)?;
    }
    pending.commit(&names).map_err(write_err)?;
    Ok(Joined {
        kind: "frame directories",
        unit: "frames",
        per_part,
    })
}

/// y4m files: the header once (every part's must be the same), then every part's frames.
fn join_y4m(parts: &[PathBuf], out: &Path) -> Result<Joined, IoError> {
    let mut header: Option<Vec<u8>> = None;
    let mut readers = Vec::new();
    let mut per_part = Vec::new();
    for p in parts {
        let mut r = BufReader::new(std::fs::File::open(p).map_err(|e| IoError::open_input(p, e))?);
        let mut line = Vec::new();
        r.by_ref()
            .take(64 * 1024)
            .read_until(b'\n', &mut line)
            .map_err(read_err(p))?;
        let parsed = super::y4m::Y4mHeader::parse(p, line.strip_suffix(b"\n").unwrap_or(&line))?;
        match &header {
            None => header = Some(line.clone()),
            Some(h) if *h == line => {}
            Some(_) => {
                return Err(IoError::Read {
                    path: p.clone(),
                    msg: format!(
                        "its y4m header differs from {}'s: the parts must have the same format, \
                         size and rate",
                        crate::quote::path(&parts[0])
                    ),
                })
            }
        }
        let len = std::fs::metadata(p).map_err(read_err(p))?.len();
        let frame = crate::frame::Frame::packed_len(parsed.format, parsed.width, parsed.height)
            .map_err(|e| IoError::Read {
                path: p.clone(),
                msg: e.to_string(),
            })? as u64;
        per_part.push(((len - line.len() as u64) / (frame + 6)) as usize);
        readers.push((p, r));
    }
    let write_err = |e: std::io::Error| IoError::Write {
        path: out.to_path_buf(),
        msg: e.to_string(),
    };
    let mut pending = PendingFile::create(out).map_err(write_err)?;
    pending
        .write_all(header.as_deref().unwrap_or_default())
        .map_err(write_err)?;
    for (p, mut r) in readers {
        // The frames as they are: each part was checked to start as y4m.
        let mut head = [0u8; 5];
        let n = r.read(&mut head).map_err(read_err(p))?;
        if n > 0 && (n < 5 || &head != b"FRAME") {
            return Err(IoError::Read {
                path: p.clone(),
                msg: "expected FRAME after the header".into(),
            });
        }
        pending.write_all(&head[..n]).map_err(write_err)?;
        std::io::copy(&mut r, &mut pending).map_err(write_err)?;
    }
    pending.commit().map_err(write_err)?;
    Ok(Joined {
        kind: "y4m files",
        unit: "frames",
        per_part,
    })
}
