//! Sources and sinks of frames: still images and frame directories (video and y4m come with
//! the pipeline work). They sit beside the pipeline, which pulls frames from a [`Source`] and
//! pushes results into a [`Sink`].
//!
//! Sinks never leave an output that looks complete after a failed run: files are written under
//! a temporary name and renamed on success, and a directory's files are staged in a hidden
//! sibling directory that is moved into place only by [`Sink::finish`].

pub mod dir;
pub mod still;
pub mod synthetic;
pub mod y4m;

use std::path::{Path, PathBuf};

use crate::frame::Frame;

#[derive(Debug, thiserror::Error)]
pub enum IoError {
    #[error("input '{0}' does not exist")]
    MissingInput(PathBuf),
    #[error("{path}: {msg}")]
    Read { path: PathBuf, msg: String },
    #[error("{path}: not a readable image ({msg})")]
    Decode { path: PathBuf, msg: String },
    #[error("{path}: {msg}")]
    Write { path: PathBuf, msg: String },
    #[error("{path}: image is {got} but earlier frames are {want}")]
    MixedSizes { path: PathBuf, got: String, want: String },
    #[error("output '{path}': {msg}")]
    Output { path: PathBuf, msg: String },
    #[error("directory '{0}' holds no image files")]
    EmptyDir(PathBuf),
    /// The reader of our standard output went away (e.g. `| head`): not a failure of ours.
    #[error("output pipe closed by its reader")]
    ClosedPipe,
}

/// Per-frame facts that travel with a frame from source to sink.
#[derive(Clone, Debug, Default)]
pub struct FrameMeta {
    /// 0-based position in the stream.
    pub index: usize,
    /// File name for frames read from files (a directory sink reuses it).
    pub name: Option<String>,
}

/// Produces frames in order.
pub trait Source: Send {
    /// What is being read, for messages.
    fn describe(&self) -> String;
    /// Number of frames, when known in advance.
    fn len_hint(&self) -> Option<usize>;
    /// The next frame, or `None` at the end.
    fn next_frame(&mut self) -> Result<Option<(Frame, FrameMeta)>, IoError>;
}

/// Consumes frames in order.
pub trait Sink: Send {
    fn describe(&self) -> String;
    fn write_frame(&mut self, frame: &Frame, meta: &FrameMeta) -> Result<(), IoError>;
    /// Makes the output visible under its final name.
    fn finish(self: Box<Self>) -> Result<(), IoError>;
    /// Removes everything written so far.
    fn abort(self: Box<Self>);
}

/// True for `-` (stdin/stdout) and `*.y4m` paths, which are y4m streams.
pub fn is_y4m(path: &Path) -> bool {
    path.as_os_str() == "-" || path.extension().is_some_and(|e| e.eq_ignore_ascii_case("y4m"))
}

/// Opens a source for `input`: `synthetic:WxH:FORMAT:FRAMES`, a y4m stream (`-` or `*.y4m`),
/// a directory of images or one image file.
pub fn open_source(input: &Path) -> Result<Box<dyn Source>, IoError> {
    if synthetic::is_synthetic(input) {
        return Ok(Box::new(synthetic::SyntheticSource::parse(&input.to_string_lossy())?));
    }
    if is_y4m(input) {
        return Ok(Box::new(y4m::Y4mSource::open(input)?));
    }
    let meta = std::fs::metadata(input).map_err(|_| IoError::MissingInput(input.to_path_buf()))?;
    if meta.is_dir() {
        Ok(Box::new(dir::DirSource::open(input)?))
    } else {
        Ok(Box::new(still::StillSource::new(input)))
    }
}

/// Opens the sink for `output`: `null` (discard), a y4m stream (`-` or `*.y4m`, which needs the y4m `header` of
/// the input), a directory when the source is one, or one image file (when `output` is an
/// existing directory, the file keeps the input's name inside it).
pub fn open_sink(
    output: &Path,
    input: &Path,
    source_is_dir: bool,
    header: Option<y4m::Y4mHeader>,
) -> Result<Box<dyn Sink>, IoError> {
    if output.as_os_str() == "null" {
        return Ok(Box::<synthetic::NullSink>::default());
    }
    if is_y4m(output) {
        let header = header.ok_or_else(|| IoError::Output {
            path: output.to_path_buf(),
            msg: "y4m output needs a y4m input (stills and directories hold RGB or gray images)".into(),
        })?;
        return Ok(Box::new(y4m::Y4mSink::create(output, header)?));
    }
    if let Some(h) = header {
        let msg = if is_y4m(input) {
            "a y4m input can only be written as y4m (use '-' or a .y4m file)".to_string()
        } else {
            format!(
                "{} frames can only be written as y4m ('-' or a .y4m file) or null",
                h.format
            )
        };
        return Err(IoError::Output {
            path: output.to_path_buf(),
            msg,
        });
    }
    if source_is_dir {
        Ok(Box::new(dir::DirSink::create(output)?))
    } else {
        let target = if output.is_dir() {
            output.join(input.file_name().unwrap_or_default())
        } else {
            output.to_path_buf()
        };
        Ok(Box::new(still::StillSink::create(&target)?))
    }
}

/// The parent directory of `path` ("." for a bare name), which must exist.
pub(crate) fn existing_parent(path: &Path) -> Result<PathBuf, IoError> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !parent.is_dir() {
        return Err(IoError::Output {
            path: path.to_path_buf(),
            msg: format!("directory '{}' does not exist", parent.display()),
        });
    }
    Ok(parent)
}

/// A hidden name beside `path` for work in progress: `.NAME.convflow-TAG-PID`.
pub(crate) fn temp_sibling(path: &Path, tag: &str) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = format!(".{name}.convflow-{tag}-{}", std::process::id());
    match path.parent() {
        Some(p) => p.join(tmp),
        None => PathBuf::from(tmp),
    }
}
