//! Sources and sinks of frames: still images, frame directories, y4m streams, synthetic frames
//! and (with the `video` feature) video files through FFmpeg. They sit beside the pipeline,
//! which pulls frames from a [`Source`] into recycled [`FrameSlots`] and pushes results into a
//! [`Sink`].
//!
//! Sinks never leave an output that looks complete after a failed run: files are written under
//! a temporary name and renamed on success, and a directory's files are staged in a hidden
//! sibling directory that is moved into place only by [`Sink::finish`] ([`atomic`]). Before any
//! work, [`guard`] refuses outputs that would write over an input.

pub mod atomic;
pub mod concat;
pub mod dir;
pub mod guard;
pub mod memory;
pub mod primed;
pub mod segment;
pub mod still;
pub mod stop;
pub mod synthetic;
#[cfg(feature = "video")]
pub mod video;
pub mod y4m;

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use crate::device::{DeviceFrame, Offload};
use crate::frame::{Frame, PixelFormat};
pub use memory::{NullSink, VecSink};

/// Errors of sources and sinks. Paths are printed quoted.
#[derive(Debug, thiserror::Error)]
pub enum IoError {
    /// The input path does not exist.
    #[error("input '{}' does not exist", crate::quote::path(.0))]
    MissingInput(PathBuf),
    /// An input could not be read or parsed.
    #[error("{}: {msg}", crate::quote::path(path))]
    Read {
        /// The input, or a placeholder such as `<source>` or `<frame buffer>`.
        path: PathBuf,
        /// What went wrong.
        msg: String,
    },
    /// An image file could not be decoded.
    #[error("{}: not a readable image ({msg})", crate::quote::path(path))]
    Decode {
        /// The image file.
        path: PathBuf,
        /// The decoder's message.
        msg: String,
    },
    /// An output could not be written.
    #[error("{}: {msg}", crate::quote::path(path))]
    Write {
        /// The file being written.
        path: PathBuf,
        /// What went wrong.
        msg: String,
    },
    /// An image in a sequence differs in size or format from the first.
    #[error(
        "{}: image is {got} but earlier frames are {want}",
        crate::quote::path(path)
    )]
    MixedSizes {
        /// The odd image.
        path: PathBuf,
        /// Its format and size.
        got: String,
        /// The format and size of the earlier frames.
        want: String,
    },
    /// An output that cannot be used as asked (refused before any work: it would overwrite an
    /// input, its directory is missing, its format cannot hold the frames, …).
    #[error("output '{}': {msg}", crate::quote::path(path))]
    Output {
        /// The output path.
        path: PathBuf,
        /// Why it is refused.
        msg: String,
    },
    /// An output that cannot hold what the input gives (a stream of frames into one image
    /// file, RGB frames into y4m, …): decided from the arguments alone, so the command line
    /// reports it as a usage error.
    #[error("output '{}': {msg}", crate::quote::path(path))]
    Unsuitable {
        /// The output path.
        path: PathBuf,
        /// What it cannot hold, and what can.
        msg: String,
    },
    /// `--segment` on an input that cannot be split (standard input, a pipe, one image), or a
    /// part that holds no frame: the command line is wrong, not the input.
    #[error("{input}: {msg}")]
    Unsplittable {
        /// The input, as described.
        input: String,
        /// Why, and what to do.
        msg: String,
    },
    /// An input directory has no image files.
    #[error("directory '{}' holds no image files", crate::quote::path(.0))]
    EmptyDir(PathBuf),
    /// The reader of our standard output went away (e.g. `| head`): not a failure of ours.
    #[error("output pipe closed by its reader")]
    ClosedPipe,
    /// One frame could not be read, but the source can go on with the next (`--skip-bad`).
    #[error("{input}: frame {index}: {msg}")]
    BadFrame {
        /// The input's path, quoted for printing.
        input: String,
        /// 0-based index of the lost frame.
        index: usize,
        /// Why it could not be read.
        msg: String,
    },
    /// FFmpeg could not open, decode or encode a video.
    #[error("{}: {msg}", crate::quote::path(path))]
    Video {
        /// The video file.
        path: PathBuf,
        /// FFmpeg's message and what was being done.
        msg: String,
    },
    /// The pipeline stopped while a source waited for a free frame buffer (another stage failed).
    #[error("pipeline stopped")]
    Stopped,
    /// Frame buffers would exceed the memory budget.
    #[error(transparent)]
    Memory(#[from] crate::memory::MemoryError),
    /// A frame of the stream's size and format cannot be built.
    #[error(transparent)]
    Frame(#[from] crate::frame::FrameError),
}

impl IoError {
    /// The error for an input that cannot be opened: "does not exist" only when it does not.
    pub fn open_input(path: &Path, e: std::io::Error) -> IoError {
        match e.kind() {
            std::io::ErrorKind::NotFound => IoError::MissingInput(path.to_path_buf()),
            _ => IoError::Read {
                path: path.to_path_buf(),
                msg: format!("cannot be read: {e}"),
            },
        }
    }
}

/// What a sink needs to know about the stream before the first frame.
#[derive(Clone, Debug, PartialEq)]
pub struct StreamInfo {
    /// Pixel format of every frame.
    pub format: PixelFormat,
    /// Frame width in pixels.
    pub width: usize,
    /// Frame height in pixels.
    pub height: usize,
    /// Frames per second as a fraction.
    pub rate: (i32, i32),
    /// Time base of [`FrameMeta::pts`], when frames carry timestamps (video files).
    pub time_base: Option<(i32, i32)>,
    /// A y4m input's header, repeated verbatim by a y4m output (interlacing, aspect, tags).
    pub y4m: Option<y4m::Y4mHeader>,
    /// Full range: a `yuvj` format, a video stream tagged full range (`pc`, also at 10 to 16
    /// bits, which have no `yuvj` format), or a y4m header's `XCOLORRANGE=FULL`. Kept by video
    /// and y4m outputs, and read by YUV ↔ RGB conversions (RGB frames are full range anyway).
    pub full_range: bool,
    /// What a video input hands a video output besides the frames: other streams, colour
    /// tags, side data, chapters, metadata.
    #[cfg(feature = "video")]
    pub carry: Option<video::Carry>,
}

impl StreamInfo {
    /// Whether the input has other streams (audio, subtitles, data) whose packets the source
    /// reads between its frames, for a video output to copy.
    pub fn has_passengers(&self) -> bool {
        #[cfg(feature = "video")]
        return self
            .carry
            .as_ref()
            .is_some_and(|c| !c.describe_passengers().is_empty());
        #[cfg(not(feature = "video"))]
        false
    }

    /// How the input says its frames are interlaced — `Some("top field first")`,
    /// `Some("bottom field first")` or `Some("mixed")` — from a y4m header's `I` tag or a
    /// video's field order; `None` for progressive or unknown. convflow filters every frame
    /// whole (the two fields together), which a user deinterlacing later should know.
    pub fn interlacing(&self) -> Option<&'static str> {
        let tag = match &self.y4m {
            Some(h) => h.tags().interlace,
            #[cfg(feature = "video")]
            None => self.carry.as_ref().and_then(|c| c.y4m_tags().interlace),
            #[cfg(not(feature = "video"))]
            None => None,
        };
        match tag {
            Some(b't') => Some("top field first"),
            Some(b'b') => Some("bottom field first"),
            Some(b'm') => Some("mixed"),
            _ => None,
        }
    }
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
    /// File name for frames read from files (a directory sink reuses it); any bytes.
    pub name: Option<OsString>,
    /// Presentation timestamp in [`StreamInfo::time_base`] units (video files).
    pub pts: Option<i64>,
    /// How long the frame is shown, in the same units, when the input says.
    pub duration: Option<i64>,
    /// Side data of a video frame that a video output puts back: (FFmpeg's
    /// `AVFrameSideDataType` number, bytes). Mastering display, content light level, captions…
    /// and an image's colour profile ([`ICC_PROFILE`]).
    pub side_data: SideData,
}

/// A frame's side data: (FFmpeg's `AVFrameSideDataType` number, bytes) per block.
pub type SideData = Vec<(u32, Vec<u8>)>;

/// The [`FrameMeta::side_data`] kind of an ICC colour profile: FFmpeg's
/// `AV_FRAME_DATA_ICC_PROFILE`, so that a profile read from an image reaches a video output's
/// frames and a video frame's reaches image files.
pub const ICC_PROFILE: u32 = 15;

/// A frame as a source delivers it: in host memory, or already in the device's memory (a
/// hardware decoder's output), which the pipeline filters without any host copy.
pub enum Payload {
    /// A frame in host memory.
    Host(Frame),
    /// A frame already in the backend's device memory.
    Device(DeviceFrame),
}

/// Produces frames in order.
pub trait Source: Send {
    /// What is being read, for messages.
    fn describe(&self) -> String;
    /// The files this source reads (for input protection: no output may be one of them).
    fn files(&self) -> Vec<PathBuf> {
        Vec::new()
    }
    /// Number of frames, when known in advance.
    fn len_hint(&self) -> Option<usize>;

    /// Restricts the source to part `seg` of its frames, before the first is read
    /// (`--segment`): frames keep the index and timestamps they have in the whole input. The
    /// default refuses: an input that can only be read from the start (standard input, a pipe)
    /// or holds one image.
    fn segment(&mut self, seg: segment::Segment) -> Result<(), IoError> {
        Err(IoError::Unsplittable {
            input: self.describe(),
            msg: format!(
                "--segment {seg} needs a video file, a y4m file, a frame directory or a synthetic \
                 input (this one can only be read whole)"
            ),
        })
    }

    /// Format, size and timing, when known before the first frame (not for image files).
    fn stream_info(&self) -> Option<StreamInfo> {
        None
    }
    /// Declares the stream for an output that needs one before the first frame (video, y4m)
    /// when the source has none of its own (images): at `rate` frames per second. Sources
    /// that know their stream return it unchanged.
    fn declare_stream(&mut self, rate: (i32, i32)) -> Result<Option<StreamInfo>, IoError> {
        let _ = rate;
        Ok(self.stream_info())
    }
    /// The next frame, in a buffer from `slots`, or `None` at the end. A
    /// [`IoError::BadFrame`] means this frame is lost but the next call may go on.
    fn next_frame(
        &mut self,
        slots: &mut dyn FrameSlots,
    ) -> Result<Option<(Frame, FrameMeta)>, IoError>;
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
    /// What is being written, for messages.
    fn describe(&self) -> String;
    /// Writes the next frame; `meta` carries its name, timestamps and side data.
    fn write_frame(&mut self, frame: &Frame, meta: &FrameMeta) -> Result<(), IoError>;
    /// Makes the output visible under its final name.
    fn finish(self: Box<Self>) -> Result<(), IoError>;
    /// Removes everything written so far.
    fn abort(self: Box<Self>);
    /// What the output leaves out of the input (streams or a display matrix its container
    /// cannot hold, another video stream copied unfiltered), for the caller to say once.
    fn notes(&self) -> Vec<String> {
        Vec::new()
    }
}

/// True for `-` (stdin/stdout) and `*.y4m` paths, which are y4m streams.
pub fn is_y4m(path: &Path) -> bool {
    path.as_os_str() == "-"
        || path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("y4m"))
}

/// Still-image extensions (read and written with the `image` crate).
pub const IMAGE_EXTENSIONS: [&str; 6] = ["png", "jpg", "jpeg", "bmp", "tif", "tiff"];

fn has_extension(path: &Path, list: &[&str]) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| list.iter().any(|x| x.eq_ignore_ascii_case(e)))
}

/// True for paths with a still-image extension (`.png`, `.tif`, …).
pub fn has_image_extension(path: &Path) -> bool {
    has_extension(path, &IMAGE_EXTENSIONS)
}

/// True for paths a video sink writes: the container comes from the extension.
pub fn is_video_output(path: &Path) -> bool {
    has_extension(
        path,
        &["mp4", "m4v", "mov", "mkv", "webm", "avi", "ts", "nut"],
    )
}

/// How outputs are written: the encoder of video outputs, and the image format of frames
/// written to a directory.
#[derive(Clone, Debug, Default)]
pub struct OutputOptions {
    /// Encoder name (`--codec`); None picks libx264 when linked, else mpeg4.
    pub codec: Option<String>,
    /// Encoder options (`--codec-opt key=value`), e.g. `crf=18`, `qp=0`, `preset=fast`.
    pub codec_opts: Vec<(String, String)>,
    /// `--streams video-only`: the input's other streams are left out.
    pub video_only: bool,
    /// Frames without names of their own go to a directory as TIFF instead of PNG.
    pub tiff_frames: bool,
}

/// Opens a source for `input`: `synthetic:WxH:FORMAT:FRAMES`, a y4m stream (`-` or `*.y4m`),
/// a directory of images, an image file, or (with the `video` feature) any other file as a
/// video through FFmpeg. With `stop`, reads that block on a pipe end when it is raised.
pub fn open_source(input: &Path, stop: Option<stop::StopFlag>) -> Result<Box<dyn Source>, IoError> {
    if synthetic::is_synthetic(input) {
        return Ok(Box::new(synthetic::SyntheticSource::parse(
            &input.to_string_lossy(),
        )?));
    }
    if is_y4m(input) {
        return Ok(Box::new(y4m::Y4mSource::open(input, stop)?));
    }
    let meta = std::fs::metadata(input).map_err(|e| IoError::open_input(input, e))?;
    if meta.is_dir() {
        return Ok(Box::new(dir::DirSource::open(input)?));
    }
    if is_still(input) {
        return Ok(Box::new(still::StillSource::new(input)));
    }
    #[cfg(feature = "video")]
    {
        Ok(Box::new(video::VideoSource::open(input, stop)?))
    }
    #[cfg(not(feature = "video"))]
    Ok(Box::new(still::StillSource::new(input)))
}

/// True when [`open_source`] reads `input` as one still image: not `synthetic:…` or y4m, not
/// a directory, and an image by its extension or its first bytes.
pub fn is_still(input: &Path) -> bool {
    !synthetic::is_synthetic(input)
        && !is_y4m(input)
        && !input.is_dir()
        && (has_extension(input, &IMAGE_EXTENSIONS) || still::looks_like_image(input))
}

/// What an OUTPUT argument names, decided from the arguments alone before anything is opened
/// (input protection checks it; [`open_sink`] opens it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Output {
    /// `null` or `/dev/null` (any name for it): frames are discarded, nothing is encoded.
    Null,
    /// `-` (stdout) or a `.y4m` file.
    Y4m(PathBuf),
    /// A video file; the container comes from the extension.
    Video(PathBuf),
    /// A directory of images, for a directory or synthetic input: it receives the input's file
    /// names, or `frame_000001.png`, … ([`dir::frame_file_name`]).
    Dir(PathBuf),
    /// One image file; an output that is an existing directory receives the input's file name.
    Still(PathBuf),
}

impl Output {
    /// Classifies `output`. `many` is true for inputs of many image frames (directories,
    /// synthetic frames), which go to a directory unless the output is y4m, video or null.
    pub fn classify(output: &Path, input: &Path, many: bool) -> Output {
        if output.as_os_str() == "null" || is_dev_null(output) {
            Output::Null
        } else if is_y4m(output) {
            Output::Y4m(output.to_path_buf())
        } else if is_video_output(output) {
            Output::Video(output.to_path_buf())
        } else if many {
            Output::Dir(output.to_path_buf())
        } else if output.is_dir() {
            Output::Still(output.join(input.file_name().unwrap_or_default()))
        } else {
            Output::Still(output.to_path_buf())
        }
    }

    /// What input protection compares with the inputs; `names` tells which file names a
    /// directory output will write.
    pub fn guarded<'a>(&'a self, names: &'a dyn Fn(&OsStr) -> bool) -> Option<guard::Output<'a>> {
        Some(match self {
            Output::Null => return None,
            Output::Y4m(p) if p.as_os_str() == "-" => guard::Output::Stdout,
            Output::Y4m(p) | Output::Video(p) | Output::Still(p) => guard::Output::File {
                what: "output",
                path: p,
            },
            Output::Dir(dir) => guard::Output::Dir {
                what: "output",
                dir,
                writes: names,
            },
        })
    }
}

/// True when `path` leads to the null device.
fn is_dev_null(path: &Path) -> bool {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let rdev = |p: &Path| {
        std::fs::metadata(p)
            .ok()
            .filter(|m| m.file_type().is_char_device())
            .map(|m| m.rdev())
    };
    rdev(path).is_some_and(|r| rdev(Path::new("/dev/null")) == Some(r))
}

/// Opens the sink for `output` (see [`Output::classify`]). `stream` is the source's
/// [`Source::stream_info`]; y4m and video outputs need it.
pub fn open_sink(
    output: &Output,
    stream: Option<&StreamInfo>,
    video: &OutputOptions,
) -> Result<Box<dyn Sink>, IoError> {
    let needs_stream = |path: &Path, what: &str| IoError::Unsuitable {
        path: path.to_path_buf(),
        msg: format!(
            "{what} output needs a video, y4m or synthetic input (stills and directories hold \
            RGB or gray images)"
        ),
    };
    // Image files hold gray, RGB and RGBA frames of 8 or 16 bits; a stream of frames goes to
    // one image file only through a directory.
    let image_frames = |path: &Path, many: bool| match stream {
        Some(_) if !many => Err(IoError::Unsuitable {
            path: path.to_path_buf(),
            msg: "a stream of frames goes to a directory, y4m ('-' or a .y4m file), a video \
                  file (.mkv, .mp4, .webm, …) or null, not to one image file"
                .into(),
        }),
        Some(s) if !s.format.is_image() => Err(IoError::Unsuitable {
            path: path.to_path_buf(),
            msg: format!(
                "{} frames can be written as y4m ('-' or a .y4m file), a video file (.mkv, \
                    .mp4, .webm, …) or null; --pix-fmt converts them for images",
                s.format
            ),
        }),
        _ => Ok(()),
    };
    match output {
        Output::Null => Ok(Box::<NullSink>::default()),
        Output::Y4m(path) => {
            let s = stream.ok_or_else(|| needs_stream(path, "y4m"))?;
            let header = match &s.y4m {
                Some(h) => h.clone(),
                None => y4m::Y4mHeader::for_stream(s).ok_or_else(|| IoError::Unsuitable {
                    path: path.to_path_buf(),
                    msg: format!(
                        "y4m holds gray and planar YUV frames (yuv420p, yuv444p10, …), not {}",
                        s.format
                    ),
                })?,
            };
            Ok(Box::new(y4m::Y4mSink::create(path, header)?))
        }
        Output::Video(path) => {
            let s = stream.ok_or_else(|| needs_stream(path, "video"))?;
            #[cfg(feature = "video")]
            return Ok(Box::new(video::VideoSink::create(path, s, video)?));
            #[cfg(not(feature = "video"))]
            {
                let _ = (s, video);
                Err(IoError::Output {
                    path: path.to_path_buf(),
                    msg: "this convflow was built without the 'video' feature".into(),
                })
            }
        }
        Output::Dir(path) => {
            image_frames(path, true)?;
            Ok(Box::new(dir::DirSink::create(path, video.tiff_frames)?))
        }
        Output::Still(path) => {
            image_frames(path, false)?;
            Ok(Box::new(still::StillSink::create(path)?))
        }
    }
}

/// Checks that frame `index` has the format and size a stream output (video, y4m) was opened
/// for, `shape`: an error for `path` naming both, with the fix where formats differ (a frame
/// directory's files may be gray, RGB and RGBA in turn).
pub(crate) fn same_shape(
    frame: &Frame,
    shape: (PixelFormat, usize, usize),
    index: usize,
    path: &Path,
) -> Result<(), IoError> {
    let got = (frame.format(), frame.width(), frame.height());
    if got == shape {
        return Ok(());
    }
    Err(IoError::Write {
        path: path.to_path_buf(),
        msg: format!(
            "frame {index} is {} {}x{} but the output started as {} {}x{}{}",
            got.0,
            got.1,
            got.2,
            shape.0,
            shape.1,
            shape.2,
            if got.0 != shape.0 {
                " (--pix-fmt FMT converts every frame to one format)"
            } else {
                ""
            }
        ),
    })
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
            msg: format!("directory '{}' does not exist", crate::quote::path(&parent)),
        });
    }
    Ok(parent)
}

/// Checks a file output before any work: it names a file (no trailing `/`), its directory
/// exists (through symbolic links too), and it is not an existing directory (which a rename at
/// the end could not replace), block device or socket (which cannot be written in place).
pub fn file_target(path: &Path) -> Result<(), IoError> {
    use std::os::unix::fs::FileTypeExt;
    let err = |msg: &str| IoError::Output {
        path: path.to_path_buf(),
        msg: msg.into(),
    };
    if path.as_os_str().as_encoded_bytes().ends_with(b"/") {
        return Err(err("ends in '/': name a file"));
    }
    existing_parent(path)?;
    existing_parent(&atomic::resolve_links(path))?;
    match std::fs::metadata(path).map(|m| m.file_type()) {
        Ok(t) if t.is_dir() => Err(err("is an existing directory; name a file")),
        Ok(t) if t.is_block_device() => {
            Err(err("is a block device; convflow will not write to it"))
        }
        Ok(t) if t.is_socket() => Err(err("is a socket; convflow writes files, FIFOs and devices")),
        _ => Ok(()),
    }
}
