//! Single still images through the `image` crate (PNG, JPEG, BMP, TIFF).
//!
//! 8-bit gray, RGB and RGBA load as they are; gray+alpha loads as RGBA, and 16-bit or float
//! images are reduced to 8 bits. The output format follows the output file's extension; JPEG
//! cannot hold alpha, so RGBA is written to JPEG as RGB.

use std::path::{Path, PathBuf};

use image::{DynamicImage, ExtendedColorType, ImageFormat};

use super::{existing_parent, temp_sibling, FrameMeta, FrameSlots, IoError, Sink, Source};
use crate::frame::{Frame, PixelFormat};

/// Decodes one image file into a frame.
pub fn load(path: &Path) -> Result<Frame, IoError> {
    let decode_err = |msg: String| IoError::Decode {
        path: path.to_path_buf(),
        msg,
    };
    let reader = image::ImageReader::open(path).map_err(|e| IoError::Read {
        path: path.to_path_buf(),
        msg: e.to_string(),
    })?;
    let reader = reader.with_guessed_format().map_err(|e| decode_err(e.to_string()))?;
    if reader.format().is_none() {
        return Err(decode_err("unknown image format".into()));
    }
    let img = reader.decode().map_err(|e| decode_err(e.to_string()))?;
    let (w, h) = (img.width() as usize, img.height() as usize);
    let (format, data) = match img {
        DynamicImage::ImageLuma8(b) => (PixelFormat::Gray8, b.into_raw()),
        DynamicImage::ImageLuma16(_) => (PixelFormat::Gray8, img.to_luma8().into_raw()),
        DynamicImage::ImageRgb8(b) => (PixelFormat::Rgb8, b.into_raw()),
        DynamicImage::ImageRgba8(b) => (PixelFormat::Rgba8, b.into_raw()),
        DynamicImage::ImageRgb16(_) | DynamicImage::ImageRgb32F(_) => (PixelFormat::Rgb8, img.to_rgb8().into_raw()),
        _ => (PixelFormat::Rgba8, img.to_rgba8().into_raw()),
    };
    let stride = w * format.plane_channels(0);
    Frame::from_parts(format, w, h, &[stride], data).map_err(|e| decode_err(e.to_string()))
}

/// The image format for an output path, from its extension.
/// True when the file's first bytes are an image format this build reads.
pub fn looks_like_image(path: &Path) -> bool {
    image::ImageReader::open(path)
        .and_then(|r| r.with_guessed_format())
        .is_ok_and(|r| r.format().is_some())
}

pub fn output_format(path: &Path) -> Result<ImageFormat, IoError> {
    let fmt = ImageFormat::from_path(path).map_err(|_| IoError::Output {
        path: path.to_path_buf(),
        msg: "unknown image extension (use .png, .jpg, .bmp or .tif)".into(),
    })?;
    match fmt {
        ImageFormat::Png | ImageFormat::Jpeg | ImageFormat::Bmp | ImageFormat::Tiff => Ok(fmt),
        other => Err(IoError::Output {
            path: path.to_path_buf(),
            msg: format!("cannot write {other:?} images (use .png, .jpg, .bmp or .tif)"),
        }),
    }
}

/// Encodes `frame` into `path` atomically: a temporary sibling is written, then renamed.
pub fn save(frame: &Frame, path: &Path, format: ImageFormat) -> Result<(), IoError> {
    let write_err = |msg: String| IoError::Write {
        path: path.to_path_buf(),
        msg,
    };
    let mut data = frame.to_packed();
    let color = match frame.format() {
        PixelFormat::Gray8 => ExtendedColorType::L8,
        PixelFormat::Rgb8 => ExtendedColorType::Rgb8,
        PixelFormat::Rgba8 if format == ImageFormat::Jpeg => {
            data = data.chunks_exact(4).flat_map(|p| [p[0], p[1], p[2]]).collect();
            ExtendedColorType::Rgb8
        }
        PixelFormat::Rgba8 => ExtendedColorType::Rgba8,
        other => return Err(write_err(format!("cannot store a {other} frame as an image file"))),
    };
    let tmp = temp_sibling(path, "tmp");
    let result =
        image::save_buffer_with_format(&tmp, &data, frame.width() as u32, frame.height() as u32, color, format)
            .map_err(|e| write_err(e.to_string()))
            .and_then(|()| std::fs::rename(&tmp, path).map_err(|e| write_err(e.to_string())));
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// One image file as a one-frame source.
pub struct StillSource {
    path: PathBuf,
    done: bool,
}

impl StillSource {
    pub fn new(path: &Path) -> Self {
        StillSource {
            path: path.to_path_buf(),
            done: false,
        }
    }
}

impl Source for StillSource {
    fn describe(&self) -> String {
        self.path.display().to_string()
    }
    fn len_hint(&self) -> Option<usize> {
        Some(1)
    }
    fn next_frame(&mut self, slots: &mut dyn FrameSlots) -> Result<Option<(Frame, FrameMeta)>, IoError> {
        if std::mem::replace(&mut self.done, true) {
            return Ok(None);
        }
        let name = self.path.file_name().map(|n| n.to_string_lossy().into_owned());
        let frame = slots.adopt(load(&self.path)?)?;
        Ok(Some((
            frame,
            FrameMeta {
                index: 0,
                name,
                pts: None,
            },
        )))
    }
}

/// One image file as a sink of exactly one frame.
pub struct StillSink {
    path: PathBuf,
    format: ImageFormat,
    written: bool,
}

impl StillSink {
    /// Checks the extension and the directory now, before any work is done.
    pub fn create(path: &Path) -> Result<Self, IoError> {
        let format = output_format(path)?;
        existing_parent(path)?;
        Ok(StillSink {
            path: path.to_path_buf(),
            format,
            written: false,
        })
    }
}

impl Sink for StillSink {
    fn describe(&self) -> String {
        self.path.display().to_string()
    }
    fn write_frame(&mut self, frame: &Frame, _meta: &FrameMeta) -> Result<(), IoError> {
        if std::mem::replace(&mut self.written, true) {
            return Err(IoError::Output {
                path: self.path.clone(),
                msg: "an image file holds one frame".into(),
            });
        }
        save(frame, &self.path, self.format)
    }
    fn finish(self: Box<Self>) -> Result<(), IoError> {
        Ok(())
    }
    fn abort(self: Box<Self>) {
        // The run failed after this frame was stored (e.g. a --check mismatch found later):
        // the file must not look like a good result.
        if self.written {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}
