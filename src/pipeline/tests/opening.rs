//! An opening lane ([`open`]) filters the first frames while the run's own lanes are made, and
//! [`run_after`] goes on into the same output: every frame once, in order, as one lane would
//! filter them; statistics that add up with the opening lane apart; a source not asked again
//! after its end; the output aborted on any failure of either part.
use std::sync::atomic::AtomicUsize;

use super::*;

/// A `ready` that says yes from its (k+1)th question on: the read stage asks before each
/// frame, so the opening lane reads exactly `k` frames (fewer if the source ends first).
fn after_reads(k: usize) -> impl Fn() -> bool + Sync {
    let asked = AtomicUsize::new(0);
    move || asked.fetch_add(1, Ordering::SeqCst) >= k
}

/// Opens a run of `src` into `sink` on cpu-seq, handing over after `k` frames.
fn open_on_cpu(
    src: &mut dyn Source,
    sink: impl Sink + 'static,
    k: usize,
    opts: Options<'_>,
) -> Result<Opened, PipelineError> {
    open(
        src,
        Box::new(sink),
        &mut CpuSeq::new(),
        &after_reads(k),
        &plan(),
        opts,
    )
}

/// `Numbered`, failing the test if it is asked for a frame after it said it had no more.
struct Once(Numbered, bool);

impl Source for Once {
    fn describe(&self) -> String {
        self.0.describe()
    }
    fn len_hint(&self) -> Option<usize> {
        self.0.len_hint()
    }
    fn next_frame(
        &mut self,
        slots: &mut dyn FrameSlots,
    ) -> Result<Option<(Frame, FrameMeta)>, IoError> {
        assert!(!self.1, "the source was asked again after its end");
        let next = self.0.next_frame(slots)?;
        self.1 = next.is_none();
        Ok(next)
    }
}

#[test]
fn an_opening_lane_hands_over_in_order_and_the_statistics_add_up() {
    const N: usize = 60;
    let want = reference(N);
    for (k, count, inflight) in [
        (0, 1, 2),
        (1, 1, 1),
        (7, 2, 2),
        (25, 3, 3),
        (59, 1, 2),
        (60, 2, 1),
        (80, 1, 2),
    ] {
        let what = format!("opening {k} of {N}, {count} lanes, inflight {inflight}");
        let got: Collected = Default::default();
        let stop = AtomicBool::new(false);
        let mut src = Once(Numbered::new(N, vec![]), false);
        let shown = AtomicUsize::new(0);
        let progress = |n: usize| {
            shown.fetch_max(n, Ordering::SeqCst);
        };
        let (mut cpu, mut check) = (CpuSeq::new(), CpuSeq::new());
        let mut opts = Options::new(inflight, &stop);
        opts.progress = Some(&progress);
        opts.check = Some(&mut check);
        let sink = Box::new(VecSink::sharing(got.clone()));
        let opened = open(&mut src, sink, &mut cpu, &after_reads(k), &plan(), opts).unwrap();
        let first = k.min(N);
        assert_eq!(opened.frames(), first, "{what}");
        assert_eq!(shown.load(Ordering::SeqCst), first, "{what}");

        let mut devices: Vec<MockDevice> = (0..count).map(|_| MockDevice::new()).collect();
        let completed = AtomicUsize::new(0);
        let mut hook = |s: &RunStats| {
            completed.store(s.frames, Ordering::SeqCst);
            Ok(())
        };
        let mut opts = Options::new(inflight, &stop);
        opts.check = Some(&mut check);
        opts.progress = Some(&progress);
        opts.on_complete = Some(&mut hook);
        let mut backends = lanes(&mut devices);
        let stats = run_after(opened, &mut src, &mut backends, &plan(), opts).unwrap();

        let order: Vec<usize> = got.lock().unwrap().iter().map(|(m, _)| m.index).collect();
        assert_eq!(order, (0..N).collect::<Vec<_>>(), "{what}");
        assert_eq!(frames(&got), want, "{what}");
        assert_eq!(
            shown.load(Ordering::SeqCst),
            N,
            "{what}: progress counts on"
        );
        assert_eq!(
            completed.load(Ordering::SeqCst),
            N,
            "{what}: the hook sees both parts"
        );
        assert_eq!(stats.frames, N, "{what}");
        assert_eq!(stats.latency.len() as usize, N, "{what}");
        for name in ["read", "write"] {
            assert_eq!(stats.stage(name).unwrap().frames, N, "{what}: {name}");
        }
        assert!(stats.first_frame.is_some(), "{what}");
        assert!(stats.first_frame.unwrap() <= stats.wall, "{what}");
        let opening = stats.opening();
        match first {
            0 => assert!(
                opening.is_none(),
                "{what}: no opening lane without its frames"
            ),
            _ => {
                let o = opening.unwrap();
                assert!(
                    std::ptr::eq(o, &stats.lanes[0]),
                    "{what}: the opening lane first"
                );
                assert_eq!((o.frames, o.device.is_none()), (first, true), "{what}");
                // Named in the backend's name, unless it filtered every frame alone.
                let named = format!("after {first} frame(s) on {}", o.backend);
                let alone = k > N;
                assert_eq!(stats.backend.contains(&named), !alone, "{}", stats.backend);
            }
        }
        // The hand-over came before the source's end was seen (at k = N too): the device
        // lanes ran, if with nothing left to read.
        let devices_ran = k <= N;
        let own = stats.lanes.len() - usize::from(first > 0);
        assert_eq!(own, if devices_ran { count } else { 0 }, "{what}");
        assert_eq!(stats.device_frames(), N - first, "{what}");
        let on_lanes: usize = stats.lanes.iter().map(|l| l.frames).sum();
        assert_eq!(on_lanes, N, "{what}");
        assert_eq!(stats.device.is_some(), devices_ran, "{what}");
        assert!(stats.checked, "{what}: both parts compared with cpu-seq");
        // The stages between read and write are the device lanes' when they ran (the
        // opening lane's filter is in its own entry).
        let between = if devices_ran { N - first } else { N };
        assert_eq!(stats.stage("filter").unwrap().frames, between, "{what}");
        if devices_ran {
            assert_eq!(stats.stage("upload").unwrap().frames, N - first, "{what}");
        }
    }
}

#[test]
fn a_failure_after_an_opening_aborts_the_output_and_a_stop_ends_it() {
    // A device failing after the hand-over: the run fails, and what the opening lane wrote
    // goes with the rest.
    let seen: Arc<Mutex<Vec<(usize, u8)>>> = Default::default();
    let finished: Arc<Mutex<Option<bool>>> = Default::default();
    let recorder = || Recorder {
        seen: seen.clone(),
        fail_at: None,
        finished: finished.clone(),
    };
    let stop = AtomicBool::new(false);
    let mut src = Numbered::new(100, vec![]);
    let opened = open_on_cpu(&mut src, recorder(), 10, Options::new(2, &stop)).unwrap();
    let mut device = MockDevice::new();
    device.fail_after = Some(5);
    let opts = Options::new(2, &stop);
    let err = run_after(opened, &mut src, &mut [&mut device], &plan(), opts).unwrap_err();
    assert!(err.to_string().contains("planned kernel failure"), "{err}");
    assert_eq!(*finished.lock().unwrap(), Some(false), "aborted");
    assert!(seen.lock().unwrap().len() >= 10);

    // The sink failing during the opening: `open` fails and aborts it.
    *finished.lock().unwrap() = None;
    let sink = Recorder {
        fail_at: Some(3),
        ..recorder()
    };
    let mut src = Numbered::new(100, vec![]);
    let err = open_on_cpu(&mut src, sink, 10, Options::new(2, &stop))
        .err()
        .unwrap();
    assert!(err.to_string().contains("planned failure"), "{err}");
    assert_eq!(*finished.lock().unwrap(), Some(false), "aborted");

    // Given up before the hand-over (the device backend could not be made): aborted.
    *finished.lock().unwrap() = None;
    let mut src = Numbered::new(100, vec![]);
    let opened = open_on_cpu(&mut src, recorder(), 4, Options::new(2, &stop)).unwrap();
    opened.abort();
    assert_eq!(*finished.lock().unwrap(), Some(false), "aborted");

    // A stop request during the opening: nothing more is read, and the frames read are
    // written and the output finished, as in any interrupted run.
    *finished.lock().unwrap() = None;
    seen.lock().unwrap().clear();
    let raise = |n: usize| {
        if n == 5 {
            stop.store(true, Ordering::SeqCst);
        }
    };
    let mut opts = Options::new(2, &stop);
    opts.progress = Some(&raise);
    let mut src = Numbered::new(100, vec![]);
    let opened = open_on_cpu(&mut src, recorder(), 50, opts).unwrap();
    let mut device = MockDevice::new();
    let stats = run_after(
        opened,
        &mut src,
        &mut [&mut device],
        &plan(),
        Options::new(2, &stop),
    )
    .unwrap();
    assert!(stats.interrupted);
    assert!((5..50).contains(&stats.frames), "{}", stats.frames);
    assert_eq!(
        device.made.load(Ordering::SeqCst),
        0,
        "the device lane never ran"
    );
    let seen: Vec<usize> = seen.lock().unwrap().iter().map(|s| s.0).collect();
    assert_eq!(seen, (0..stats.frames).collect::<Vec<_>>());
    assert_eq!(*finished.lock().unwrap(), Some(true), "finished");
}
