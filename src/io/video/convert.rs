//! Pixel-format conversion through swscale, only where it is asked for: `--pix-fmt` (any
//! source), frames that an image output cannot hold (YUV video to PNG frames become RGB), and
//! planar GBR video (FFV1, ProRes 4444 RGB, …) repacked into interleaved RGB, which at 8 and
//! 16 bits is lossless. YUV ↔ RGB uses the stream's matrix (BT.709, BT.601, BT.2020; untagged
//! streams are BT.709 from 720 lines up, else BT.601, as players assume) and range, with full
//! chroma interpolation and accurate rounding.

use ff::ffi;
use ff::format::Pixel;
use ffmpeg_next as ff;

use super::{ff_pixel, map_pixel};
use crate::frame::{Family, Frame, PixelFormat};
use crate::io::{FrameMeta, FrameSlots, HeapSlots, IoError, Source, StreamInfo};

/// A swscale context between two formats of one size.
pub struct Converter {
    ctx: ff::software::scaling::Context,
    /// FFmpeg format of the frames converted from.
    pub from: Pixel,
    /// FFmpeg format of the frames converted to.
    pub to: Pixel,
}

// SAFETY: the context is used by one thread at a time (its owner moves whole between
// pipeline stages); swscale keeps no thread-affine state.
unsafe impl Send for Converter {}

/// swscale's coefficient table for an FFmpeg colour matrix.
fn coefficients(matrix: ffi::AVColorSpace, height: u32) -> libc::c_int {
    use ffi::AVColorSpace as S;
    (match matrix {
        S::AVCOL_SPC_BT709 => ffi::SWS_CS_ITU709,
        S::AVCOL_SPC_BT2020_NCL | S::AVCOL_SPC_BT2020_CL => ffi::SWS_CS_BT2020,
        S::AVCOL_SPC_FCC => ffi::SWS_CS_FCC,
        S::AVCOL_SPC_SMPTE240M => ffi::SWS_CS_SMPTE240M,
        S::AVCOL_SPC_BT470BG | S::AVCOL_SPC_SMPTE170M => ffi::SWS_CS_ITU601,
        _ if height >= 720 => ffi::SWS_CS_ITU709,
        _ => ffi::SWS_CS_ITU601,
    }) as libc::c_int
}

fn is_rgb(p: Pixel) -> bool {
    p.descriptor()
        .is_some_and(|d| d.name().starts_with("gbr") || d.name().starts_with("rgb"))
}

impl Converter {
    /// From `from` to `to` at `width`×`height`; `matrix` and `full_range` describe the YUV side.
    pub fn new(
        from: Pixel,
        to: Pixel,
        width: u32,
        height: u32,
        matrix: ffi::AVColorSpace,
        full_range: bool,
    ) -> Result<Self, String> {
        use ff::software::scaling::Flags;
        let flags =
            Flags::BICUBIC | Flags::ACCURATE_RND | Flags::FULL_CHR_H_INT | Flags::FULL_CHR_H_INP;
        let Converter { mut ctx, .. } = Self::with_flags(from, to, width, height, flags)?;
        let range = |p: Pixel| libc::c_int::from(is_rgb(p) || full_range);
        // SAFETY: a live context; the tables are swscale's static coefficient tables.
        unsafe {
            let table = ffi::sws_getCoefficients(coefficients(matrix, height));
            ffi::sws_setColorspaceDetails(
                ctx.as_mut_ptr(),
                table,
                range(from),
                table,
                range(to),
                0,
                1 << 16,
                1 << 16,
            );
        }
        Ok(Converter { ctx, from, to })
    }

    /// The same samples in another layout (NV12 as planar YUV, interleaved RGB as GBR planes
    /// or BGR0, and back): point sampling, bit-exact.
    pub fn repack(from: Pixel, to: Pixel, width: u32, height: u32) -> Result<Self, String> {
        use ff::software::scaling::Flags;
        let flags = Flags::POINT | Flags::ACCURATE_RND | Flags::BITEXACT;
        Self::with_flags(from, to, width, height, flags)
    }

    fn with_flags(
        from: Pixel,
        to: Pixel,
        width: u32,
        height: u32,
        flags: ff::software::scaling::Flags,
    ) -> Result<Self, String> {
        let ctx =
            ff::software::scaling::Context::get(from, width, height, to, width, height, flags)
                .map_err(|e| {
                    let name = |p: Pixel| p.descriptor().map_or("?", |d| d.name());
                    format!("cannot convert {} to {}: {e}", name(from), name(to))
                })?;
        Ok(Converter { ctx, from, to })
    }

    /// Converts `src` into `dst` (both of the converter's formats and size); the error says
    /// what swscale reported.
    pub fn run(
        &mut self,
        src: &ff::frame::Video,
        dst: &mut ff::frame::Video,
    ) -> Result<(), String> {
        self.ctx
            .run(src, dst)
            .map_err(|e| format!("converting pixels: {e}"))
    }
}

/// Our format for frames of an FFmpeg format that convflow does not filter natively but holds
/// without loss (or, for 9 to 14-bit planar RGB, in 16 bits): planar GBR(A) and the other
/// channel orders of packed RGB (BGR0 is how FFV1 codes 8-bit RGB) as interleaved RGB(A).
pub(super) fn repacked_twin(p: Pixel) -> Option<PixelFormat> {
    let name = p.descriptor()?.name();
    match name {
        "bgr0" | "rgb0" | "0rgb" | "0bgr" | "bgr24" => return Some(PixelFormat::Rgb8),
        "bgra" | "argb" | "abgr" => return Some(PixelFormat::Rgba8),
        "bgr48le" | "rgb48be" | "bgr48be" => return Some(PixelFormat::Rgb16),
        "bgra64le" | "rgba64be" | "bgra64be" => return Some(PixelFormat::Rgba16),
        _ => {}
    }
    let rest = name.strip_prefix("gbr")?;
    let alpha = rest.starts_with("ap");
    let eight = rest == "p" || rest == "ap";
    Some(match (alpha, eight) {
        (false, true) => PixelFormat::Rgb8,
        (true, true) => PixelFormat::Rgba8,
        (false, false) if name.ends_with("le") => PixelFormat::Rgb16,
        (true, false) if name.ends_with("le") => PixelFormat::Rgba16,
        _ => return None,
    })
}

/// The format an image file (PNG/TIFF) holds for frames of `f`: itself when it can, else RGB
/// (or gray) at 8 bits, or 16 for deeper frames.
pub fn image_format_for(f: PixelFormat) -> PixelFormat {
    if f.is_image() {
        return f;
    }
    let deep = f.depth().bits() > 8;
    match (f.family(), deep) {
        (Family::Gray, _) => PixelFormat::Gray16,
        (Family::Rgba, _) => PixelFormat::Rgba16,
        (_, true) => PixelFormat::Rgb16,
        (_, false) => PixelFormat::Rgb8,
    }
}

/// Copies one of our frames into an FFmpeg frame of the same format and size.
pub(super) fn to_ff(frame: &Frame, dst: &mut ff::frame::Video) {
    for p in 0..frame.planes().len() {
        let stride = dst.stride(p);
        let data = dst.data_mut(p);
        for y in 0..frame.planes()[p].height {
            let row = frame.row(p, y);
            data[y * stride..y * stride + row.len()].copy_from_slice(row);
        }
    }
}

/// Copies an FFmpeg frame into one of our frames of the same format and size.
pub(super) fn from_ff(src: &ff::frame::Video, frame: &mut Frame) -> Result<(), String> {
    for p in 0..frame.planes().len() {
        let (stride, rows) = (src.stride(p), frame.planes()[p].height);
        let data = src.data(p);
        for y in 0..rows {
            let row = frame.row_mut(p, y);
            let n = row.len();
            // A plane shorter than its size says is an error, not a panic.
            let line = y
                .checked_mul(stride)
                .and_then(|o| data.get(o..o.checked_add(n)?))
                .ok_or_else(|| format!("plane {p} of the frame is not laid out as expected"))?;
            row.copy_from_slice(line);
        }
    }
    Ok(())
}

/// A source whose frames are converted to another format (`--pix-fmt`, or for an image
/// output) before they are filtered.
pub struct ConvertSource {
    inner: Box<dyn Source>,
    to: PixelFormat,
    /// The converter, made for the first frame's size (images in a directory may differ).
    conv: Option<(
        Converter,
        ff::frame::Video,
        ff::frame::Video,
        PixelFormat,
        usize,
        usize,
    )>,
}

impl ConvertSource {
    /// Wraps `inner` so every frame comes out as `to`; fails only if FFmpeg cannot start.
    pub fn new(inner: Box<dyn Source>, to: PixelFormat) -> Result<Self, IoError> {
        super::init().map_err(|e| IoError::Read {
            path: inner.describe().into(),
            msg: format!("FFmpeg did not start: {e}"),
        })?;
        Ok(ConvertSource {
            inner,
            to,
            conv: None,
        })
    }
}

impl Source for ConvertSource {
    fn describe(&self) -> String {
        self.inner.describe()
    }
    fn files(&self) -> Vec<std::path::PathBuf> {
        self.inner.files()
    }
    fn len_hint(&self) -> Option<usize> {
        self.inner.len_hint()
    }
    fn stream_info(&self) -> Option<StreamInfo> {
        self.inner.stream_info().map(|s| StreamInfo {
            format: self.to,
            full_range: s.full_range && !matches!(self.to.family(), Family::Rgb | Family::Rgba),
            y4m: None,
            ..s
        })
    }
    fn declare_stream(&mut self, rate: (i32, i32)) -> Result<Option<StreamInfo>, IoError> {
        self.inner.declare_stream(rate)?;
        Ok(self.stream_info())
    }

    fn next_frame(
        &mut self,
        slots: &mut dyn FrameSlots,
    ) -> Result<Option<(Frame, FrameMeta)>, IoError> {
        let Some((frame, meta)) = self.inner.next_frame(&mut HeapSlots)? else {
            return Ok(None);
        };
        if frame.format() == self.to {
            return Ok(Some((slots.adopt(frame)?, meta)));
        }
        let (w, h, f) = (frame.width(), frame.height(), frame.format());
        let err = |msg: String| IoError::BadFrame {
            input: self.inner.describe(),
            index: meta.index,
            msg,
        };
        let fresh =
            !matches!(&self.conv, Some((_, _, _, cf, cw, ch)) if (*cf, *cw, *ch) == (f, w, h));
        if fresh {
            let (from, to) = (ff_pixel(f), ff_pixel(self.to));
            let info = self.inner.stream_info();
            let full = info.as_ref().is_some_and(|s| s.full_range);
            let matrix = info
                .and_then(|s| s.carry)
                .map_or(ffi::AVColorSpace::AVCOL_SPC_UNSPECIFIED, |c| {
                    c.colour().matrix
                });
            let conv = Converter::new(from, to, w as u32, h as u32, matrix, full).map_err(err)?;
            let src = ff::frame::Video::new(from, w as u32, h as u32);
            let dst = ff::frame::Video::new(to, w as u32, h as u32);
            self.conv = Some((conv, src, dst, f, w, h));
        }
        let (conv, src, dst, ..) = self.conv.as_mut().expect("made above");
        to_ff(&frame, src);
        conv.run(src, dst).map_err(err)?;
        let mut out = slots.take(self.to, w, h)?;
        from_ff(dst, &mut out).map_err(err)?;
        debug_assert!(map_pixel(dst.format()).is_some());
        Ok(Some((out, meta)))
    }
}
