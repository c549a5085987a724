//! The CUDA backend inside the pipeline: overlapped transfer stages (pinned pools, copy streams)
//! and the `--sync` loop give exactly cpu-seq's bytes for every format, in order, with the
//! transfer-vs-kernel split measured; device out-of-memory is a clear error; the bandwidth probe
//! returns plausible numbers; cpu-par opening a run before the CUDA lane takes over gives the
//! same bytes; frames chained on the device (each the next one's source, no host wait between)
//! give cpu-seq's filters in turn; frames whose copies the queues batch each land in their own
//! buffer. Skips without a GPU unless CONVFLOW_REQUIRE_GPU=1.
#![cfg(feature = "cuda")]

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use convflow::backend::cuda::CudaBackend;
use convflow::backend::{Backend, CpuPar, CpuSeq};
use convflow::filter::{spec::parse_spec, Filter};
use convflow::frame::{Frame, PixelFormat, Shape};
use convflow::io::synthetic::SyntheticSource;
use convflow::io::{FrameMeta, FrameSlots, IoError, Source, VecSink};
use convflow::pipeline::{open, run, run_after, run_on, Options};

/// Every 8-bit format and the deep families: 16-bit gray and RGB, 10-bit planar and P010.
fn formats() -> impl Iterator<Item = PixelFormat> {
    let deep = [
        PixelFormat::Gray16,
        PixelFormat::Rgb16,
        PixelFormat::Yuv420p10,
        PixelFormat::P010,
    ];
    let eight = PixelFormat::all().iter().filter(|f| f.depth().bits() == 8);
    eight.copied().chain(deep)
}

fn gpu(offload: bool, pageable: bool) -> Option<CudaBackend> {
    match CudaBackend::new(0, Default::default(), None) {
        Ok(mut b) => {
            b.set_offload(offload);
            b.set_pageable(pageable);
            Some(b)
        }
        Err(e) => {
            common::skip_without_gpu(e);
            None
        }
    }
}

/// `--devices all`: one lane per GPU of the machine (one lane on a one-GPU machine), every
/// format, `--check` against cpu-seq, order and counts kept, every lane used.
#[test]
fn every_gpu_of_the_machine_in_one_run_equals_cpu_seq_for_every_format() {
    if gpu(true, false).is_none() {
        return;
    }
    let count = convflow::backend::device_count();
    let devices: Vec<usize> = (0..count).collect();
    let schedule = convflow::backend::Schedule::default();
    let mut backends =
        convflow::backend::create_on(convflow::backend::BackendKind::Cuda, &schedule, &devices)
            .unwrap();
    assert_eq!(backends.len(), count);
    let mut lanes: Vec<&mut dyn Backend> = Vec::new();
    for b in backends.iter_mut() {
        lanes.push(b.as_mut());
    }
    let stop = AtomicBool::new(false);
    for format in formats() {
        let plan = Filter::new(parse_spec("gaussian:9").unwrap())
            .plan()
            .unwrap();
        let sink = VecSink::new();
        let got = sink.frames();
        let mut check = CpuSeq::new();
        let mut opts = Options::new(2, &stop);
        opts.check = Some(&mut check);
        let n = 8 * count + 3;
        let mut src = SyntheticSource::parse(&format!("synthetic:641x363:{format}:{n}")).unwrap();
        let stats = run_on(&mut src, Box::new(sink), &mut lanes, &plan, opts)
            .unwrap_or_else(|e| panic!("{format} on {count} GPUs: {e}"));
        let got = got.lock().unwrap();
        assert_eq!(
            got.iter().map(|g| g.0.index).collect::<Vec<_>>(),
            (0..n).collect::<Vec<_>>(),
            "{format}"
        );
        assert!(stats.checked);
        assert_eq!(stats.lanes.len(), count);
        assert!(
            stats.lanes.iter().all(|l| l.frames > 0),
            "{format}: every GPU filtered frames: {:?}",
            stats.lanes.iter().map(|l| l.frames).collect::<Vec<_>>()
        );
    }
}

/// `n` frames of `format` whose samples depend on the frame's index alone. (A synthetic source
/// fills each recycled buffer once, so its frames depend on which buffers a run's pools hand
/// it: two runs with different pools read different frames.)
struct Indexed {
    format: PixelFormat,
    n: usize,
    next: usize,
}

impl Source for Indexed {
    fn describe(&self) -> String {
        format!("{} indexed frames", self.format)
    }
    fn len_hint(&self) -> Option<usize> {
        Some(self.n - self.next)
    }
    fn next_frame(
        &mut self,
        slots: &mut dyn FrameSlots,
    ) -> Result<Option<(Frame, FrameMeta)>, IoError> {
        if self.next == self.n {
            return Ok(None);
        }
        let i = self.next;
        self.next += 1;
        let mut f = slots.take(self.format, 643, 201)?;
        let mut s = (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        for p in 0..f.planes().len() {
            let (depth, samples, rows) = {
                let l = &f.planes()[p];
                (l.depth, l.row_samples(), l.height)
            };
            let mask = (1u64 << depth.bits()) - 1;
            for y in 0..rows {
                let row = f.row_mut(p, y);
                for x in 0..samples {
                    s ^= s << 13;
                    s ^= s >> 7;
                    s ^= s << 17;
                    depth.put(row, x, ((s >> 32) & mask) as u16);
                }
            }
        }
        let meta = FrameMeta {
            index: i,
            ..FrameMeta::default()
        };
        Ok(Some((f, meta)))
    }
}

/// What the CLI does while a CUDA context comes up: cpu-par filters the first k frames (the
/// opening lane), the CUDA lane the rest, into one output; every format, `--check` on both
/// parts, and the bytes equal one cpu-seq run's.
#[test]
fn a_cpu_opening_then_the_gpu_equals_cpu_seq_for_every_format() {
    let Some(mut b) = gpu(true, false) else {
        return;
    };
    let stop = AtomicBool::new(false);
    let mut cpu = CpuPar::new(4).unwrap();
    for format in formats() {
        let frames = || Indexed {
            format,
            n: 23,
            next: 0,
        };
        for (kernel, k) in [("gaussian:9", 5), ("sharpen", 1), ("box:7x3", 22)] {
            let plan = Filter::new(parse_spec(kernel).unwrap()).plan().unwrap();
            let what = format!("{format} {kernel}, {k} frames on the CPU");
            let want = VecSink::new();
            let wanted = want.frames();
            let mut src = frames();
            let opts = Options::new(2, &stop);
            run(&mut src, Box::new(want), &mut CpuSeq::new(), &plan, opts).unwrap();

            let sink = VecSink::new();
            let got = sink.frames();
            let mut src = frames();
            let asked = AtomicUsize::new(0);
            let ready = || asked.fetch_add(1, Ordering::SeqCst) >= k;
            let mut check = CpuSeq::new();
            let mut opts = Options::new(2, &stop);
            opts.check = Some(&mut check);
            let opened = open(&mut src, Box::new(sink), &mut cpu, &ready, &plan, opts)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_eq!(opened.frames(), k, "{what}");
            let mut check = CpuSeq::new();
            let mut opts = Options::new(2, &stop);
            opts.check = Some(&mut check);
            let stats = run_after(opened, &mut src, &mut [&mut b], &plan, opts)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            assert!(stats.checked, "{what}");
            let lanes: Vec<_> = stats.lanes.iter().map(|l| (l.opening, l.frames)).collect();
            assert_eq!(lanes, [(true, k), (false, 23 - k)], "{what}");
            assert_eq!(stats.device_frames(), 23 - k, "{what}");
            let (got, wanted) = (got.lock().unwrap(), wanted.lock().unwrap());
            let index = |v: &[(convflow::io::FrameMeta, Frame)]| -> Vec<usize> {
                v.iter().map(|g| g.0.index).collect()
            };
            assert_eq!(index(&got), (0..23).collect::<Vec<_>>(), "{what}");
            assert!(
                got.iter()
                    .zip(wanted.iter())
                    .all(|(g, w)| g.1.same_pixels(&w.1)),
                "{what}: the bytes differ from cpu-seq's"
            );
        }
    }
}

#[test]
fn overlapped_and_sync_pipelines_equal_cpu_seq_for_every_format() {
    let stop = AtomicBool::new(false);
    for (offload, pageable) in [(true, false), (true, true), (false, true), (false, false)] {
        let Some(mut b) = gpu(offload, pageable) else {
            return;
        };
        for format in formats() {
            for (spec, inflight) in [("gaussian:7", 3), ("sobel-x", 1), ("box:15x3", 5)] {
                let plan = Filter::new(parse_spec(spec).unwrap()).plan().unwrap();
                let sink = VecSink::new();
                let got = sink.frames();
                let mut check = CpuSeq::new();
                let mut opts = Options::new(inflight, &stop);
                opts.check = Some(&mut check);
                let mut src =
                    SyntheticSource::parse(&format!("synthetic:321x203:{format}:17")).unwrap();
                let stats = run(&mut src, Box::new(sink), &mut b, &plan, opts)
                    .unwrap_or_else(|e| panic!("{format} {spec} offload={offload}: {e}"));
                let got = got.lock().unwrap();
                assert_eq!(
                    got.iter().map(|g| g.0.index).collect::<Vec<_>>(),
                    (0..17).collect::<Vec<_>>()
                );
                assert!(stats.checked && stats.overlapped == offload);
                let d = stats.device.expect("device times measured");
                assert!(
                    d.kernel.as_nanos() > 0 && d.h2d.as_nanos() > 0 && d.d2h.as_nanos() > 0,
                    "{d:?}"
                );
                let names: Vec<_> = stats.stages.iter().map(|s| s.name).collect();
                let want: &[&str] = if offload {
                    &["read", "upload", "filter", "download", "write"]
                } else {
                    &["read", "filter", "write"]
                };
                assert_eq!(names, want);
            }
        }
    }
}

/// Frames filtered on the device one after another, each the next one's source, with no host
/// wait between (`start_device` twice, then `finish_device` twice): on compute capability 9.0
/// and later `fast` queues the second launch as a programmatic dependent of the first, so its
/// blocks may be resident before the first has finished and must wait for it before reading
/// what it writes. A long first kernel (15×15 full) then a short one; the result is cpu-seq's
/// two filters in turn, for one-launch frames of one, three and three-plane layouts and 16-bit
/// samples.
#[test]
fn chained_device_frames_read_what_the_launch_before_wrote() {
    let Some(mut b) = gpu(true, false) else {
        return;
    };
    assert!(b.device_depth() >= 2);
    let off = b.offload().unwrap().unwrap();
    let mut q = off.queue().unwrap();
    let long = Filter::new(parse_spec("gaussian:15").unwrap());
    let long = Filter {
        mode: convflow::filter::Mode::Full,
        ..long
    };
    let plans = [
        long.plan().unwrap(),
        Filter::new(parse_spec("box:3").unwrap()).plan().unwrap(),
    ];
    let (mut rng, seed) = common::Rng::fresh(21);
    for format in [
        PixelFormat::Gray8,
        PixelFormat::Rgb8,
        PixelFormat::Yuv420p,
        PixelFormat::Gray16,
    ] {
        let src = common::random_frame(&mut rng, format, 1920, 1080);
        let mut want = Frame::like(&src);
        let mut mid = Frame::like(&src);
        CpuSeq::new()
            .filter_frame(&plans[0], &src, &mut mid)
            .unwrap();
        CpuSeq::new()
            .filter_frame(&plans[1], &mid, &mut want)
            .unwrap();
        let shape = src.shape();
        let mut d = [0, 1, 2].map(|_| off.device_frame(&shape).unwrap());
        let mut got = off.host_frame(format, 1920, 1080, true).unwrap();
        let [a, m, z] = &mut d;
        // SAFETY: every copy and frame is finished (finish, finish_device) before its buffers
        // are touched again or dropped.
        unsafe {
            q.start_upload(&src, a).unwrap();
            q.finish().unwrap();
            b.start_device(&plans[0], a, m).unwrap();
            b.start_device(&plans[1], m, z).unwrap();
        }
        b.finish_device().unwrap();
        b.finish_device().unwrap();
        // SAFETY: as above.
        unsafe { q.start_download(z, &mut got).unwrap() };
        q.finish().unwrap();
        if let Some(diff) = common::first_difference(&got, &want) {
            panic!("seed {seed}: {format}: the chained frames differ from cpu-seq's at {diff}");
        }
    }
}

/// The copy queues hold frames' copies back while two submissions run and submit them together
/// (`cuMemcpyBatchAsync`): every frame lands in its own buffer and each copy is over when its
/// `finish` returns — each frame goes back to the host the moment its upload is finished (on
/// another stream, which does not wait for the upload), and is checked the moment its download
/// is — whether its copy went in a batch, alone (rows the device pads: one 2D copy per plane,
/// after the copies held before it) or from pageable memory (alone too), the queue's ring of
/// slots wrapping in every round, with finishes reached through `done` polls or directly.
#[test]
fn batched_copies_land_every_frame_in_its_own_buffer() {
    let Some(mut b) = gpu(true, false) else {
        return;
    };
    let off = b.offload().unwrap().unwrap();
    let (mut rng, seed) = common::Rng::fresh(55);
    // 2 MiB frames keep the link busy for ~40 µs each, so copies started back to back wait for
    // it and gather into batches; 2047-wide rows are padded on the device.
    let sizes = [
        (2048, 1024),
        (2048, 1024),
        (2047, 1023),
        (2048, 1024),
        (2048, 1024),
    ];
    for (round, extra) in [1, 2, 4, 7, 11].into_iter().enumerate() {
        let depth = off.queue().unwrap().depth();
        let count = depth + extra;
        let want: Vec<Frame> = (0..count)
            .map(|i| {
                let (w, h) = sizes[i % sizes.len()];
                let f = common::random_frame(&mut rng, PixelFormat::Gray8, w, h);
                let mut packed = Frame::new(PixelFormat::Gray8, w, h).unwrap();
                packed.plane_mut(0).copy_from(&f.plane(0));
                packed
            })
            .collect();
        let srcs: Vec<Frame> = want
            .iter()
            .enumerate()
            .map(|(i, f)| {
                if i % 7 == 6 {
                    return f.clone(); // pageable
                }
                let mut pinned = off
                    .host_frame(f.format(), f.width(), f.height(), true)
                    .unwrap();
                pinned.plane_mut(0).copy_from(&f.plane(0));
                pinned
            })
            .collect();
        let mut devs: Vec<_> = srcs
            .iter()
            .map(|f| off.device_frame(&f.shape()).unwrap())
            .collect();
        let mut outs: Vec<Frame> = srcs
            .iter()
            .map(|f| {
                off.host_frame(f.format(), f.width(), f.height(), true)
                    .unwrap()
            })
            .collect();
        // Made after the buffers, so that (unwinding from a failure) they are dropped first,
        // waiting for their copies before the buffers go.
        let (mut up, mut down) = (off.queue().unwrap(), off.queue().unwrap());
        let poll = round % 2 == 0;
        let (mut uploaded, mut downloaded, mut checked) = (0, 0, 0);
        let finish = |q: &mut Box<dyn convflow::device::CopyQueue>| {
            while poll && !q.done() {
                std::hint::spin_loop();
            }
            q.finish().unwrap();
        };
        for i in 0..=count {
            // Room for the next upload: the oldest upload finishes, and its frame at once
            // starts back (room for that download: the oldest download finishes and is checked).
            while uploaded < i.min(count) && (i == count || i - uploaded == up.depth()) {
                finish(&mut up);
                if downloaded - checked == down.depth() {
                    finish(&mut down);
                    if let Some(diff) = common::first_difference(&outs[checked], &want[checked]) {
                        panic!("seed {seed}: round {round}, frame {checked} differs at {diff}");
                    }
                    checked += 1;
                }
                let (d, o) = (&devs[uploaded], &mut outs[uploaded]);
                // SAFETY: every copy is finished before its frames are touched or dropped (the
                // queues, dropped first, wait for theirs).
                unsafe { down.start_download(d, o).unwrap() };
                (uploaded, downloaded) = (uploaded + 1, downloaded + 1);
            }
            if i < count {
                // SAFETY: as above.
                unsafe { up.start_upload(&srcs[i], &mut devs[i]).unwrap() };
            }
        }
        while checked < count {
            finish(&mut down);
            if let Some(diff) = common::first_difference(&outs[checked], &want[checked]) {
                panic!("seed {seed}: round {round}, frame {checked} differs at {diff}");
            }
            checked += 1;
        }
        if up.batch_most() > 1 {
            assert!(up.batched() > 0, "round {round}: no upload went in a batch");
        }
    }
}

#[test]
fn device_out_of_memory_is_a_clear_error() {
    let Some(mut b) = gpu(true, false) else {
        return;
    };
    let off = b.offload().unwrap().unwrap();
    // 16 GiB per frame: allocating until the device is full must fail cleanly.
    let len = 1usize << 34;
    let shape = Shape {
        format: PixelFormat::Gray8,
        width: 65536,
        height: 65536 * 4,
        planes: Vec::new(),
        len,
    };
    let mut held = Vec::new();
    let err = loop {
        match off.device_frame(&shape) {
            Ok(f) => held.push(f),
            Err(e) => break e.to_string(),
        }
        assert!(held.len() < 64, "1 TiB allocated without an error?");
    };
    assert!(
        err.contains("GPU out of memory") && err.contains(&len.to_string()),
        "{err}"
    );
    drop(held);
    // The backend still works afterwards.
    let plan = Filter::new(parse_spec("box:3").unwrap()).plan().unwrap();
    let src = Frame::new(PixelFormat::Gray8, 64, 64).unwrap();
    let mut dst = Frame::like(&src);
    b.filter_frame(&plan, &src, &mut dst).unwrap();
}

#[test]
fn bandwidth_probe_is_plausible() {
    let Some(mut b) = gpu(true, false) else {
        return;
    };
    let l = b
        .measure()
        .expect("CUDA measures itself")
        .link_bandwidth(64 << 20, 3)
        .unwrap();
    eprintln!(
        "H2D {:.1} GB/s, D2H {:.1} GB/s, duplex {:.1} GB/s",
        l.h2d / 1e9,
        l.d2h / 1e9,
        l.duplex / 1e9
    );
    for v in [l.h2d, l.d2h, l.duplex] {
        assert!(v > 1e9 && v < 1e12, "{l:?}");
    }
}

#[test]
fn kernels_see_plane_params_exactly_as_rust_lays_it_out() {
    use convflow::backend::cuda::abi::PLANE_PARAMS_FIELDS;
    let Some(mut b) = gpu(true, false) else {
        return;
    };
    let device = b.device_plane_params_layout().unwrap();
    let host: Vec<i64> = PLANE_PARAMS_FIELDS.iter().map(|&(_, o)| o as i64).collect();
    assert_eq!(
        device,
        host,
        "fields: {:?}",
        PLANE_PARAMS_FIELDS.map(|f| f.0)
    );
}
