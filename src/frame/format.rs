//! Pixel formats: a [`Family`] (how planes and channels are arranged) at a sample [`Depth`]
//! (8 bits in a byte, or 9 to 16 bits in a little-endian word, low- or MSB-aligned), with the
//! names FFmpeg and y4m use, plane counts, sizes and channels.

use std::fmt;

/// How the samples of a format are stored: 8-bit in one byte, or 9 to 16 significant bits in a
/// little-endian 16-bit word — in its low bits (FFmpeg's `yuv420p10le`, `gray12le`, …), or in
/// its high bits with the low bits zero (`msb`: P010, P012, what NVDEC produces).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Depth {
    bits: u8,
    msb: bool,
}

impl Depth {
    /// 8 bits in one byte.
    pub const U8: Depth = Depth {
        bits: 8,
        msb: false,
    };
    /// 16 bits in a little-endian word.
    pub const U16: Depth = Depth {
        bits: 16,
        msb: false,
    };

    /// `bits` significant bits (8…16) stored in the low bits of their word.
    pub const fn new(bits: u8) -> Depth {
        Depth { bits, msb: false }
    }

    /// `bits` significant bits in the high bits of a 16-bit word.
    pub const fn msb(bits: u8) -> Depth {
        Depth {
            bits,
            msb: bits < 16,
        }
    }

    /// Significant bits per sample.
    pub const fn bits(self) -> u32 {
        self.bits as u32
    }

    /// Bytes per stored sample: 1 or 2.
    pub const fn bytes(self) -> usize {
        if self.bits > 8 {
            2
        } else {
            1
        }
    }

    /// The largest sample value, 2^bits − 1: where the output rule saturates.
    pub const fn max(self) -> u16 {
        ((1u32 << self.bits) - 1) as u16
    }

    /// The largest value [`Depth::get`] can return: [`Depth::max`] for 8-bit, 16-bit and
    /// MSB-aligned samples; 65535 for 10- and 12-bit samples in the low bits of their words,
    /// whose unused high bits a malformed input may set (the contract then takes the word as
    /// it is).
    pub const fn largest_stored(self) -> u16 {
        if self.bits == 8 || self.msb {
            self.max()
        } else {
            u16::MAX
        }
    }

    /// How far values are shifted up in their word (16 − bits for MSB-aligned formats, else 0).
    pub const fn shift(self) -> u32 {
        if self.msb {
            16 - self.bits as u32
        } else {
            0
        }
    }

    /// The value of sample `i` (counted in samples, not bytes) of `row`.
    #[inline(always)]
    pub fn get(self, row: &[u8], i: usize) -> u16 {
        if self.bits == 8 {
            row[i] as u16
        } else {
            u16::from_le_bytes([row[2 * i], row[2 * i + 1]]) >> self.shift()
        }
    }

    /// The values of the 16-bit words in `bytes` (a depth of more than 8 bits), in order: each
    /// what [`Depth::get`] gives, in a loop without bounds checks that compiles to vector code.
    #[inline(always)]
    pub fn words(self, bytes: &[u8]) -> impl Iterator<Item = u16> + '_ {
        debug_assert!(self.bits > 8 && bytes.len().is_multiple_of(2));
        let shift = self.shift();
        bytes
            .chunks_exact(2)
            .map(move |w| u16::from_le_bytes([w[0], w[1]]) >> shift)
    }

    /// Stores `v` (at most [`Depth::max`]) as sample `i` of `row`.
    #[inline(always)]
    pub fn put(self, row: &mut [u8], i: usize, v: u16) {
        if self.bits == 8 {
            row[i] = v as u8;
        } else {
            row[2 * i..2 * i + 2].copy_from_slice(&(v << self.shift()).to_le_bytes());
        }
    }
}

/// How a format arranges its planes and channels (the sample depth aside).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Family {
    /// One plane of luma only.
    Gray,
    /// Interleaved R, G, B.
    Rgb,
    /// Interleaved R, G, B, A.
    Rgba,
    /// Planar Y, U, V with chroma halved in both directions.
    Yuv420,
    /// Planar, chroma halved horizontally.
    Yuv422,
    /// Planar, chroma at full resolution.
    Yuv444,
    /// Y plane, then one plane of interleaved U/V at half resolution in both directions (NV12;
    /// P010/P012/P016 at higher depths).
    Nv12,
}

/// A pixel format: a [`Family`] at a sample [`Depth`]. Names follow FFmpeg's, without its
/// `le` suffix (which is accepted): `gray`, `gray10`, `gray16`, `rgb`, `rgb48`, `rgba`,
/// `rgba64`, `yuv420p`, `yuv420p10`, `yuv444p16`, `nv12`, `p010`, `p016`, …
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PixelFormat {
    family: Family,
    depth: Depth,
}

#[allow(non_upper_case_globals)]
impl PixelFormat {
    /// `gray`: 8-bit luma.
    pub const Gray8: PixelFormat = PixelFormat::new(Family::Gray, Depth::U8);
    /// `rgb` (FFmpeg's `rgb24`): 8-bit interleaved R, G, B.
    pub const Rgb8: PixelFormat = PixelFormat::new(Family::Rgb, Depth::U8);
    /// `rgba`: 8-bit interleaved R, G, B, A.
    pub const Rgba8: PixelFormat = PixelFormat::new(Family::Rgba, Depth::U8);
    /// `yuv420p`: 8-bit planar YUV, chroma halved both ways.
    pub const Yuv420p: PixelFormat = PixelFormat::new(Family::Yuv420, Depth::U8);
    /// `yuv422p`: 8-bit planar YUV, chroma halved horizontally.
    pub const Yuv422p: PixelFormat = PixelFormat::new(Family::Yuv422, Depth::U8);
    /// `yuv444p`: 8-bit planar YUV, chroma at full resolution.
    pub const Yuv444p: PixelFormat = PixelFormat::new(Family::Yuv444, Depth::U8);
    /// `nv12`: 8-bit Y plane and one interleaved UV plane at half resolution.
    pub const Nv12: PixelFormat = PixelFormat::new(Family::Nv12, Depth::U8);
    /// `gray16`: 16-bit luma.
    pub const Gray16: PixelFormat = PixelFormat::new(Family::Gray, Depth::U16);
    /// `rgb48`: 16-bit interleaved R, G, B.
    pub const Rgb16: PixelFormat = PixelFormat::new(Family::Rgb, Depth::U16);
    /// `rgba64`: 16-bit interleaved R, G, B, A.
    pub const Rgba16: PixelFormat = PixelFormat::new(Family::Rgba, Depth::U16);
    /// `yuv420p10`: 10 bits in the low bits of 16-bit words, planar 4:2:0.
    pub const Yuv420p10: PixelFormat = PixelFormat::new(Family::Yuv420, Depth::new(10));
    /// `p010`: NV12 layout, 10 bits in the high bits of 16-bit words.
    pub const P010: PixelFormat = PixelFormat::new(Family::Nv12, Depth::msb(10));

    /// `family` at `depth`, unchecked: [`PixelFormat::all`] lists the combinations that exist.
    pub const fn new(family: Family, depth: Depth) -> Self {
        PixelFormat { family, depth }
    }

    /// Every format: each family at each depth FFmpeg has for it.
    pub fn all() -> &'static [PixelFormat] {
        static ALL: std::sync::OnceLock<Vec<PixelFormat>> = std::sync::OnceLock::new();
        ALL.get_or_init(|| {
            use Family::*;
            let mut v = Vec::new();
            for f in [Gray, Rgb, Rgba, Yuv420, Yuv422, Yuv444, Nv12] {
                for depth in Self::depths(f) {
                    v.push(PixelFormat::new(f, depth));
                }
            }
            v
        })
    }

    /// The depths a family comes in.
    fn depths(f: Family) -> Vec<Depth> {
        match f {
            Family::Rgb | Family::Rgba => vec![Depth::U8, Depth::U16],
            Family::Nv12 => vec![Depth::U8, Depth::msb(10), Depth::msb(12), Depth::U16],
            _ => [8, 9, 10, 12, 14, 16].map(Depth::new).to_vec(),
        }
    }

    /// How the planes and channels are arranged.
    pub fn family(self) -> Family {
        self.family
    }

    /// How each sample is stored.
    pub fn depth(self) -> Depth {
        self.depth
    }

    /// The same family at another depth (`None` where FFmpeg has no such format).
    pub fn with_depth(self, depth: Depth) -> Option<PixelFormat> {
        Self::depths(self.family)
            .into_iter()
            .find(|d| d.bits == depth.bits)
            .map(|d| PixelFormat::new(self.family, d))
    }

    /// The name users write (`gray`, `rgb48`, `yuv420p10`, `p010`, …).
    pub fn name(self) -> String {
        let b = self.depth.bits;
        match (self.family, b) {
            (Family::Gray, 8) => "gray".into(),
            (Family::Gray, _) => format!("gray{b}"),
            (Family::Rgb, 8) => "rgb".into(),
            (Family::Rgb, _) => "rgb48".into(),
            (Family::Rgba, 8) => "rgba".into(),
            (Family::Rgba, _) => "rgba64".into(),
            (Family::Yuv420, 8) => "yuv420p".into(),
            (Family::Yuv422, 8) => "yuv422p".into(),
            (Family::Yuv444, 8) => "yuv444p".into(),
            (Family::Yuv420, _) => format!("yuv420p{b}"),
            (Family::Yuv422, _) => format!("yuv422p{b}"),
            (Family::Yuv444, _) => format!("yuv444p{b}"),
            (Family::Nv12, 8) => "nv12".into(),
            (Family::Nv12, _) => format!("p0{b}"),
        }
    }

    /// Every name, for help and errors.
    pub fn names() -> Vec<String> {
        Self::all().iter().map(|f| f.name()).collect()
    }

    /// Parses a name (FFmpeg's `le` suffix accepted; `rgb24` for `rgb`), with an error that
    /// lists the valid ones.
    pub fn parse(s: &str) -> Result<Self, String> {
        let t = s.strip_suffix("le").unwrap_or(s);
        let t = if t == "rgb24" { "rgb" } else { t };
        Self::all()
            .iter()
            .copied()
            .find(|f| f.name() == t)
            .ok_or_else(|| {
                let names = Self::names();
                let names: Vec<&str> = names.iter().map(String::as_str).collect();
                crate::quote::unknown("pixel format", s, &names)
            })
    }

    /// Planes in a frame: 1 for gray and RGB(A), 2 for NV12/P0xx, 3 for planar YUV.
    pub fn plane_count(self) -> usize {
        match self.family {
            Family::Gray | Family::Rgb | Family::Rgba => 1,
            Family::Nv12 => 2,
            _ => 3,
        }
    }

    /// Interleaved channels in plane `p`.
    pub fn plane_channels(self, p: usize) -> usize {
        match (self.family, p) {
            (Family::Rgb, _) => 3,
            (Family::Rgba, _) => 4,
            (Family::Nv12, 1) => 2,
            _ => 1,
        }
    }

    /// Size in pixels of plane `p` of a `w × h` frame (chroma rounds up for odd sizes).
    pub fn plane_size(self, p: usize, w: usize, h: usize) -> (usize, usize) {
        if p == 0 {
            return (w, h);
        }
        match self.family {
            Family::Yuv420 | Family::Nv12 => (w.div_ceil(2), h.div_ceil(2)),
            Family::Yuv422 => (w.div_ceil(2), h),
            _ => (w, h),
        }
    }

    /// True for the YUV families, which have more than one plane (NV12/P0xx included).
    pub fn is_planar_yuv(self) -> bool {
        self.plane_count() > 1
    }

    /// True for the formats image files hold (gray, RGB, RGBA at 8 or 16 bits).
    pub fn is_image(self) -> bool {
        matches!(self.family, Family::Gray | Family::Rgb | Family::Rgba)
            && matches!(self.depth.bits, 8 | 16)
    }
}

impl std::str::FromStr for PixelFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        PixelFormat::parse(s)
    }
}

impl serde::Serialize for PixelFormat {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.name())
    }
}

impl<'de> serde::Deserialize<'de> for PixelFormat {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        PixelFormat::parse(&name).map_err(serde::de::Error::custom)
    }
}

impl fmt::Display for PixelFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}
