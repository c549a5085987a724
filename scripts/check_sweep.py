#!/usr/bin/env python3
"""A random sweep of `convflow filter synthetic:... --check` (every frame of the backend under
test compared with cpu-seq's, byte for byte): pixel formats of every family and depth, sizes
from 1×1 to 4K (odd ones most), named, custom and kernel-file kernels (fractions, divisors,
offsets, signed weights, rank one or not, up to 33 taps a side), `--abs`, every border, mode
and CUDA variant, `--planes`, `--alpha`, `--block`, `--gpu-only`. Runs jobs in parallel until
the time is spent, then writes every command and its outcome to OUTDIR/checks.log and a line
of counts to OUTDIR/summary.txt. A run the tool refuses on purpose (a literature variant given
a plan it does not run) counts as `rejected`; any other error, a crash or a timeout is a
failure. A CUDA run whose two frames cpu-par filtered while the CUDA context came up (`auto`
without `--gpu-only` on small frames) checked no GPU kernel: it counts as `ok_cpu_only`, not
`ok`. Exits 1 if any run failed or none was checked. A development tool, not part of the
product.

    python3 scripts/check_sweep.py OUTDIR --seconds 300               # on the GPU machine
    python3 scripts/check_sweep.py OUTDIR --backend cpu-par --bin target/release/convflow
"""
import argparse
import os
import random
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed

ap = argparse.ArgumentParser()
ap.add_argument("out", help="folder for checks.log, summary.txt and the kernel files")
ap.add_argument("--seconds", type=float, default=300, help="stop starting runs after this long")
ap.add_argument("--seed", type=int, default=31)
ap.add_argument("--backend", default="cuda", help="the backend checked against cpu-seq")
ap.add_argument("--bin", default=".carry/convflow", help="the convflow binary")
ap.add_argument("--jobs", type=int, default=14, help="runs at once")
a = ap.parse_args()
out, budget, seed = a.out, a.seconds, a.seed
rng = random.Random(seed)
os.makedirs(out, exist_ok=True)
kdir = os.path.join(out, "kernels")
os.makedirs(kdir, exist_ok=True)

FORMATS = ("gray gray10 gray12 gray16 rgb rgb48 rgba rgba64 yuv420p yuv420p10 yuv420p12 "
           "yuv420p16 yuv422p yuv422p10 yuv444p yuv444p12 nv12 p010 p016 gray9 yuv444p14").split()
VARIANTS = ("auto global constant shared shared-constant texture separable-global "
            "separable-shared fast").split()
BORDERS = "clamp zero reflect wrap".split()
# What the tool says when it refuses a combination by design; any other error is a failure.
REFUSALS = ("runs separable kernels only", "runs full kernels only")
NAMED3 = "edge laplacian sharpen emboss sobel-x sobel-y".split()


def size():
    r = rng.random()
    if r < 0.15:
        return rng.randint(1, 12), rng.randint(1, 12)
    if r < 0.55:
        return rng.randint(13, 400), rng.randint(13, 300)
    if r < 0.9:
        return rng.randint(401, 2100), rng.randint(200, 1200)
    return rng.choice([(3840, 2160), (3841, 2161), (2560, 1440), (4096, 2160)])


def frac(v, d):
    return f"{v}/{d}" if d != 1 else str(v)


def kernel(n):
    """(spec args, taps, rank-one?)"""
    r = rng.random()
    if r < 0.30:
        fam = rng.choice(["gaussian", "box", "binomial"])
        if rng.random() < 0.7:
            w = h = rng.choice([1, 2, 3, 3, 4, 5, 5, 6, 7, 7, 8, 9, 11, 13, 15, 17, 21, 25, 31])
            spec = f"{fam}:{w}"
        else:
            w, h = rng.randint(1, 17), rng.randint(1, 17)
            spec = f"{fam}:{w}x{h}"
        if fam == "gaussian" and rng.random() < 0.3:
            spec += f":{rng.choice([0.5, 0.8, 1.1, 2.0, 3.7])}"
        return ["--kernel", spec], w * h, True
    if r < 0.40:
        name = rng.choice(NAMED3)
        return ["--kernel", name], 9, name.startswith("sobel")
    if r < 0.47:
        fam = rng.choice(["log", "unsharp"])
        k = rng.choice([3, 5, 7, 9, 11])
        return ["--kernel", f"{fam}:{k}"], k * k, False
    w, h = rng.randint(1, 9), rng.randint(1, 9)
    if rng.random() < 0.08:
        w, h = rng.randint(10, 33), rng.randint(1, 33)
    rank1 = rng.random() < 0.4
    if rank1:
        row = [rng.randint(-3, 9) for _ in range(w)]
        col = [rng.randint(-3, 9) for _ in range(h)]
        ints = [c * x for c in col for x in row]
        rank1 = any(ints)  # the zero kernel has rank 0: `--mode separable` refuses it
    else:
        ints = [rng.randint(-8, 12) for _ in range(w * h)]
    if rng.random() < 0.5:
        # A kernel file: integers, a divisor, maybe an offset.
        s = sum(ints)
        d = rng.choice([s if s > 0 else 1, rng.randint(1, 300), 16, 256, 1])
        lines = [" ".join(str(ints[y * w + x]) for x in range(w)) for y in range(h)]
        lines.append(f"divisor {d}")
        if rng.random() < 0.4:
            lines.append(f"offset {rng.choice([128, 64, -32, 0.5, 17.25])}")
        p = os.path.join(kdir, f"k{n}.txt")
        with open(p, "w") as f:
            f.write("# random\n" + "\n".join(lines) + "\n")
        return ["--kernel-file", p], w * h, rank1
    if rng.random() < 0.5:
        d = rng.choice([1, 4, 9, 16, 10, 100, 7])
        vals = [frac(v, d) for v in ints]
    else:
        vals = [f"{rng.uniform(-0.6, 1.0):.4f}" for _ in range(w * h)]
        rank1 = False
    return ["--kernel", f"custom:{w}x{h}:" + ",".join(vals)], w * h, rank1


FRAMES = 2  # frames a run filters


def job(n):
    fmt = rng.choice(FORMATS)
    w, h = size()
    kargs, taps, rank1 = kernel(n)
    # Keep cpu-seq's half of the check bounded.
    while w * h * taps > 3e8 and w > 16:
        w, h = w // 2, max(1, h // 2)
    args = ["filter", f"synthetic:{w}x{h}:{fmt}:{FRAMES}", "-o", "null", *kargs,
            "--border", rng.choice(BORDERS), "--backend", a.backend, "--check",
            "--variant", rng.choice(VARIANTS)]
    mode = rng.choice(["auto", "full", "separable"] if rank1 else ["auto", "full"])
    args += ["--mode", mode]
    if rng.random() < 0.2:
        args.append("--abs")
    if fmt.startswith(("yuv", "nv", "p0")) and rng.random() < 0.3:
        args += ["--planes", "luma"]
    if fmt.startswith("rgba") and rng.random() < 0.5:
        args += ["--alpha", "filter"]
    if a.backend == "cuda" and rng.random() < 0.1:
        args += ["--block", rng.choice(["16x16", "8x8", "32x4", "64x2", "128x1", "24x10"])]
    if a.backend == "cuda" and rng.random() < 0.1:
        args.append("--gpu-only")
    return args


def cpu_only(err):
    """Whether a CUDA run's report (its last line: source | kernel | backend | …) names no CUDA
    backend: cpu-par filtered every frame while the context came up."""
    parts = err[-1].split(" | ") if err else []
    return a.backend == "cuda" and len(parts) > 2 and "cuda" not in parts[2]


def run(args):
    t = time.time()
    try:
        p = subprocess.run([a.bin, *args], capture_output=True, text=True, timeout=120)
        rc, err = p.returncode, (p.stderr or "").strip().splitlines()
    except subprocess.TimeoutExpired:
        rc, err = "timeout", []
    except OSError as e:
        rc, err = "oserror", [str(e)]
    return args, rc, err[-2:] if err else [], time.time() - t


t0 = time.time()
n = 0
stats = {"ok": 0, "ok_cpu_only": 0, "rejected": 0, "failed": 0}
with open(os.path.join(out, "checks.log"), "w") as log, ThreadPoolExecutor(a.jobs) as ex:
    pending = set()
    while time.time() - t0 < budget or pending:
        while time.time() - t0 < budget and len(pending) < 2 * a.jobs:
            pending.add(ex.submit(run, job(n)))
            n += 1
        done = next(as_completed(pending))
        pending.remove(done)
        args, rc, err, dt = done.result()
        cmd = "convflow " + " ".join(args)
        if rc == 0 and cpu_only(err):
            stats["ok_cpu_only"] += 1
            log.write(f"ok (every frame on cpu-par) {dt:.1f}s {cmd}: {err[-1]}\n")
        elif rc == 0:
            stats["ok"] += 1
            log.write(f"ok {dt:.1f}s {cmd}: {err[-1] if err else ''}\n")
        elif rc in (1, 2) and err and any(r in err[-1] for r in REFUSALS):
            stats["rejected"] += 1
            log.write(f"rejected rc={rc} {cmd}: {err[-1]}\n")
        else:
            stats["failed"] += 1
            log.write(f"FAIL rc={rc} {dt:.1f}s {cmd}: {' | '.join(err)}\n")
        log.flush()
summary = f"seed {seed}: {n} runs, {stats} in {time.time() - t0:.0f} s"
print(summary)
with open(os.path.join(out, "summary.txt"), "w") as f:
    f.write(summary + "\n")
sys.exit(1 if stats["failed"] or not stats["ok"] else 0)
