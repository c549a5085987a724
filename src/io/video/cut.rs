//! The part of a video that `--segment I/N` delivers, by time, and where each decoded frame
//! falls against it: the source seeks to the keyframe at or before the part's start, drops
//! what is shown before it, and seeks earlier when a seek lands late or decodes nothing.

use ffmpeg_next as ff;

/// The part of a video a `--segment` delivers: frames presented from `lo` (the start when
/// None) up to `hi` (the end when None), in the stream's time base. Reading starts at the
/// keyframe at or before `lo`; frames before `lo` are decoded and dropped.
pub(super) struct Cut {
    pub(super) lo: Option<i64>,
    pub(super) hi: Option<i64>,
    /// Where the last seek aimed, and whether a frame has been decoded since (the first after
    /// a seek decides whether it landed well).
    pub(super) aim: Option<i64>,
    pub(super) landed: bool,
    /// How much earlier the next seek aims if the demuxer lands after `lo`.
    pub(super) step: i64,
    /// The stream's first timestamp: nothing to seek before.
    pub(super) start: i64,
    /// Other streams' packets read since the last seek, held until its first frame shows the
    /// seek landed well (a seek back re-reads them, so they are dropped then).
    pub(super) held: Vec<ff::Packet>,
}

/// Where a decoded frame falls relative to a [`Cut`].
pub(super) enum Place {
    Before,
    In,
    After,
    /// The seek landed after `lo`: frames may have been skipped; seek earlier.
    Missed,
}

impl Cut {
    /// `key`: the frame is a keyframe. The first frame after a seek must be a keyframe shown
    /// at or before `lo`: one shown later means frames before it were skipped, and one that
    /// is not a keyframe (an open GOP's leading pictures) may lack what it refers to.
    pub(super) fn place(&mut self, pts: i64, key: bool) -> Place {
        if !std::mem::replace(&mut self.landed, true) {
            if let (Some(aim), Some(lo)) = (self.aim, self.lo) {
                if (pts > lo || !key) && aim > self.start {
                    return Place::Missed;
                }
            }
        }
        match (self.lo, self.hi) {
            (Some(lo), _) if pts < lo => Place::Before,
            (_, Some(hi)) if pts >= hi => Place::After,
            _ => Place::In,
        }
    }

    /// True when a packet presented at `t` (in the video's time base) belongs to the part. One
    /// without a timestamp goes with the first part.
    pub(super) fn keeps(&self, t: Option<i64>) -> bool {
        match t {
            Some(t) => self.lo.is_none_or(|lo| t >= lo) && self.hi.is_none_or(|hi| t < hi),
            None => self.lo.is_none(),
        }
    }
}
