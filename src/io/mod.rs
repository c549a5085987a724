//! Sources and sinks of frames: still images, frame directories, y4m streams, synthetic frames
//! and (with the `video` feature) video files through FFmpeg. They sit beside the pipeline,
//! which pulls frames from a [`Source`] into recycled [`FrameSlots`] and pushes results into a
//! [`Sink`].
//!
//! Sinks never leave an output that looks complete after a failed run: files are written under
//! a temporary name and renamed on success, and a directory's files are staged in a hidden
//! sibling directory that is moved into place only by [`Sink::finish`].

pub mod dir;
pub mod still;
pub mod synthetic;
#[cfg(feature = "video")]
pub mod video;
pub mod y4m;

use std::path::{Path, PathBuf};

use crate::backend::{DeviceFrame, Offload};
use crate::frame::{Frame, PixelFormat};

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
    /// One frame could not be read, but the source can go on with the next (`--skip-bad`).
    #[error("{input}: frame {index}: {msg}")]
    BadFrame { input: String, index: usize, msg: String },
    #[error("{path}: {msg}")]
    Video { path: PathBuf, msg: String },
    /// The pipeline stopped while a source waited for a free frame buffer (another stage failed).
    #[error("pipeline stopped")]
    Stopped,
}

/// What a sink needs to know about the stream before the first frame.
#[derive(Clone, Debug, PartialEq)]
pub struct StreamInfo {
    pub format: PixelFormat,
    pub width: usize,
    pub height: usize,
    /// Frames per second as a fraction.
    pub rate: (i32, i32),
    /// Time base of [`FrameMeta::pts`], when frames carry timestamps (video files).
    pub time_base: Option<(i32, i32)>,
    /// A y4m input's header, repeated verbatim by a y4m output (interlacing, aspect, tags).
    pub y4m: Option<y4m::Y4mHeader>,
    /// Full-range (JPEG) YUV, kept by video outputs.
    pub full_range: bool,
}

/// Frame buffers a source fills: recycled ones when free (page-locked when a GPU copies them).
pub trait FrameSlots {
    /// A tightly packed frame of this format and size to fill. Its contents are unspecified
    /// (whatever the buffer last held; [`Frame::id`] tells buffers apart).
    fn take(&mut self, format: PixelFormat, width: usize, height: usize) -> Result<Frame, IoError>;

    /// `frame`'s pixels in a slot (a copy unless the slots are plain heap frames).
    fn adopt(&mut self, frame: Frame) -> Result<Frame, IoError> {
        let mut slot = self.take(frame.format(), frame.width(), frame.height())?;
        for p in 0..frame.planes().len() {
            slot.plane_mut(p).copy_from(&frame.plane(p));
        }
        Ok(slot)
    }
}

/// New heap frames every time: for reading outside a pipeline.
pub struct HeapSlots;

impl FrameSlots for HeapSlots {
    fn take(&mut self, format: PixelFormat, width: usize, height: usize) -> Result<Frame, IoError> {
        Frame::new(format, width, height).map_err(|e| IoError::Read {
            path: PathBuf::from("<frame>"),
            msg: e.to_string(),
        })
    }
    fn adopt(&mut self, frame: Frame) -> Result<Frame, IoError> {
        Ok(frame)
    }
}

/// Per-frame facts that travel with a frame from source to sink.
#[derive(Clone, Debug, Default)]
pub struct FrameMeta {
    /// 0-based position in the stream.
    pub index: usize,
    /// File name for frames read from files (a directory sink reuses it).
    pub name: Option<String>,
    /// Presentation timestamp in [`StreamInfo::time_base`] units (video files).
    pub pts: Option<i64>,
}

/// A frame as a source delivers it: in host memory, or already in the device's memory (a
/// hardware decoder's output), which the pipeline filters without any host copy.
pub enum Payload {
    Host(Frame),
    Device(DeviceFrame),
}

/// Produces frames in order.
pub trait Source: Send {
    /// What is being read, for messages.
    fn describe(&self) -> String;
    /// Number of frames, when known in advance.
    fn len_hint(&self) -> Option<usize>;
    /// Format, size and timing, when known before the first frame (not for image files).
    fn stream_info(&self) -> Option<StreamInfo> {
        None
    }
    /// The next frame, in a buffer from `slots`, or `None` at the end. A
    /// [`IoError::BadFrame`] means this frame is lost but the next call may go on.
    fn next_frame(&mut self, slots: &mut dyn FrameSlots) -> Result<Option<(Frame, FrameMeta)>, IoError>;
    /// The next frame where the source has it. `device` is the backend's device memory when the
    /// pipeline filters there (None for host backends, which only take [`Payload::Host`]). The
    /// default reads a host frame; a source that decodes on the GPU returns
    /// [`Payload::Device`] frames made with `device`, which skip the upload.
    fn next_payload(
        &mut self,
        slots: &mut dyn FrameSlots,
        device: Option<&dyn Offload>,
    ) -> Result<Option<(Payload, FrameMeta)>, IoError> {
        let _ = device;
        Ok(self.next_frame(slots)?.map(|(f, m)| (Payload::Host(f), m)))
    }
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

/// Still-image extensions (read and written with the `image` crate).
pub const IMAGE_EXTENSIONS: [&str; 6] = ["png", "jpg", "jpeg", "bmp", "tif", "tiff"];

fn has_extension(path: &Path, list: &[&str]) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| list.iter().any(|x| x.eq_ignore_ascii_case(e)))
}

/// True for paths a video sink writes: the container comes from the extension.
pub fn is_video_output(path: &Path) -> bool {
    has_extension(path, &["mp4", "m4v", "mov", "mkv", "avi", "ts", "nut"])
}

/// Options for video outputs.
#[derive(Clone, Debug, Default)]
pub struct VideoOptions {
    /// Encoder name (`--codec`); None picks libx264 when linked, else mpeg4.
    pub codec: Option<String>,
    /// Encoder options (`--codec-opt key=value`), e.g. `crf=18`, `qp=0`, `preset=fast`.
    pub codec_opts: Vec<(String, String)>,
}

/// Opens a source for `input`: `synthetic:WxH:FORMAT:FRAMES`, a y4m stream (`-` or `*.y4m`),
/// a directory of images, an image file, or (with the `video` feature) any other file as a
/// video through FFmpeg.
pub fn open_source(input: &Path) -> Result<Box<dyn Source>, IoError> {
    if synthetic::is_synthetic(input) {
        return Ok(Box::new(synthetic::SyntheticSource::parse(&input.to_string_lossy())?));
    }
    if is_y4m(input) {
        return Ok(Box::new(y4m::Y4mSource::open(input)?));
    }
    let meta = std::fs::metadata(input).map_err(|_| IoError::MissingInput(input.to_path_buf()))?;
    if meta.is_dir() {
        return Ok(Box::new(dir::DirSource::open(input)?));
    }
    if has_extension(input, &IMAGE_EXTENSIONS) || still::looks_like_image(input) {
        return Ok(Box::new(still::StillSource::new(input)));
    }
    #[cfg(feature = "video")]
    {
        Ok(Box::new(video::VideoSource::open(input)?))
    }
    #[cfg(not(feature = "video"))]
    Ok(Box::new(still::StillSource::new(input)))
}

/// Opens the sink for `output`: `null` (discard), a y4m stream (`-` or `*.y4m`), a video file
/// (by extension, `video` feature), a directory when the source is one, or one image file (when
/// `output` is an existing directory, the file keeps the input's name inside it). `stream` is
/// the source's [`Source::stream_info`]; y4m and video outputs need it.
pub fn open_sink(
    output: &Path,
    input: &Path,
    source_is_dir: bool,
    stream: Option<&StreamInfo>,
    video: &VideoOptions,
) -> Result<Box<dyn Sink>, IoError> {
    if output.as_os_str() == "null" {
        return Ok(Box::<synthetic::NullSink>::default());
    }
    let needs_stream = |what: &str| IoError::Output {
        path: output.to_path_buf(),
        msg: format!(
            "{what} output needs a video, y4m or synthetic input (stills and directories hold RGB or gray images)"
        ),
    };
    if is_y4m(output) {
        let s = stream.ok_or_else(|| needs_stream("y4m"))?;
        let header = match &s.y4m {
            Some(h) => h.clone(),
            None => y4m::Y4mHeader::for_stream(s).ok_or_else(|| IoError::Output {
                path: output.to_path_buf(),
                msg: format!("y4m holds gray, yuv420p, yuv422p or yuv444p frames, not {}", s.format),
            })?,
        };
        return Ok(Box::new(y4m::Y4mSink::create(output, header)?));
    }
    if is_video_output(output) {
        let s = stream.ok_or_else(|| needs_stream("video"))?;
        #[cfg(feature = "video")]
        return Ok(Box::new(video::VideoSink::create(output, s, video)?));
        #[cfg(not(feature = "video"))]
        {
            let _ = (s, video);
            return Err(IoError::Output {
                path: output.to_path_buf(),
                msg: "this convflow was built without the 'video' feature".into(),
            });
        }
    }
    if let Some(s) = stream {
        let image_ok = matches!(s.format, PixelFormat::Gray8 | PixelFormat::Rgb8 | PixelFormat::Rgba8);
        if !source_is_dir || !image_ok {
            let msg = format!(
                "{} frames can be written as y4m ('-' or a .y4m file), a video file (.mp4, .mkv, .mov, .avi, .ts, .nut) or null",
                s.format
            );
            return Err(IoError::Output {
                path: output.to_path_buf(),
                msg,
            });
        }
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
