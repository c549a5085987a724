//! `convflow concat` for video files: the packets of every part, one part after the other, into
//! one file, without decoding or encoding (the approach of FFmpeg's concat demuxer). The parts
//! must have the same streams with the same codec parameters and time bases (what
//! `--segment` runs of one command give). Timestamps continue: a part that starts before the
//! previous one ends (files that each begin at 0; a segment after a first part whose muxer
//! moved its timestamps up to keep them non-negative) is shifted to start where that one ends;
//! a part that starts where it ends or later (a segment, which keeps the whole input's times)
//! keeps its timestamps, so the parts of a segmented run join into the whole run's timing.
//! Each stream keeps the first part's metadata, disposition and side data (a display matrix).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ff::{Rational, Rescale};
use ffmpeg_next as ff;

use super::carry::{put_stream_tags, stream_tags, STALE_VIDEO_TAGS};
use super::init;
use super::sink::{container, create_output};
use crate::io::IoError;

/// What a concatenation wrote.
#[derive(Clone, Debug, Default)]
pub struct Joined {
    /// Packets written per part (every stream).
    pub packets: Vec<usize>,
    /// Video packets written in all.
    pub video_packets: usize,
}

fn open(path: &Path) -> Result<ff::format::context::Input, IoError> {
    ff::format::input(path).map_err(|e| IoError::Video {
        path: path.to_path_buf(),
        msg: format!("not a video file FFmpeg can read ({e})"),
    })
}

/// Why `b` (stream `i` of `part`) cannot follow `a`, if it cannot.
fn mismatch(
    a: &ff::format::stream::Stream<'_>,
    b: &ff::format::stream::Stream<'_>,
) -> Option<String> {
    let (pa, pb) = (a.parameters(), b.parameters());
    if pa.medium() != pb.medium() || pa.id() != pb.id() {
        return Some(format!(
            "is {:?} {:?} but the first part's is {:?} {:?}",
            pb.medium(),
            pb.id(),
            pa.medium(),
            pa.id()
        ));
    }
    // SAFETY: plain fields of two streams' codec parameters; extradata holds extradata_size
    // bytes when not null.
    unsafe {
        let (x, y) = (&*pa.as_ptr(), &*pb.as_ptr());
        let shape = |p: &ff::ffi::AVCodecParameters| {
            (
                (
                    p.width,
                    p.height,
                    p.format,
                    p.sample_rate,
                    p.ch_layout.nb_channels,
                ),
                (
                    p.profile,
                    p.sample_aspect_ratio.num,
                    p.sample_aspect_ratio.den,
                ),
                (
                    p.field_order as i32,
                    p.color_range as i32,
                    p.color_space as i32,
                ),
                (
                    p.color_primaries as i32,
                    p.color_trc as i32,
                    p.chroma_location as i32,
                ),
            )
        };
        if shape(x) != shape(y) {
            return Some(format!(
                "has other parameters (size, pixel or sample format, rate, channels, profile, \
                 aspect, field order or colour: {:?} vs {:?})",
                shape(y),
                shape(x)
            ));
        }
        let extra = |p: &ff::ffi::AVCodecParameters| {
            if p.extradata.is_null() {
                &[][..]
            } else {
                std::slice::from_raw_parts(p.extradata, p.extradata_size.max(0) as usize)
            }
        };
        if a.time_base() != b.time_base() {
            return Some(format!(
                "has the time base {} but the first part's is {}",
                b.time_base(),
                a.time_base()
            ));
        }
        if extra(x) != extra(y) {
            return Some("was encoded with other settings (its codec headers differ)".into());
        }
    }
    None
}

/// Joins `parts` into `out` (its container from the extension), written under a temporary
/// name and renamed when complete.
pub fn concat(parts: &[PathBuf], out: &Path) -> Result<Joined, IoError> {
    let err = |msg: String| IoError::Output {
        path: out.to_path_buf(),
        msg,
    };
    init().map_err(|e| err(format!("FFmpeg did not start: {e}")))?;
    let muxer = container(out).ok_or_else(|| IoError::Unsuitable {
        path: out.to_path_buf(),
        msg: "unknown video container (use .mp4, .mkv, .webm, .mov, .avi, .ts or .nut)".into(),
    })?;
    let mut inputs = parts
        .iter()
        .map(|p| open(p))
        .collect::<Result<Vec<_>, _>>()?;
    let first = &inputs[0];
    let video = first
        .streams()
        .best(ff::media::Type::Video)
        .ok_or_else(|| IoError::Video {
            path: parts[0].clone(),
            msg: "holds no video stream".into(),
        })?
        .index();
    for (k, input) in inputs.iter().enumerate().skip(1) {
        let bad = |msg: String| IoError::Video {
            path: parts[k].clone(),
            msg: format!("cannot follow {}: {msg}", crate::quote::path(&parts[0])),
        };
        if input.nb_streams() != first.nb_streams() {
            return Err(bad(format!(
                "it has {} streams, the first part {}",
                input.nb_streams(),
                first.nb_streams()
            )));
        }
        for (a, b) in first.streams().zip(input.streams()) {
            if let Some(why) = mismatch(&a, &b) {
                return Err(bad(format!("its stream {} {why}", b.index())));
            }
        }
    }
    let (mut octx, file) = create_output(out, muxer).map_err(err)?;
    for st in first.streams() {
        let mut o = octx
            .add_stream(ff::encoder::find(ff::codec::Id::None))
            .map_err(|e| err(format!("adding stream {}: {e}", st.index())))?;
        o.set_parameters(st.parameters());
        o.set_time_base(st.time_base());
        // The rate and aspect a muxer reads from the stream (Matroska's default duration).
        o.set_avg_frame_rate(st.avg_frame_rate());
        o.set_rate(st.rate());
        // SAFETY: plain fields of a new stream before the header is written; its metadata,
        // disposition and side data (a display matrix, HDR metadata) copied from the first
        // part's stream.
        unsafe {
            (*(*o.as_mut_ptr()).codecpar).codec_tag = 0;
            (*o.as_mut_ptr()).sample_aspect_ratio = (*st.as_ptr()).sample_aspect_ratio;
            // Lengths and statistics of the first part alone are left for the muxer; the
            // encoder tag stays true (the packets are copied).
            let stale: Vec<&str> = STALE_VIDEO_TAGS
                .into_iter()
                .filter(|t| *t != "encoder")
                .collect();
            put_stream_tags(o.as_mut_ptr(), &stream_tags(&st, &stale))
                .map_err(|e| err(format!("stream {}: {e}", st.index())))?;
        }
    }
    octx.set_metadata(first.metadata().to_owned());
    octx.write_header()
        .map_err(|e| err(format!("writing the header: {e}")))?;
    let out_tb: Vec<Rational> = octx.streams().map(|s| s.time_base()).collect();
    let ctb = first
        .stream(video)
        .map_or(Rational(1, 1), |s| s.time_base());
    let mut joined = Joined::default();
    // Where the video ends so far, in the first part's video time base.
    let mut end: Option<i64> = None;
    for (k, input) in inputs.iter_mut().enumerate() {
        let part = &parts[k];
        let vst = input.stream(video).expect("checked above");
        let vtb = vst.time_base();
        let start = Some(vst.start_time())
            .filter(|&t| t != ff::ffi::AV_NOPTS_VALUE)
            .unwrap_or(0)
            .rescale(vtb, ctb);
        // Shifted when it starts before the previous part ends: files that each begin at 0, and
        // segments after a first one whose muxer moved every timestamp up to keep them all
        // non-negative (AAC priming in Matroska, B-frames' decode times) — the whole run's
        // output has that shift too. A part that starts where the previous one ends keeps its
        // times.
        let offset = match end {
            Some(e) if start < e => e.saturating_sub(start),
            _ => 0,
        };
        let tbs: Vec<Rational> = input.streams().map(|s| s.time_base()).collect();
        // A video packet without a duration lasts one frame at the nominal rate (the muxer
        // would otherwise end the track, and its edit list, one frame early).
        let rate = Some(vst.avg_frame_rate())
            .filter(|r| r.numerator() > 0 && r.denominator() > 0)
            .or(Some(vst.rate()).filter(|r| r.numerator() > 0 && r.denominator() > 0));
        let frame = rate.map_or(0, |r| 1i64.rescale(r.invert(), vtb));
        let mut count = 0;
        let mut packet = ff::Packet::empty();
        loop {
            match packet.read(input) {
                Ok(()) => {}
                Err(ff::Error::Eof) => break,
                Err(e) => {
                    return Err(IoError::Video {
                        path: part.clone(),
                        msg: format!("unreadable data after {count} packets ({e})"),
                    })
                }
            }
            let i = packet.stream();
            let Some(&itb) = tbs.get(i).filter(|_| i < out_tb.len()) else {
                return Err(IoError::Video {
                    path: part.clone(),
                    msg: format!("a stream ({i}) appears after the start of the file"),
                });
            };
            if offset != 0 {
                let off = offset.rescale(ctb, itb);
                packet.set_pts(packet.pts().map(|p| p.saturating_add(off)));
                packet.set_dts(packet.dts().map(|d| d.saturating_add(off)));
            }
            if i == video {
                if packet.duration() <= 0 {
                    packet.set_duration(frame);
                }
                if let Some(p) = packet.pts() {
                    let e = p.saturating_add(packet.duration().max(0)).rescale(itb, ctb);
                    end = Some(end.map_or(e, |x| x.max(e)));
                }
                joined.video_packets += 1;
            }
            packet.rescale_ts(itb, out_tb[i]);
            packet.set_position(-1);
            packet
                .write_interleaved(&mut octx)
                .map_err(|e| IoError::Write {
                    path: out.to_path_buf(),
                    msg: format!("{}: muxing stream {i}: {e}", crate::quote::path(part)),
                })?;
            count += 1;
        }
        joined.packets.push(count);
    }
    octx.write_trailer()
        .map_err(|e| err(format!("writing the trailer: {e}")))?;
    drop(octx);
    let pending = Arc::try_unwrap(file.0)
        .map_err(|_| err("FFmpeg still holds the output".into()))?
        .into_inner()
        .unwrap_or_else(|e| e.into_inner());
    pending.commit().map_err(|e| IoError::Write {
        path: out.to_path_buf(),
        msg: e.to_string(),
    })?;
    Ok(joined)
}
