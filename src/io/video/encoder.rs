//! The encoder of a video output: which one by default (the first of libx264, libx265, FFV1
//! and MPEG-4 that takes the frames' format, or a lossless repacking of it, and that the
//! container holds), and opening it with the user's `--codec-opt`s, each checked (unknown
//! options, bad values and options that make the encoder touch files of its own are errors);
//! which encoders code interlaced pictures when asked.

use ffmpeg_next as ff;

use super::{first_line, multi_pass_flags, with_stderr_captured};

/// Layouts of the same samples that encoders take when they do not take ours (P010/P016 are
/// NV12-like with 16-bit words; RGB interleaved): planar yuv420p10/16, planar GBR, or the
/// 32-bit BGR0/BGRA words FFV1 codes 8-bit RGB as. The source repacks them back
/// ([`super::convert::repacked_twin`]), bit for bit.
pub(super) fn lossless_twins(p: ff::format::Pixel) -> &'static [ff::format::Pixel] {
    use ff::format::Pixel as P;
    match p {
        P::NV12 => &[P::YUV420P],
        P::P010LE => &[P::YUV420P10LE],
        P::P016LE => &[P::YUV420P16LE],
        P::RGB24 => &[P::GBRP, P::BGRZ],
        P::RGBA => &[P::GBRAP, P::BGRA],
        P::RGB48LE => &[P::GBRP16LE],
        P::RGBA64LE => &[P::GBRAP16LE],
        _ => &[],
    }
}

/// Encoders that code interlaced pictures when asked by `AV_CODEC_FLAG_INTERLACED_DCT`, the
/// field first taken from each frame (`ffmpeg -flags +ildct+ilme`).
pub(super) fn codes_fields(encoder: &str) -> bool {
    matches!(
        encoder,
        "libx264" | "libx264rgb" | "mpeg2video" | "mpeg4" | "prores_ks"
    )
}

/// The encoders tried for containers that hold none of the usual ones (WebM holds VP8, VP9 and
/// AV1 alone), in order of preference.
pub const WEB_ENCODERS: [&str; 5] = [
    "libvpx-vp9",
    "libsvtav1",
    "libaom-av1",
    "librav1e",
    "libvpx",
];

/// The encoder an output gets unless `--codec` says otherwise: the first of libx264, libx265,
/// ffv1 and mpeg4 (ffv1 first for gray and RGB, which the others turn into YUV), then for
/// containers that hold none of them (WebM) libvpx-vp9, libsvtav1, libaom-av1, librav1e and
/// libvpx, that takes the frames' own pixel format (so bit depth and chroma format are kept:
/// libx264 High 10 / 4:2:2 / 4:4:4 where the linked x264 has them) and that the container
/// (`muxer`) can hold.
pub(super) fn default_encoder(
    candidates: &[ff::format::Pixel],
    own: ff::format::Pixel,
    muxer: &str,
) -> Option<ff::Codec> {
    let name = std::ffi::CString::new(muxer).ok()?;
    // SAFETY: av_guess_format reads a NUL-terminated name; the result is a static description
    // (or null).
    let container =
        unsafe { ff::ffi::av_guess_format(name.as_ptr(), std::ptr::null(), std::ptr::null()) };
    // Gray and RGB frames come back from x264/x265 as YUV or GBR planes; FFV1 keeps them.
    use ff::format::Pixel as P;
    let gray_or_rgb = matches!(
        own,
        P::GRAY8 | P::GRAY9LE | P::GRAY10LE | P::GRAY12LE | P::GRAY14LE | P::GRAY16LE
    ) || matches!(own, P::RGB24 | P::RGBA | P::RGB48LE | P::RGBA64LE);
    let order = if gray_or_rgb {
        ["ffv1", "libx264", "libx265", "mpeg4"]
    } else {
        ["libx264", "libx265", "ffv1", "mpeg4"]
    };
    order
        .into_iter()
        .chain(WEB_ENCODERS)
        .filter_map(ff::encoder::find_by_name)
        .find(|c| {
            let takes = c
                .video()
                .ok()
                .and_then(|v| v.formats())
                .is_some_and(|mut f| f.any(|f| candidates.contains(&f)));
            // SAFETY: avformat_query_codec reads the muxer description and a codec id. It says
            // 1 (can hold), 0 (cannot) or a negative error (the muxer does not know: try it).
            let holds = container.is_null()
                || unsafe {
                    ff::ffi::avformat_query_codec(
                        container,
                        c.id().into(),
                        ff::ffi::FF_COMPLIANCE_NORMAL,
                    ) != 0
                };
            takes && holds
        })
}

/// The options an encoder opens with: the user's `--codec-opt`s, after defaults that make
/// FFmpeg's own match what users expect of a filter's output. libvpx (VP8/VP9) alone needs
/// them: without a rate it encodes at 256 kbit/s whatever the frame size, so it gets constant
/// quality (`crf=31`, `b=0`, the setting FFmpeg's VP9 guide recommends for 1080p) and row
/// multithreading, unless the user set a rate or quality (`b`, `crf`, `qmin`/`qmax`, `lossless`).
pub(super) fn with_encoder_defaults(
    encoder: &str,
    user: &[(String, String)],
) -> Vec<(String, String)> {
    let rate_keys = ["b", "crf", "qmin", "qmax", "lossless", "minrate", "maxrate"];
    let user_sets_rate = user.iter().any(|(k, _)| rate_keys.contains(&k.as_str()));
    let mut options: Vec<(String, String)> = match encoder {
        "libvpx-vp9" | "libvpx" if !user_sets_rate => [("crf", "31"), ("b", "0")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        _ => Vec::new(),
    };
    if encoder == "libvpx-vp9" && !user.iter().any(|(k, _)| k == "row-mt") {
        options.push(("row-mt".into(), "1".into()));
    }
    options.extend(user.iter().cloned());
    options
}

/// Opens `enc` with `options`: every option must be one the encoder (or its private options)
/// takes, or the error names those it did not; flags that turn on multi-pass statistics are
/// refused; and an encoder that complains while opening (an error in FFmpeg's log, such as
/// x264's "Error parsing option", or on standard error) has failed even when it goes on. Its
/// complaint is folded into the error.
pub(super) fn open_encoder(
    mut enc: ff::encoder::video::Video,
    codec: ff::Codec,
    options: &[(String, String)],
) -> Result<ff::encoder::video::Encoder, String> {
    let name = codec.name().to_string();
    // Options are set on the context (and its private options) one by one before it opens, so
    // that each bad one is named and what they turn on can be checked before the encoder opens
    // any file.
    let mut unused = Vec::new();
    for (k, v) in options {
        let (ck, cv) = match (
            std::ffi::CString::new(k.as_str()),
            std::ffi::CString::new(v.as_str()),
        ) {
            (Ok(ck), Ok(cv)) => (ck, cv),
            _ => {
                return Err(format!(
                    "--codec-opt {}: contains a NUL byte",
                    crate::quote::quote(k)
                ))
            }
        };
        // SAFETY: a live, unopened codec context and two NUL-terminated strings.
        let res = unsafe {
            ff::ffi::av_opt_set(
                enc.as_mut_ptr().cast(),
                ck.as_ptr(),
                cv.as_ptr(),
                ff::ffi::AV_OPT_SEARCH_CHILDREN,
            )
        };
        if res == ff::ffi::AVERROR_OPTION_NOT_FOUND {
            unused.push(k.clone());
        } else if res < 0 {
            let why = super::take_logged_from(&name).map_or(String::new(), |l| format!(": {l}"));
            return Err(format!(
                "encoder {name}: --codec-opt {}={} is not a valid value ({}){why}",
                crate::quote::quote(k),
                crate::quote::quote(v),
                ff::Error::from(res)
            ));
        }
    }
    if !unused.is_empty() {
        let unused: Vec<String> = unused.iter().map(|u| crate::quote::quote(u)).collect();
        return Err(format!(
            "encoder {name} does not take the option(s) {} (check --codec-opt; \
             `ffmpeg -h encoder={name}` lists what it takes)",
            unused.join(", ")
        ));
    }
    // SAFETY: the pointer is only read while `enc` is alive.
    if multi_pass_flags(unsafe { enc.as_ptr() }) {
        return Err(format!(
            "encoder {name}: --codec-opt flags turn on multi-pass statistics, which the encoder \
             writes to files of its own; not supported"
        ));
    }
    super::take_logged_from(&name);
    let (res, printed) = with_stderr_captured(|| {
        // SAFETY: a context made for `codec`, options already applied, not opened yet.
        unsafe { ff::ffi::avcodec_open2(enc.as_mut_ptr(), codec.as_ptr(), std::ptr::null_mut()) }
    });
    // What the encoder said: an error in FFmpeg's log, else one on standard error.
    let complaint = super::take_logged_from(&name).or_else(|| {
        printed
            .lines()
            .find(|l| l.to_ascii_lowercase().contains("error"))
            .map(crate::quote::quote_line)
    });
    if res < 0 {
        let why = complaint
            .or_else(|| first_line(&printed))
            .map_or(String::new(), |l| format!(": {l}"));
        return Err(format!(
            "cannot open encoder {name} ({}){why}; check --codec and --codec-opt",
            ff::Error::from(res)
        ));
    }
    if let Some(c) = complaint {
        return Err(format!(
            "encoder {name} reported an error while opening: {c}; check --codec-opt"
        ));
    }
    Ok(ff::encoder::video::Encoder(enc))
}
