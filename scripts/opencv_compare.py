#!/usr/bin/env python3
"""Side-by-side CPU reference: OpenCV's filter2D (full kernel) and sepFilter2D (separable)
on the same sizes, formats and kernel sizes as `convflow bench kernels`, with the same number
of threads. Prints a markdown table (median / min / max of N runs after warm-up).
`--family log` measures filter2D on `log:k`'s weights (the Laplacian of Gaussian, computed as
convflow's src/filter/library.rs does), the kernel `convflow bench kernels --family log` times
(not separable: sepFilter2D has no rows for it).

    pip install opencv-python-headless numpy
    python3 scripts/opencv_compare.py --threads 2 --sizes 1080p,4k --ks 3,5,7,9,15,25
"""
import argparse
import statistics
import time

import cv2
import numpy as np

# convflow's format names: channels and sample type (`cv2` filters 16-bit images in their own
# depth, rounding and saturating as convflow's output rule does).
FORMATS = {"gray": (1, np.uint8), "rgb": (3, np.uint8), "gray16": (1, np.uint16), "rgb48": (3, np.uint16)}
SIZES = {"720p": (1280, 720), "1080p": (1920, 1080), "1440p": (2560, 1440), "4k": (3840, 2160), "8k": (7680, 4320)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=0, help="0 = OpenCV default")
    ap.add_argument("--sizes", default="1080p,4k")
    ap.add_argument("--formats", default="gray,rgb", help="gray, rgb (8-bit) and gray16, rgb48 (16-bit)")
    ap.add_argument("--ks", default="3,5,7,9,15,25")
    ap.add_argument("--ops", default="filter2D,sepFilter2D", help="which of filter2D, sepFilter2D")
    ap.add_argument("--family", default="gaussian", choices=["gaussian", "log"])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--budget", type=float, default=10.0, help="seconds of timed runs per point at most")
    a = ap.parse_args()
    if a.threads:
        cv2.setNumThreads(a.threads)
    print(f"OpenCV {cv2.__version__}, threads {cv2.getNumThreads()}")
    print("| op | size | format | k | runs | median ms | min ms | max ms | MPix/s |")
    print("|---|---|---|---|---|---|---|---|---|")
    rng = np.random.default_rng(1)
    for size in a.sizes.split(","):
        w, h = SIZES[size]
        for fmt in a.formats.split(","):
            if fmt not in FORMATS:
                ap.error(f"--formats: unknown format {fmt!r} (one of {', '.join(FORMATS)})")
            channels, dtype = FORMATS[fmt]
            shape = (h, w) if channels == 1 else (h, w, channels)
            img = rng.integers(0, np.iinfo(dtype).max + 1, size=shape, dtype=dtype)
            for k in map(int, a.ks.split(",")):
                g = cv2.getGaussianKernel(k, 0, ktype=cv2.CV_32F)
                full = (g @ g.T).astype(np.float32) if a.family == "gaussian" else log_kernel(k)
                ops = {
                    "filter2D": lambda: cv2.filter2D(img, -1, full, borderType=cv2.BORDER_REPLICATE),
                    "sepFilter2D": lambda: cv2.sepFilter2D(img, -1, g, g, borderType=cv2.BORDER_REPLICATE),
                }
                for name, op in ops.items():
                    if name not in a.ops.split(",") or (a.family == "log" and name == "sepFilter2D"):
                        continue
                    for _ in range(a.warmup):
                        op()
                    times, start = [], time.perf_counter()
                    while len(times) < a.runs and (not times or time.perf_counter() - start < a.budget):
                        t = time.perf_counter()
                        op()
                        times.append(time.perf_counter() - t)
                    med = statistics.median(times)
                    print(
                        f"| {name} | {size} | {fmt} | {k} | {len(times)} | {med*1e3:.3f} | {min(times)*1e3:.3f} "
                        f"| {max(times)*1e3:.3f} | {w*h/med/1e6:.1f} |",
                        flush=True,
                    )


def log_kernel(k):
    """`log:k` as convflow builds it: OpenCV's default σ for k, in f64, less its mean, to f32."""
    s = 0.3 * ((k - 1) * 0.5 - 1) + 0.8
    c = (k - 1) * 0.5
    y, x = np.mgrid[0:k, 0:k].astype(np.float64)
    r2 = (x - c) ** 2 + (y - c) ** 2
    g = np.exp(-r2 / (2 * s * s)) / (2 * np.pi * s * s)
    w = (2 * s * s - r2) / s**4 * g
    return (w - w.mean()).astype(np.float32)


if __name__ == "__main__":
    main()
