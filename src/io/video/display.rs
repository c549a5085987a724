//! What a video says about how to show its frames, beyond their pixels, that some outputs
//! cannot hold: its display matrix (a phone video's rotation, a mirror) and an HDR or
//! wide-gamut colour description. The sink and the CLI name what is left out with these words.

use ff::ffi;
use ffmpeg_next as ff;

use super::carry::{Colour, StreamSideData};

/// Whether the linked FFmpeg's muxer `muxer` writes a stream's display matrix (rotation,
/// mirroring): MP4 and MOV always; Matroska and WebM from libavformat 60.16 (FFmpeg 6.1),
/// whose muxer writes it as the projection's pose (FFmpeg 5.1's drops it).
pub(super) fn holds_display_matrix(muxer: &str) -> bool {
    match muxer {
        "mp4" | "mov" => true,
        // SAFETY: a plain call returning the library's version number.
        "matroska" | "webm" => (unsafe { ffi::avformat_version() }) >= (60 << 16) | (16 << 8),
        _ => false,
    }
}

/// How a display matrix (`[a b u; c d v; x y w]`, row-major, 16.16 and 2.30 fixed point)
/// turns the frames for display (`rotated 90° clockwise`, `rotated 180°`, `mirrored`,
/// `mirrored and turned 90°`), or `None` when it leaves them as they are: the turn FFmpeg's
/// own autorotation applies. A mirror with a half turn is another mirror, so mirrored matrices
/// are named by whether they also swap width and height.
fn turn(m: &[i32; 9]) -> Option<String> {
    // SAFETY: a 3×3 matrix of i32, as the function reads.
    let ccw = unsafe { ffi::av_display_rotation_get(m.as_ptr()) };
    // A negative determinant ad − bc mirrors.
    let mirrored = (m[0] as i64 * m[4] as i64) < (m[1] as i64 * m[3] as i64);
    let degrees = if ccw.is_finite() {
        (-ccw).rem_euclid(360.0).round() as i64 % 360
    } else {
        0
    };
    match (mirrored, degrees) {
        (false, 0) => None,
        (false, 90) => Some("rotated 90° clockwise".into()),
        (false, 180) => Some("rotated 180°".into()),
        (false, 270) => Some("rotated 90° counterclockwise".into()),
        (false, d) => Some(format!("rotated {d}° clockwise")),
        (true, 0 | 180) => Some("mirrored".into()),
        (true, _) => Some("mirrored and turned 90°".into()),
    }
}

/// The note for a display matrix among a stream's side data that an output (`what`: `mkv`,
/// `y4m`, `image files`) cannot hold, when it turns or mirrors the frames.
pub(super) fn note(side_data: &[StreamSideData], what: &str) -> Option<String> {
    let side = side_data.iter().find(|d| {
        d.kind == ffi::AVPacketSideDataType::AV_PKT_DATA_DISPLAYMATRIX && d.bytes.len() >= 36
    })?;
    let mut m = [0i32; 9];
    for (v, b) in m.iter_mut().zip(side.bytes.chunks_exact(4)) {
        *v = i32::from_ne_bytes([b[0], b[1], b[2], b[3]]);
    }
    turn(&m).map(|turn| {
        format!(
            "the video's display matrix ({turn}) is left out: {what} cannot hold it, so players \
             show the frames as stored (write .mp4 or .mov to keep it, or have ffmpeg re-encode \
             the input first, which turns the frames)"
        )
    })
}

/// A colour description in words (`bt2020 primaries, smpte2084 transfer, bt2020nc matrix,
/// mastering display`) when it says the video is HDR or wide-gamut: a PQ or HLG transfer,
/// BT.2020 primaries, or HDR mastering metadata among the stream's side data. (Outputs that
/// hold pixels alone are read as BT.709 or BT.601 by convention, so an SDR description is not
/// worth a note there.)
pub(super) fn hdr_description(c: &Colour, side_data: &[StreamSideData]) -> Option<String> {
    use ffi::AVColorPrimaries as P;
    use ffi::AVColorTransferCharacteristic as T;
    use ffi::AVPacketSideDataType as S;
    let side: Vec<String> = [
        (
            S::AV_PKT_DATA_MASTERING_DISPLAY_METADATA,
            "mastering display",
        ),
        (S::AV_PKT_DATA_CONTENT_LIGHT_LEVEL, "content light levels"),
    ]
    .into_iter()
    .filter(|(kind, _)| side_data.iter().any(|d| d.kind == *kind))
    .map(|(_, words)| words.to_string())
    .collect();
    let hdr = matches!(c.trc, T::AVCOL_TRC_SMPTE2084 | T::AVCOL_TRC_ARIB_STD_B67)
        || c.primaries == P::AVCOL_PRI_BT2020
        || !side.is_empty();
    if !hdr {
        return None;
    }
    let name = |p: *const std::ffi::c_char, what: &str| {
        // SAFETY: FFmpeg's names of code points: static strings, or null for unknown ones.
        (!p.is_null()).then(|| {
            let n = unsafe { std::ffi::CStr::from_ptr(p) };
            format!("{} {what}", n.to_string_lossy())
        })
    };
    let mut parts = Vec::new();
    // SAFETY (the three name calls): plain lookups of a code point's name.
    if c.primaries != P::AVCOL_PRI_UNSPECIFIED {
        let p = unsafe { ffi::av_color_primaries_name(c.primaries) };
        parts.extend(name(p, "primaries"));
    }
    if c.trc != T::AVCOL_TRC_UNSPECIFIED {
        let p = unsafe { ffi::av_color_transfer_name(c.trc) };
        parts.extend(name(p, "transfer"));
    }
    if !matches!(
        c.matrix,
        ffi::AVColorSpace::AVCOL_SPC_UNSPECIFIED | ffi::AVColorSpace::AVCOL_SPC_RGB
    ) {
        let p = unsafe { ffi::av_color_space_name(c.matrix) };
        parts.extend(name(p, "matrix"));
    }
    parts.extend(side);
    Some(parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A display matrix as FFmpeg's `av_display_rotation_set(angle)` builds it, then mirrored
    /// left-right and/or upside down (`av_display_matrix_flip`).
    fn matrix(angle: f64, hflip: bool, vflip: bool) -> [i32; 9] {
        let mut m = [0i32; 9];
        // SAFETY: a 3×3 matrix of i32, as the functions write.
        unsafe {
            ffi::av_display_rotation_set(m.as_mut_ptr(), angle);
            ffi::av_display_matrix_flip(m.as_mut_ptr(), hflip.into(), vflip.into());
        }
        m
    }

    #[test]
    fn an_icc_profile_is_ffmpegs_side_data_kind() {
        let kind = ffi::AVFrameSideDataType::AV_FRAME_DATA_ICC_PROFILE as u32;
        assert_eq!(crate::io::ICC_PROFILE, kind);
    }

    #[test]
    fn turns_are_named_as_players_apply_them() {
        assert_eq!(turn(&matrix(0.0, false, false)), None);
        let named = |angle, h, v| turn(&matrix(angle, h, v)).unwrap();
        // FFmpeg's autorotation turns clockwise by −av_display_rotation_get, which for these
        // matrices is the angle given to av_display_rotation_set (an iPhone's portrait video
        // reads −90 and is turned 90° clockwise).
        for angle in [90.0, -90.0, 180.0, 45.0] {
            let m = matrix(angle, false, false);
            // SAFETY: a 3×3 matrix of i32.
            let get = unsafe { ffi::av_display_rotation_get(m.as_ptr()) };
            assert!((get + angle).abs() < 1e-6 || (angle == 180.0 && get.abs() == 180.0));
        }
        assert_eq!(named(90.0, false, false), "rotated 90° clockwise");
        assert_eq!(named(-90.0, false, false), "rotated 90° counterclockwise");
        assert_eq!(named(180.0, false, false), "rotated 180°");
        assert_eq!(named(45.0, false, false), "rotated 45° clockwise");
        for (h, v) in [(true, false), (false, true)] {
            assert_eq!(named(0.0, h, v), "mirrored");
            assert_eq!(named(180.0, h, v), "mirrored");
            assert_eq!(named(90.0, h, v), "mirrored and turned 90°");
        }
        // Both mirrors at once are a half turn.
        assert_eq!(named(0.0, true, true), "rotated 180°");
    }
}
