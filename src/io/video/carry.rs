//! What passes from a video input to a video output besides the filtered pixels: the other
//! streams (audio, subtitles, data, attachments) copied packet for packet, the video stream's
//! colour description (range, primaries, transfer, matrix, chroma location), sample aspect
//! ratio, field order, metadata, disposition and side data (mastering display, content light
//! level, display matrix), the file's metadata and chapters, and per-frame side data.
//!
//! The source gathers it when it opens the input ([`Carry::gather`]) and hands it on in its
//! [`StreamInfo`](crate::io::StreamInfo); a video sink puts it back. Packets of the other streams
//! travel from the reading thread to the writing thread through an unbounded channel that the
//! source feeds only once a sink has claimed it ([`Carry::claim`]), so nothing piles up when the
//! output keeps the video alone (y4m, frame directories, `--streams video-only`). Their memory
//! is bounded by the pipeline's depth: the reader is never more than `--inflight` video frames
//! ahead of the writer, and the muxer interleaves by timestamp.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use crossbeam_channel::{Receiver, Sender};
use ff::ffi;
use ff::Rational;
use ffmpeg_next as ff;

use super::{first_line, with_stderr_captured};

/// Frame side data that describes the picture's display rather than how it was coded, and so
/// stays true after filtering: put back on the encoder's frames. (Film-grain parameters, motion
/// vectors, QP tables, Dolby Vision RPUs and the like are left behind.)
pub(super) const FRAME_SIDE_DATA: [ffi::AVFrameSideDataType; 9] = [
    ffi::AVFrameSideDataType::AV_FRAME_DATA_MASTERING_DISPLAY_METADATA,
    ffi::AVFrameSideDataType::AV_FRAME_DATA_CONTENT_LIGHT_LEVEL,
    ffi::AVFrameSideDataType::AV_FRAME_DATA_DISPLAYMATRIX,
    ffi::AVFrameSideDataType::AV_FRAME_DATA_A53_CC,
    ffi::AVFrameSideDataType::AV_FRAME_DATA_STEREO3D,
    ffi::AVFrameSideDataType::AV_FRAME_DATA_SPHERICAL,
    ffi::AVFrameSideDataType::AV_FRAME_DATA_ICC_PROFILE,
    ffi::AVFrameSideDataType::AV_FRAME_DATA_AFD,
    ffi::AVFrameSideDataType::AV_FRAME_DATA_DYNAMIC_HDR_PLUS,
];

/// The colour description and geometry of the video stream, as FFmpeg numbers them (the
/// ITU-T H.273 code points), kept on the encoder, the output stream and every frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Colour {
    pub range: ffi::AVColorRange,
    pub primaries: ffi::AVColorPrimaries,
    pub trc: ffi::AVColorTransferCharacteristic,
    pub matrix: ffi::AVColorSpace,
    pub chroma: ffi::AVChromaLocation,
    pub field_order: ffi::AVFieldOrder,
    /// Sample aspect ratio (0/1 when unknown).
    pub sar: Rational,
}

impl Colour {
    /// Whether the field order says the frames are interlaced (either field first).
    pub fn interlaced(&self) -> bool {
        use ffi::AVFieldOrder as F;
        matches!(
            self.field_order,
            F::AV_FIELD_TT | F::AV_FIELD_BB | F::AV_FIELD_TB | F::AV_FIELD_BT
        )
    }

    /// Whether the top field is the first (coded first: `TT`, `TB`).
    pub fn top_first(&self) -> bool {
        use ffi::AVFieldOrder as F;
        matches!(self.field_order, F::AV_FIELD_TT | F::AV_FIELD_TB)
    }
}

/// One side-data block of a stream: its FFmpeg type and bytes.
#[derive(Clone, Debug)]
pub(super) struct StreamSideData {
    pub kind: ffi::AVPacketSideDataType,
    pub bytes: Vec<u8>,
}

/// What a stream carries besides its packets.
#[derive(Clone, Debug, Default)]
pub(super) struct StreamTags {
    pub metadata: Vec<(String, String)>,
    pub disposition: i32,
    pub side_data: Vec<StreamSideData>,
}

/// A stream copied packet for packet.
pub(super) struct Passenger {
    /// Its index in the input.
    pub index: usize,
    /// "audio", "subtitle", "data", "attachment".
    pub medium: &'static str,
    pub codec: String,
    pub params: Mutex<ff::codec::Parameters>,
    pub time_base: Rational,
    pub tags: StreamTags,
}

impl Passenger {
    pub fn params_id(&self) -> ff::codec::Id {
        self.params.lock().unwrap_or_else(|e| e.into_inner()).id()
    }

    /// `audio stream 1 (aac)`, for messages.
    pub fn describe(&self) -> String {
        format!("{} stream {} ({})", self.medium, self.index, self.codec)
    }
}

pub(super) struct Chapter {
    pub id: i64,
    pub time_base: Rational,
    pub start: i64,
    pub end: i64,
    pub metadata: Vec<(String, String)>,
}

/// A packet of another stream on its way to the sink, with its input stream's index.
pub(super) type Carried = (usize, ff::Packet);

struct Inner {
    metadata: Vec<(String, String)>,
    chapters: Vec<Chapter>,
    /// The filtered video stream's index in the input.
    video_index: usize,
    video: StreamTags,
    colour: Colour,
    passengers: Vec<Passenger>,
    packets: Receiver<Carried>,
    claimed: AtomicBool,
    /// The container says the video runs at one constant rate (its average rate is its base
    /// rate).
    constant_rate: bool,
}

/// See the module documentation. Cheap to clone (shared).
#[derive(Clone)]
pub struct Carry(Arc<Inner>);

impl std::fmt::Debug for Carry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Carry")
            .field("colour", &self.0.colour)
            .field("streams", &self.describe_passengers())
            .field("chapters", &self.0.chapters.len())
            .finish()
    }
}

impl PartialEq for Carry {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

fn dictionary(d: ff::DictionaryRef<'_>, skip: &[&str]) -> Vec<(String, String)> {
    d.iter()
        .filter(|(k, _)| !skip.iter().any(|s| k.eq_ignore_ascii_case(s)))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Tags a muxer writes afresh for a re-encoded stream (and the statistics mkvmerge leaves,
/// which no longer hold after re-encoding, nor for a part's stream in a joined file).
pub(super) const STALE_VIDEO_TAGS: [&str; 8] = [
    "encoder",
    "DURATION",
    "NUMBER_OF_FRAMES",
    "NUMBER_OF_BYTES",
    "BPS",
    "_STATISTICS_TAGS",
    "_STATISTICS_WRITING_APP",
    "_STATISTICS_WRITING_DATE_UTC",
];

/// A stream's metadata (less the keys in `skip`, in any case), disposition and side data.
pub(super) fn stream_tags(st: &ff::format::stream::Stream<'_>, skip: &[&str]) -> StreamTags {
    // SAFETY: the stream belongs to an open input; its side-data array holds nb_side_data
    // entries of `size` bytes each (FFmpeg 5.1's AVStream).
    let side_data = unsafe {
        let s = &*st.as_ptr();
        (0..s.nb_side_data.max(0) as usize)
            .map(|i| &*s.side_data.add(i))
            .filter(|d| !d.data.is_null())
            .map(|d| StreamSideData {
                kind: d.type_,
                bytes: std::slice::from_raw_parts(d.data, d.size).to_vec(),
            })
            .collect()
    };
    StreamTags {
        metadata: dictionary(st.metadata(), skip),
        // SAFETY: a plain field of an open input's stream.
        disposition: unsafe { (*st.as_ptr()).disposition },
        side_data,
    }
}

impl Carry {
    /// Gathers everything but the video's packets from `input`, whose video stream is `video`
    /// (decoded by `decoder`). The sender feeds the packets of [`Carry::passengers`].
    pub(super) fn gather(
        input: &ff::format::context::Input,
        video: usize,
        decoder: &ff::decoder::Video,
    ) -> (Carry, Sender<Carried>) {
        let (tx, rx) = crossbeam_channel::unbounded();
        let mut passengers = Vec::new();
        let mut video_tags = StreamTags::default();
        for st in input.streams() {
            if st.index() == video {
                video_tags = stream_tags(&st, &STALE_VIDEO_TAGS);
                continue;
            }
            let params = st.parameters();
            let medium = match params.medium() {
                ff::media::Type::Audio => "audio",
                ff::media::Type::Subtitle => "subtitle",
                ff::media::Type::Data => "data",
                ff::media::Type::Attachment => "attachment",
                // Other video streams (cover art, a second angle) are copied as they are.
                ff::media::Type::Video => "video",
                _ => continue,
            };
            passengers.push(Passenger {
                index: st.index(),
                medium,
                codec: params.id().name().to_string(),
                params: Mutex::new(params.clone()),
                time_base: st.time_base(),
                tags: stream_tags(&st, &["encoder"]),
            });
        }
        let chapters = input
            .chapters()
            .map(|c| Chapter {
                id: c.id(),
                time_base: c.time_base(),
                start: c.start(),
                end: c.end(),
                metadata: dictionary(c.metadata(), &[]),
            })
            .collect();
        // SAFETY: plain fields of an open decoder's context.
        let colour = unsafe {
            let c = &*decoder.as_ptr();
            Colour {
                range: c.color_range,
                primaries: c.color_primaries,
                trc: c.color_trc,
                matrix: c.colorspace,
                chroma: c.chroma_sample_location,
                field_order: c.field_order,
                sar: Rational::from(c.sample_aspect_ratio),
            }
        };
        // The container's aspect wins over the bitstream's, as FFmpeg's guess does.
        let colour = match input.stream(video).map(|s| {
            // SAFETY: a plain field of an open input's stream.
            Rational::from(unsafe { (*s.as_ptr()).sample_aspect_ratio })
        }) {
            Some(sar) if sar.numerator() > 0 && sar.denominator() > 0 => Colour { sar, ..colour },
            _ => colour,
        };
        let inner = Inner {
            metadata: dictionary(input.metadata(), &["encoder"]),
            chapters,
            video_index: video,
            video: video_tags,
            colour,
            passengers,
            packets: rx,
            claimed: AtomicBool::new(false),
            constant_rate: input.stream(video).is_some_and(|s| {
                let (avg, base) = (s.avg_frame_rate(), s.rate());
                avg.numerator() > 0
                    && i64::from(avg.numerator()) * i64::from(base.denominator())
                        == i64::from(base.numerator()) * i64::from(avg.denominator())
            }),
        };
        (Carry(Arc::new(inner)), tx)
    }

    pub(super) fn colour(&self) -> Colour {
        self.0.colour
    }

    /// The video's interlacing, pixel aspect, chroma siting and colour range in y4m's words.
    pub fn y4m_tags(&self) -> crate::io::y4m::Y4mTags {
        let c = self.0.colour;
        use ffi::AVChromaLocation as L;
        use ffi::AVFieldOrder as F;
        crate::io::y4m::Y4mTags {
            interlace: match c.field_order {
                F::AV_FIELD_PROGRESSIVE => Some(b'p'),
                _ if c.interlaced() => Some(if c.top_first() { b't' } else { b'b' }),
                _ => None,
            },
            aspect: (c.sar.numerator() > 0 && c.sar.denominator() > 0)
                .then(|| (c.sar.numerator(), c.sar.denominator())),
            siting_420: match c.chroma {
                L::AVCHROMA_LOC_LEFT => Some("420mpeg2"),
                L::AVCHROMA_LOC_TOPLEFT => Some("420paldv"),
                L::AVCHROMA_LOC_CENTER => Some("420jpeg"),
                _ => None,
            },
            full_range: match c.range {
                ffi::AVColorRange::AVCOL_RANGE_JPEG => Some(true),
                ffi::AVColorRange::AVCOL_RANGE_MPEG => Some(false),
                _ => None,
            },
        }
    }

    /// The colour description a y4m header implies for a video output.
    pub(super) fn colour_of_y4m(tags: crate::io::y4m::Y4mTags, full_range: bool) -> Colour {
        use ffi::AVChromaLocation as L;
        use ffi::AVFieldOrder as F;
        Colour {
            range: match (full_range, tags.full_range) {
                (true, _) => ffi::AVColorRange::AVCOL_RANGE_JPEG,
                (false, Some(false)) => ffi::AVColorRange::AVCOL_RANGE_MPEG,
                _ => ffi::AVColorRange::AVCOL_RANGE_UNSPECIFIED,
            },
            primaries: ffi::AVColorPrimaries::AVCOL_PRI_UNSPECIFIED,
            trc: ffi::AVColorTransferCharacteristic::AVCOL_TRC_UNSPECIFIED,
            matrix: ffi::AVColorSpace::AVCOL_SPC_UNSPECIFIED,
            chroma: match tags.siting_420 {
                Some("420mpeg2") => L::AVCHROMA_LOC_LEFT,
                Some("420paldv") => L::AVCHROMA_LOC_TOPLEFT,
                Some("420jpeg") => L::AVCHROMA_LOC_CENTER,
                _ => L::AVCHROMA_LOC_UNSPECIFIED,
            },
            field_order: match tags.interlace {
                Some(b'p') => F::AV_FIELD_PROGRESSIVE,
                Some(b't') => F::AV_FIELD_TT,
                Some(b'b') => F::AV_FIELD_BB,
                _ => F::AV_FIELD_UNKNOWN,
            },
            sar: tags.aspect.map_or(Rational(0, 1), |(n, d)| Rational(n, d)),
        }
    }
    /// Whether the video runs at one constant rate, as its container says.
    pub(super) fn constant_rate(&self) -> bool {
        self.0.constant_rate
    }
    pub(super) fn video_tags(&self) -> &StreamTags {
        &self.0.video
    }
    pub(super) fn metadata(&self) -> &[(String, String)] {
        &self.0.metadata
    }
    pub(super) fn chapters(&self) -> &[Chapter] {
        &self.0.chapters
    }
    pub(super) fn passengers(&self) -> &[Passenger] {
        &self.0.passengers
    }

    /// The other streams, for messages: `audio stream 1 (aac), subtitle stream 2 (subrip)`.
    pub fn describe_passengers(&self) -> Vec<String> {
        self.0.passengers.iter().map(Passenger::describe).collect()
    }

    /// The note for a display matrix that an output (`what`: `mkv`, `y4m`, `image files`)
    /// cannot hold, when the video has one that turns or mirrors its frames.
    pub fn display_note(&self, what: &str) -> Option<String> {
        super::display::note(&self.0.video.side_data, what)
    }

    /// The video's colour description in words (`bt2020 primaries, smpte2084 transfer, …`)
    /// when it says the video is HDR or wide-gamut: a PQ or HLG transfer, BT.2020 primaries or
    /// HDR mastering metadata on the stream.
    pub fn hdr_description(&self) -> Option<String> {
        super::display::hdr_description(&self.0.colour, &self.0.video.side_data)
    }

    /// The packets of the other streams, from now on (a sink calls this before the first frame
    /// is read).
    pub(super) fn claim(&self) -> Receiver<Carried> {
        self.0.claimed.store(true, Ordering::SeqCst);
        self.0.packets.clone()
    }

    /// Whether a sink takes the packets (the source drops them otherwise).
    pub(super) fn claimed(&self) -> bool {
        self.0.claimed.load(Ordering::Relaxed)
    }
}

// --- Putting it back on an output. ---

/// Puts a stream's metadata, disposition and side data on an output stream.
///
/// # Safety
/// `st` is a stream of an output context whose header is not written yet.
pub(super) unsafe fn put_stream_tags(
    st: *mut ffi::AVStream,
    tags: &StreamTags,
) -> Result<(), String> {
    for (k, v) in &tags.metadata {
        let (Ok(k), Ok(v)) = (
            std::ffi::CString::new(k.as_str()),
            std::ffi::CString::new(v.as_str()),
        ) else {
            continue;
        };
        // SAFETY: the stream's dictionary and two NUL-terminated strings (copied by FFmpeg).
        unsafe { ffi::av_dict_set(&mut (*st).metadata, k.as_ptr(), v.as_ptr(), 0) };
    }
    // SAFETY: as the function's contract says.
    unsafe {
        (*st).disposition = tags.disposition;
        for d in &tags.side_data {
            let dst = ffi::av_stream_new_side_data(st, d.kind, d.bytes.len());
            if dst.is_null() {
                return Err("out of memory".into());
            }
            std::ptr::copy_nonoverlapping(d.bytes.as_ptr(), dst, d.bytes.len());
        }
    }
    Ok(())
}

/// The file's metadata and chapters.
pub(super) fn put_file_tags(octx: &mut ff::format::context::Output, carry: &Carry) {
    let mut dict = ff::Dictionary::new();
    for (k, v) in carry.metadata() {
        dict.set(k, v);
    }
    octx.set_metadata(dict);
    for c in carry.chapters() {
        let title = c
            .metadata
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("title"))
            .map_or("", |(_, v)| v.as_str());
        if let Ok(mut ch) = octx.add_chapter(c.id, c.time_base, c.start, c.end, title) {
            for (k, v) in &c.metadata {
                ch.set_metadata(k, v);
            }
        }
    }
}

/// Whether the container can hold a copied stream of codec `id`: what the muxer says, or for a
/// muxer that does not say, yes (the header then tells). Matroska holds attachments (fonts)
/// whatever their codec.
fn holds(octx: &ff::format::context::Output, muxer: &str, id: ff::codec::Id, medium: &str) -> bool {
    if medium == "attachment" {
        return muxer == "matroska";
    }
    // SAFETY: the output's muxer description and a codec id.
    let answer = unsafe {
        ffi::avformat_query_codec(
            (*octx.as_ptr()).oformat,
            id.into(),
            ffi::FF_COMPLIANCE_NORMAL,
        )
    };
    // A muxer that does not say takes audio and video; subtitles and data it would store as
    // opaque private data (MPEG-TS), which no player reads back as what they were.
    answer > 0 || (answer < 0 && matches!(medium, "audio" | "video"))
}

/// Whether the muxer writes a header for the video stream and the copied stream `p` (some
/// refuse what they say they hold, e.g. Opus in .mov): tried on a scratch output in memory.
fn header_takes(
    muxer: &str,
    video: &ff::encoder::video::Encoder,
    p: &Passenger,
) -> Result<(), String> {
    let io = ff::format::context::StreamIo::from_write_seek_with_capacity(
        std::io::Cursor::new(Vec::new()),
        1 << 16,
    )
    .map_err(|e| e.to_string())?;
    let mut octx =
        ff::format::output_to_stream(io, Some("probe"), Some(muxer)).map_err(|e| e.to_string())?;
    let mut ost = octx.add_stream(video.codec()).map_err(|e| e.to_string())?;
    ost.set_parameters(video);
    new_copied_stream(&mut octx, p, false)?;
    super::take_logged();
    let (res, printed) = with_stderr_captured(|| octx.write_header());
    let logged = super::take_logged();
    res.map(|_| ()).map_err(|e| {
        logged
            .or_else(|| first_line(&printed))
            .unwrap_or_else(|| e.to_string())
    })
}

/// A container's name for messages.
pub(super) fn muxer_name(muxer: &str) -> &str {
    match muxer {
        "matroska" => "mkv",
        "mpegts" => "MPEG-TS",
        m => m,
    }
}

/// A new stream of `octx` for the copied stream `p`: its codec parameters (copied, the codec
/// tag left to the muxer), time base, and with `tags` its metadata, disposition and side data.
/// Returns its index.
fn new_copied_stream(
    octx: &mut ff::format::context::Output,
    p: &Passenger,
    tags: bool,
) -> Result<usize, String> {
    // SAFETY: a new stream of an output whose header is not written; the parameters are copied
    // (not shared) and the tags are plain copies.
    unsafe {
        let st = ffi::avformat_new_stream(octx.as_mut_ptr(), std::ptr::null());
        if st.is_null() {
            return Err("adding a stream: out of memory".into());
        }
        let params = p.params.lock().unwrap_or_else(|e| e.into_inner());
        if ffi::avcodec_parameters_copy((*st).codecpar, params.as_ptr()) < 0 {
            return Err(format!("copying {}", p.describe()));
        }
        (*(*st).codecpar).codec_tag = 0;
        (*st).time_base = p.time_base.into();
        if tags {
            put_stream_tags(st, &p.tags).map_err(|e| format!("{}: {e}", p.describe()))?;
        }
        Ok((*st).index as usize)
    }
}

/// A copied stream on an output: (input index, output index, input time base).
pub(super) type Copied = (usize, usize, Rational);

/// Adds to `octx` (muxer `muxer`, video coded by `video`) every stream of `carry` the
/// container holds. Returns, for each, (input index, output index, input time base), and a
/// note for each left out.
pub(super) fn add_passengers(
    octx: &mut ff::format::context::Output,
    muxer: &str,
    video: &ff::encoder::video::Encoder,
    carry: &Carry,
) -> Result<(Vec<Copied>, Vec<String>), String> {
    let (mut added, mut notes) = (Vec::new(), Vec::new());
    for p in carry.passengers() {
        let left_out = if !holds(octx, muxer, p.params_id(), p.medium) {
            Some("cannot hold it".to_string())
        } else {
            header_takes(muxer, video, p)
                .err()
                .map(|why| format!("refuses it ({why})"))
        };
        match left_out {
            // A timecode track (MOV's `tmcd`) whose timecode the video stream's tags carry:
            // MOV and MP4 write a timecode track of their own from that tag, Matroska keeps it.
            Some(_)
                if matches!(muxer, "mov" | "mp4" | "matroska") && carries_timecode(carry, p) =>
            {
                notes.push(format!(
                    "data stream {}, a timecode track, is not copied: {} keeps its timecode as \
                     the video's timecode tag{}",
                    p.index,
                    muxer_name(muxer),
                    if muxer == "matroska" {
                        ""
                    } else {
                        ", written as a new timecode track"
                    }
                ))
            }
            Some(why) => notes.push(format!(
                "{} is left out: {} {why}",
                p.describe(),
                muxer_name(muxer)
            )),
            None => {
                // Another video stream than the filtered one (a second angle), not cover art.
                #[allow(clippy::unnecessary_cast)] // the constant's type differs by FFmpeg
                let attached = p.tags.disposition & ffi::AV_DISPOSITION_ATTACHED_PIC as i32 != 0;
                if p.medium == "video" && !attached {
                    notes.push(format!(
                        "{} is copied unfiltered: convflow filters video stream {} alone",
                        p.describe(),
                        carry.0.video_index
                    ));
                }
                added.push((p.index, new_copied_stream(octx, p, true)?, p.time_base))
            }
        }
    }
    Ok((added, notes))
}

/// Whether the copied stream `p` is a timecode track whose timecode the video stream's tags
/// carry too (FFmpeg's MOV demuxer puts it on both).
fn carries_timecode(carry: &Carry, p: &Passenger) -> bool {
    let timecode = |m: &[(String, String)]| {
        m.iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("timecode"))
            .map(|(_, v)| v.clone())
    };
    p.medium == "data"
        && timecode(&p.tags.metadata).is_some_and(|t| Some(t) == timecode(&carry.0.video.metadata))
}

/// Puts the video stream's metadata, disposition and side data on the output's stream `st`.
///
/// # Safety
/// `st` is a stream of an output context whose header is not written yet.
pub(super) unsafe fn put_video_tags(st: *mut ffi::AVStream, carry: &Carry) -> Result<(), String> {
    // SAFETY: as the function's contract says.
    unsafe { put_stream_tags(st, &carry.0.video) }
}
