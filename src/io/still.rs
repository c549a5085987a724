//! Single still images through the `image` crate (PNG, JPEG, BMP, TIFF).
//!
//! Gray, RGB and RGBA load as they are, at 8 or 16 bits; gray+alpha loads as RGBA and floating
//! point as 16 bits. An EXIF orientation (JPEG, PNG, TIFF) is applied on read, as image viewers
//! and OpenCV's `imread` do, so the pixels come out upright; outputs carry no orientation tag.
//! An embedded ICC colour profile travels with the frame ([`ICC_PROFILE`] side data) and is
//! written into PNG, JPEG and TIFF outputs when it describes the frame's colours (a gray or
//! an RGB profile; not a CMYK JPEG's, decoded to RGB; the BMP encoder writes none), so
//! colour-managed viewers show the output's colours as the input's. Decoding is bounded by the
//! memory budget ([`crate::memory`]) and a decoder panic on hostile bytes becomes an error. The
//! output format follows the output file's extension; JPEG cannot hold alpha, so RGBA is
//! written to JPEG as RGB.

use std::io::{BufRead, Seek, Write};
use std::path::{Path, PathBuf};

use image::{DynamicImage, ExtendedColorType, ImageDecoder, ImageFormat};

use super::atomic::PendingFile;
use super::{existing_parent, FrameMeta, FrameSlots, IoError, SideData, Sink, Source, ICC_PROFILE};
use crate::frame::{Frame, PixelFormat};

thread_local! {
    static QUIET_PANICS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// True while this thread runs a decoder whose panics are caught and reported as errors: a
/// panic hook may stay silent then (the CLI's does).
pub fn panics_are_caught() -> bool {
    QUIET_PANICS.with(|q| q.get())
}

/// Runs `f`, turning a panic into `Err(message)`.
fn catch<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    QUIET_PANICS.with(|q| q.set(true));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    QUIET_PANICS.with(|q| q.set(false));
    r.map_err(|p| {
        let msg = p
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown".into());
        format!("the decoder failed ({msg})")
    })
}

/// What a PNG decoder may allocate for metadata (colour profile, text): 64 MiB, or an eighth
/// of the memory budget when that is less.
const METADATA_CAP: u64 = 64 << 20;

/// Decodes an image from `reader` (format guessed from its first bytes) into a frame; `origin`
/// names it in errors. The decoded image must fit the memory budget ([`crate::memory`]).
pub fn decode<R: BufRead + Seek>(reader: R, origin: &Path) -> Result<Frame, IoError> {
    decode_within(reader, origin, crate::memory::budget().map(|(b, _)| b))
}

/// [`decode`] with an explicit cap in bytes on the decoded image (None: no cap).
pub fn decode_within<R: BufRead + Seek>(
    reader: R,
    origin: &Path,
    cap: Option<u64>,
) -> Result<Frame, IoError> {
    decode_parts(reader, origin, cap).map(|(frame, _)| frame)
}

/// [`decode_within`], and the image's ICC colour profile when it embeds one.
fn decode_parts<R: BufRead + Seek>(
    reader: R,
    origin: &Path,
    cap: Option<u64>,
) -> Result<(Frame, Option<Vec<u8>>), IoError> {
    let decode_err = |msg: String| IoError::Decode {
        path: origin.to_path_buf(),
        msg: msg.replace(['\n', '\r'], " "),
    };
    let mut reader = image::ImageReader::new(reader)
        .with_guessed_format()
        .map_err(|e| decode_err(e.to_string()))?;
    if reader.format().is_none() {
        return Err(decode_err("unknown image format".into()));
    }
    let png = reader.format() == Some(image::ImageFormat::Png);
    reader.limits(limits(png, cap));
    type Decoded = (PixelFormat, usize, usize, Vec<u8>, Option<Vec<u8>>);
    let (format, w, h, data, icc) = catch(|| -> Result<Decoded, String> {
        let mut decoder = reader.into_decoder().map_err(|e| match e {
            image::ImageError::Limits(_) if png => format!(
                "its metadata (a colour profile or text) inflates beyond what convflow allows \
                 ({} MiB at most)",
                METADATA_CAP >> 20
            ),
            image::ImageError::Limits(_) => {
                "decoding it needs more memory than convflow may use".to_string()
            }
            e => e.to_string(),
        })?;
        // The header's size is checked before the image buffer is allocated (as
        // `ImageReader::decode` does, which this path replaces to read the orientation); an
        // image that must be converted to a frame format needs room for the copy too.
        let (w, h) = image::ImageDecoder::dimensions(&decoder);
        let bytes = image::ImageDecoder::total_bytes(&decoder);
        let direct = matches!(
            image::ImageDecoder::color_type(&decoder),
            image::ColorType::L8 | image::ColorType::Rgb8 | image::ColorType::Rgba8
        );
        let need = bytes
            + if direct {
                0
            } else {
                u64::from(w) * u64::from(h) * 4
            };
        if let Some(cap) = cap.filter(|&c| need > c) {
            return Err(format!(
                "{w}x{h} image needs {} MiB decoded, more than the {} MiB convflow may use \
                 (free memory and limits; CONVFLOW_MEMORY_LIMIT sets it)",
                need >> 20,
                cap >> 20
            ));
        }
        let orientation = decoder.orientation().map_err(|e| e.to_string())?;
        // A damaged profile costs the profile, not the image.
        let icc = decoder
            .icc_profile()
            .ok()
            .flatten()
            .filter(|p| !p.is_empty());
        let mut img = DynamicImage::from_decoder(decoder).map_err(|e| match e {
            image::ImageError::Limits(_) => {
                format!("{w}x{h} image: the decoder needs more memory than convflow may use")
            }
            e => e.to_string(),
        })?;
        img.apply_orientation(orientation);
        let (w, h) = (img.width() as usize, img.height() as usize);
        // 8- and 16-bit images keep their depth; gray with alpha becomes RGBA (there is no
        // gray+alpha frame format), floating point becomes 16-bit.
        let le = |v: Vec<u16>| {
            v.into_iter()
                .flat_map(u16::to_le_bytes)
                .collect::<Vec<u8>>()
        };
        let (format, data) = match img {
            DynamicImage::ImageLuma8(b) => (PixelFormat::Gray8, b.into_raw()),
            DynamicImage::ImageRgb8(b) => (PixelFormat::Rgb8, b.into_raw()),
            DynamicImage::ImageRgba8(b) => (PixelFormat::Rgba8, b.into_raw()),
            DynamicImage::ImageLuma16(b) => (PixelFormat::Gray16, le(b.into_raw())),
            DynamicImage::ImageRgb16(b) => (PixelFormat::Rgb16, le(b.into_raw())),
            DynamicImage::ImageRgba16(b) => (PixelFormat::Rgba16, le(b.into_raw())),
            DynamicImage::ImageLumaA8(_) => (PixelFormat::Rgba8, img.to_rgba8().into_raw()),
            DynamicImage::ImageRgb32F(_) => (PixelFormat::Rgb16, le(img.to_rgb16().into_raw())),
            _ => (PixelFormat::Rgba16, le(img.to_rgba16().into_raw())),
        };
        Ok((format, w, h, data, icc))
    })
    .map_err(decode_err)?
    .map_err(decode_err)?;
    let stride = w * format.plane_channels(0) * format.depth().bytes();
    let frame =
        Frame::from_parts(format, w, h, &[stride], data).map_err(|e| decode_err(e.to_string()))?;
    Ok((frame, icc))
}

/// What a decoder may allocate besides the image, given `cap` on the decoded image: for PNG
/// that bounds the colour profile and text chunks it inflates (a few MB of iCCP can inflate to
/// gigabytes); other decoders count their working buffers, which grow with the image, against
/// the whole cap.
fn limits(png: bool, cap: Option<u64>) -> image::Limits {
    let mut limits = image::Limits::default();
    limits.max_alloc = if png {
        // An eighth of the budget at most: the inflater's buffer grows by doubling, and the
        // image itself still needs room.
        Some(cap.map_or(METADATA_CAP, |c| (c / 8).min(METADATA_CAP)))
    } else {
        cap
    };
    limits
}

/// Opens an image file without waiting on a FIFO: anything but a regular file is an error
/// (images are read with seeks).
fn open_regular(path: &Path) -> Result<std::fs::File, IoError> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| IoError::open_input(path, e))?;
    if !file.metadata().is_ok_and(|m| m.is_file()) {
        return Err(IoError::Decode {
            path: path.to_path_buf(),
            msg: "not a regular file".into(),
        });
    }
    Ok(file)
}

/// Decodes one image file into a frame: a regular file, opened without waiting on a FIFO.
pub fn load(path: &Path) -> Result<Frame, IoError> {
    load_with_profile(path).map(|(frame, _)| frame)
}

/// [`load`], and the image's ICC colour profile as frame side data ([`ICC_PROFILE`]).
pub fn load_with_profile(path: &Path) -> Result<(Frame, SideData), IoError> {
    let cap = crate::memory::budget().map(|(b, _)| b);
    let (frame, icc) = decode_parts(std::io::BufReader::new(open_regular(path)?), path, cap)?;
    Ok((frame, icc.map(|p| (ICC_PROFILE, p)).into_iter().collect()))
}

/// The ICC colour profile among a frame's side data, if any.
pub fn icc_profile(side_data: &[(u32, Vec<u8>)]) -> Option<&[u8]> {
    side_data
        .iter()
        .find(|(kind, _)| *kind == ICC_PROFILE)
        .map(|(_, p)| &p[..])
}

/// True when the file's first bytes are an image format this build reads (regular files
/// only: a FIFO is never opened here).
pub fn looks_like_image(path: &Path) -> bool {
    if !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
        return false;
    }
    image::ImageReader::open(path)
        .and_then(|r| r.with_guessed_format())
        .is_ok_and(|r| r.format().is_some())
}

/// Width, height and samples per pixel of the image at `path` as [`load`] gives it (gray with
/// alpha as RGBA), from its header: None when it cannot be read as an image (reading the frame
/// then says why). Nothing is decoded and the decoder's limits are [`decode`]'s, but what a
/// decoder reads to find the header is read: PNG's chunks before the image data (metadata
/// inflated within the same cap), a whole JPEG file.
pub fn header(path: &Path) -> Option<(usize, usize, usize)> {
    header_of(std::io::BufReader::new(open_regular(path).ok()?))
}

/// [`header`] of an image read from `reader`.
pub fn header_of<R: BufRead + Seek>(reader: R) -> Option<(usize, usize, usize)> {
    let mut reader = image::ImageReader::new(reader).with_guessed_format().ok()?;
    let png = reader.format() == Some(image::ImageFormat::Png);
    reader.limits(limits(png, crate::memory::budget().map(|(b, _)| b)));
    catch(|| {
        let decoder = reader.into_decoder().ok()?;
        let (w, h) = decoder.dimensions();
        let channels = match decoder.color_type().channel_count() {
            2 => 4,
            n => n as usize,
        };
        Some((w as usize, h as usize, channels))
    })
    .ok()
    .flatten()
}

/// The image format for an output path, from its extension.
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

/// Encodes `frame` as `format` into `out`, with the ICC colour profile `icc` where the format
/// holds one (PNG, JPEG, TIFF); `path` names the output in errors.
pub fn encode<W: Write + Seek>(
    frame: &Frame,
    format: ImageFormat,
    out: &mut W,
    path: &Path,
    icc: Option<&[u8]>,
) -> Result<(), IoError> {
    let write_err = |msg: String| IoError::Write {
        path: path.to_path_buf(),
        msg,
    };
    let mut data = frame.to_packed();
    let deep = frame.format().depth().bits() == 16;
    if deep && !matches!(format, ImageFormat::Png | ImageFormat::Tiff) {
        return Err(write_err(format!(
            "{} frames have 16-bit samples, which {format:?} cannot hold; write .png or .tif",
            frame.format()
        )));
    }
    if deep {
        // The image crate takes 16-bit samples in the machine's byte order.
        for s in data.chunks_exact_mut(2) {
            let v = u16::from_le_bytes([s[0], s[1]]);
            s.copy_from_slice(&v.to_ne_bytes());
        }
    }
    let color = match frame.format() {
        PixelFormat::Gray8 => ExtendedColorType::L8,
        PixelFormat::Rgb8 => ExtendedColorType::Rgb8,
        PixelFormat::Rgba8 if format == ImageFormat::Jpeg => {
            data = data
                .chunks_exact(4)
                .flat_map(|p| [p[0], p[1], p[2]])
                .collect();
            ExtendedColorType::Rgb8
        }
        PixelFormat::Rgba8 => ExtendedColorType::Rgba8,
        PixelFormat::Gray16 => ExtendedColorType::L16,
        PixelFormat::Rgb16 => ExtendedColorType::Rgb16,
        PixelFormat::Rgba16 => ExtendedColorType::Rgba16,
        other => {
            return Err(write_err(format!(
                "cannot store a {other} frame as an image file (images hold gray, RGB and RGBA \
                 at 8 or 16 bits)"
            )))
        }
    };
    let (w, h) = (frame.width() as u32, frame.height() as u32);
    let icc = icc.filter(|p| profile_fits(p, frame.format(), format));
    /// Sets the profile where the encoder takes one (BMP's does not), then writes.
    fn write<E: image::ImageEncoder>(
        mut encoder: E,
        icc: Option<&[u8]>,
        image: (&[u8], u32, u32, ExtendedColorType),
    ) -> image::ImageResult<()> {
        if let Some(p) = icc {
            let _ = encoder.set_icc_profile(p.to_vec());
        }
        encoder.write_image(image.0, image.1, image.2, image.3)
    }
    use image::codecs::{bmp::BmpEncoder, jpeg::JpegEncoder, png::PngEncoder, tiff::TiffEncoder};
    let image = (&data[..], w, h, color);
    match format {
        ImageFormat::Png => write(PngEncoder::new(&mut *out), icc, image),
        ImageFormat::Jpeg => write(JpegEncoder::new(&mut *out), icc, image),
        ImageFormat::Tiff => write(TiffEncoder::new(&mut *out), icc, image),
        ImageFormat::Bmp => write(BmpEncoder::new(out), icc, image),
        _ => image::write_buffer_with_format(out, &data, w, h, color, format),
    }
    .map_err(|e| write_err(e.to_string()))?;
    out.flush().map_err(|e| write_err(e.to_string()))
}

/// Whether an ICC profile may go with frames of `frame` into `format`: its data colour space
/// (header bytes 16–19) must be the frame's, `GRAY` for gray and `RGB ` for RGB(A) (a CMYK
/// JPEG's profile does not describe the RGB it was decoded to, nor a gray image's the RGBA it
/// loads as), and JPEG's APP2 segments hold at most 255 × 65 519 bytes.
fn profile_fits(profile: &[u8], frame: PixelFormat, format: ImageFormat) -> bool {
    let space = profile.get(16..20);
    let fits = match frame {
        PixelFormat::Gray8 | PixelFormat::Gray16 => space == Some(b"GRAY"),
        _ => space == Some(b"RGB "),
    };
    fits && (format != ImageFormat::Jpeg || profile.len() <= 255 * 65_519)
}

/// One image file as a one-frame source.
pub struct StillSource {
    path: PathBuf,
    done: bool,
}

impl StillSource {
    /// A source for the image at `path`; the file is opened when the frame is read.
    pub fn new(path: &Path) -> Self {
        StillSource {
            path: path.to_path_buf(),
            done: false,
        }
    }
}

impl Source for StillSource {
    fn describe(&self) -> String {
        crate::quote::path(&self.path)
    }
    fn files(&self) -> Vec<PathBuf> {
        vec![self.path.clone()]
    }
    fn len_hint(&self) -> Option<usize> {
        Some(1)
    }
    fn next_frame(
        &mut self,
        slots: &mut dyn FrameSlots,
    ) -> Result<Option<(Frame, FrameMeta)>, IoError> {
        if std::mem::replace(&mut self.done, true) {
            return Ok(None);
        }
        let name = self.path.file_name().map(|n| n.to_os_string());
        let (frame, side_data) = load_with_profile(&self.path)?;
        let frame = slots.adopt(frame)?;
        Ok(Some((
            frame,
            FrameMeta {
                index: 0,
                name,
                pts: None,
                side_data,
                ..Default::default()
            },
        )))
    }
}

/// One image file as a sink of exactly one frame, renamed into place by `finish`.
pub struct StillSink {
    path: PathBuf,
    format: ImageFormat,
    pending: Option<PendingFile>,
}

impl StillSink {
    /// Checks the extension and the directory now, before any work is done.
    pub fn create(path: &Path) -> Result<Self, IoError> {
        let format = output_format(path)?;
        existing_parent(path)?;
        Ok(StillSink {
            path: path.to_path_buf(),
            format,
            pending: None,
        })
    }
}

impl Sink for StillSink {
    fn describe(&self) -> String {
        crate::quote::path(&self.path)
    }
    fn write_frame(&mut self, frame: &Frame, meta: &FrameMeta) -> Result<(), IoError> {
        if self.pending.is_some() {
            return Err(IoError::Output {
                path: self.path.clone(),
                msg: "an image file holds one frame".into(),
            });
        }
        let mut f = PendingFile::create(&self.path).map_err(|e| IoError::Output {
            path: self.path.clone(),
            msg: e.to_string(),
        })?;
        encode(
            frame,
            self.format,
            &mut std::io::BufWriter::new(&mut f),
            &self.path,
            icc_profile(&meta.side_data),
        )?;
        self.pending = Some(f);
        Ok(())
    }
    fn finish(self: Box<Self>) -> Result<(), IoError> {
        let path = self.path;
        match self.pending {
            Some(f) => f.commit().map_err(|e| IoError::Write {
                path,
                msg: e.to_string(),
            }),
            None => Ok(()),
        }
    }
    fn abort(self: Box<Self>) {
        // Dropping the pending file removes it.
    }
}
