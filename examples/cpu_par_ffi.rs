//! `cpu-par` behind a C ABI, for timing it in the same process as another library, call by call
//! (scripts/opencv_inproc.py loads it with ctypes and alternates it with OpenCV's
//! `sepFilter2D`). Two processes timed one after the other see different phases of a shared
//! machine; calls alternated in one process see the same ones. A development tool, built with
//! `cargo build --release --example cpu_par_ffi --no-default-features`.

use std::time::Instant;

use convflow::backend::{Backend, CpuPar};
use convflow::filter::{spec, Filter, Mode, Plan};
use convflow::frame::{Frame, PixelFormat};
use convflow::Border;

/// One prepared case: the backend, the plan and the frames it filters.
pub struct Case {
    backend: CpuPar,
    plan: Plan,
    src: Frame,
    dst: Frame,
}

/// A case of `gaussian:k`, separable, clamp border, on a `w × h` frame of `channels` (1: gray,
/// else RGB) random 8-bit samples, filtered by `threads` threads. Null on a bad argument.
#[no_mangle]
pub extern "C" fn cf_prepare(
    threads: usize,
    w: usize,
    h: usize,
    channels: usize,
    k: usize,
) -> *mut Case {
    let make = || -> Option<Case> {
        let format = if channels == 1 {
            PixelFormat::Gray8
        } else {
            PixelFormat::Rgb8
        };
        let mut src = Frame::new(format, w, h).ok()?;
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for b in src.data_mut() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            *b = x as u8;
        }
        let mut filter = Filter::new(spec::parse_spec(&format!("gaussian:{k}")).ok()?);
        (filter.mode, filter.border) = (Mode::Separable, Border::Clamp);
        Some(Case {
            backend: CpuPar::new(threads).ok()?,
            plan: filter.plan().ok()?,
            dst: Frame::new(format, w, h).ok()?,
            src,
        })
    };
    make().map_or(std::ptr::null_mut(), |c| Box::into_raw(Box::new(c)))
}

/// Filters the case's frame once; milliseconds, or −1 on an error.
///
/// # Safety
/// `case` must come from [`cf_prepare`] and not have been freed.
#[no_mangle]
pub unsafe extern "C" fn cf_run(case: *mut Case) -> f64 {
    let c = &mut *case;
    let start = Instant::now();
    match c.backend.filter_frame(&c.plan, &c.src, &mut c.dst) {
        Ok(()) => start.elapsed().as_secs_f64() * 1e3,
        Err(_) => -1.0,
    }
}

/// Frees a case.
///
/// # Safety
/// `case` must come from [`cf_prepare`] and not have been freed.
#[no_mangle]
pub unsafe extern "C" fn cf_free(case: *mut Case) {
    drop(Box::from_raw(case));
}
