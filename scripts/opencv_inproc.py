#!/usr/bin/env python3
"""OpenCV's sepFilter2D against cpu-par in one process, alternated call by call, so that both
see the same phases of a shared machine (two processes timed one after the other do not).
cpu-par comes in through a C ABI (examples/cpu_par_ffi.rs); the pair's order flips every call.
Prints a markdown table of medians (and minima) over N calls each after 5 warm-up calls.

    cargo build --release --example cpu_par_ffi --no-default-features
    python3 scripts/opencv_inproc.py --threads 1 --sizes 1080p,4k --ks 3,5,7,9,15,25
"""
import argparse
import ctypes
import statistics
import time

import cv2
import numpy as np

SIZES = {"720p": (1280, 720), "1080p": (1920, 1080), "1440p": (2560, 1440), "4k": (3840, 2160), "8k": (7680, 4320)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", default="target/release/examples/libcpu_par_ffi.so")
    ap.add_argument("--threads", type=int, default=1, help="threads for both")
    ap.add_argument("--sizes", default="1080p,4k")
    ap.add_argument("--formats", default="gray,rgb")
    ap.add_argument("--ks", default="3,5,7,9,15,25")
    ap.add_argument("--calls", type=int, default=40)
    a = ap.parse_args()
    lib = ctypes.CDLL(a.lib)
    lib.cf_prepare.restype = ctypes.c_void_p
    lib.cf_prepare.argtypes = [ctypes.c_size_t] * 5
    lib.cf_run.restype = ctypes.c_double
    lib.cf_run.argtypes = [ctypes.c_void_p]
    lib.cf_free.argtypes = [ctypes.c_void_p]
    cv2.setNumThreads(a.threads)
    rng = np.random.default_rng(1)
    print(f"OpenCV {cv2.__version__} sepFilter2D and cpu-par, {a.threads} thread(s) each, alternated call by call "
          f"in one process, {a.calls} calls each after 5 warm-up calls; ms")
    print("| size | format | k | cpu-par median (min) | sepFilter2D median (min) | OpenCV / cpu-par (medians) |")
    print("|---|---|---|---|---|---|")
    for size in a.sizes.split(","):
        w, h = SIZES[size]
        for fmt in a.formats.split(","):
            ch = 1 if fmt == "gray" else 3
            img = rng.integers(0, 256, size=(h, w) if ch == 1 else (h, w, 3), dtype=np.uint8)
            for k in map(int, a.ks.split(",")):
                g = cv2.getGaussianKernel(k, 0, ktype=cv2.CV_32F)
                case = lib.cf_prepare(a.threads, w, h, ch, k)
                if not case:
                    raise SystemExit(f"cpu_par_ffi: cannot prepare {size} {fmt} k={k}")

                def opencv():
                    t = time.perf_counter()
                    cv2.sepFilter2D(img, -1, g, g, borderType=cv2.BORDER_REPLICATE)
                    return (time.perf_counter() - t) * 1e3

                cv, cf = [], []
                for i in range(a.calls + 5):
                    if i % 2:
                        f, c = lib.cf_run(case), opencv()
                    else:
                        c, f = opencv(), lib.cf_run(case)
                    if f < 0:
                        raise SystemExit(f"cpu_par_ffi: filtering failed at {size} {fmt} k={k}")
                    if i >= 5:
                        cv.append(c)
                        cf.append(f)
                lib.cf_free(case)
                mc, mf = statistics.median(cv), statistics.median(cf)
                r = f"{mc / mf:.2f}"
                print(f"| {size} | {fmt} | {k} | {mf:.3f} ({min(cf):.3f}) | {mc:.3f} ({min(cv):.3f}) "
                      f"| {'**' + r + '**' if mc < mf else r} |", flush=True)


if __name__ == "__main__":
    main()
