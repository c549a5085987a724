#!/usr/bin/env bash
# Runs on a GPU host with the binaries from scripts/build-for-gpu.sh in .carry/:
# the GPU test suites with CONVFLOW_REQUIRE_GPU=1 (a missing GPU fails instead of skipping),
# the bundled samples and synthetic streams through every CUDA variant with --check, and,
# when asked, benchmarks. Results go to OUTDIR (default ./gpu-results).
#   bash scripts/gpu-run.sh [OUTDIR] [kernels BENCH-ARGS... | pipeline BENCH-ARGS... | video CLIP |
#                                     npp [WIDTH HEIGHT RUNS] | compare WIDTH HEIGHT BENCH-ARGS...]
# `compare` measures `fast` and NPP (scripts/npp_bench.cu, built here with nvcc) in the same
# command at one frame size and merges them (scripts/npp_compare.py) into compare.md, e.g.
#   bash scripts/gpu-run.sh out compare 3840 2160 --formats gray,rgb,gray16,rgb48 --runs 30
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-gpu-results}
shift || true
mkdir -p "$out"
# NVRTC: the CUDA toolkit's, found wherever it is installed.
nvrtc=$(ls -d /usr/local/cuda*/lib64 /usr/local/cuda*/targets/*/lib 2>/dev/null | while read -r d; do
    [ -e "$d/libnvrtc.so.13" ] || [ -e "$d/libnvrtc.so" ] && echo "$d"; done | head -n1)
export LD_LIBRARY_PATH="${nvrtc:+$nvrtc:}${LD_LIBRARY_PATH:-}"
export CONVFLOW_REQUIRE_GPU=1 CONVFLOW_CACHE_DIR="${CONVFLOW_CACHE_DIR:-/tmp/convflow-ptx}"
cf=.carry/convflow
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$out/gpu.txt"
$cf info | tee -a "$out/gpu.txt"
status=0
.carry/gpu 2>&1 | tee "$out/gpu-tests.log" | tail -n 3 || status=1
for t in conformance gpu_pipeline; do
    .carry/$t --test-threads "$(nproc)" 2>&1 | tee "$out/$t.log" | grep -E "test result|FAILED|panicked|GB/s" || status=1
    grep -q "test result: ok" "$out/$t.log" || status=1
done
# End to end on the bundled samples, every variant of the table (`convflow info`) checked
# against cpu-seq (--check). gaussian:9 is rank 1: --mode auto plans the separable path, which
# the direct variants refuse (exit 2); they run it with --mode full.
variants=$($cf info | sed -n '/^cuda variants/,/^default/p' | awk 'NR > 1 && !/^default/ {print $1}')
nvariants=$(echo "$variants" | wc -w)
for v in $variants; do
    run() {
        $cf filter samples/testsrc2.png -o "$out/testsrc2-$v.png" --kernel gaussian:9 --mode "$1" \
            --backend cuda --variant "$v" --check 2>&1
    }
    run auto >"$out/variant.log"; rc=$?
    if [ $rc -eq 2 ] && grep -q "full kernels only" "$out/variant.log"; then
        echo "$v refuses the separable plan: $(cat "$out/variant.log")" >>"$out/samples.log"
        run full >"$out/variant.log" || status=1
    elif [ $rc -ne 0 ]; then
        status=1
    fi
    cat "$out/variant.log" | tee -a "$out/samples.log"
done
rm -f "$out/variant.log"
$cf filter samples/frames -o "$out/frames-sobel" --kernel sobel-x --abs --backend cuda --check \
    2>&1 | tee -a "$out/samples.log" || status=1
# Streams through the overlapped pipeline and the --sync loop, checked, every format family at
# 8 bits and the deep ones (16-bit gray/RGB, 10-bit planar and P010 YUV).
fmts="gray rgb rgba yuv420p nv12 gray16 rgb48 yuv420p10 p010"
for f in $fmts; do
    for s in "" --sync; do
        $cf filter synthetic:1921x1081:$f:40 -o null --kernel gaussian:7 --backend cuda --check $s \
            >>"$out/samples.log" 2>&1 || status=1
    done
done
rm -rf "$out"/testsrc2-*.png "$out/frames-sobel"
echo "checked runs identical to cpu-seq: $(grep -c 'identical to cpu-seq' "$out/samples.log")" \
    "(expect $((nvariants + 1 + 2 * $(echo $fmts | wc -w))))"

what=${1:-}
shift || true
case "$what" in
kernels) $cf bench kernels --backend cuda "$@" --csv "$out/bench.csv" | tee "$out/bench.md" ;;
pipeline) $cf bench pipeline "$@" --csv "$out/pipeline.csv" | tee "$out/pipeline.md" ;;
npp)
    # NPP's nppiFilterBorder32f and row/column pairs on every format (8u/16u; C1, C3, AC4R, and
    # plane by plane for YUV), and a plain device copy of each frame, timed like bench kernels.
    nvcc -O2 -o /tmp/npp_bench scripts/npp_bench.cu -lnppif -lnppc && /tmp/npp_bench "$@" |
        tee "$out/npp.csv" ;;
compare)
    w=$1 h=$2
    shift 2
    nvcc -O2 -arch=native -o /tmp/npp_bench scripts/npp_bench.cu -lnppif -lnppc &&
        $cf bench kernels --backend cuda --variants fast --sizes "${w}x$h" "$@" \
            --csv "$out/fast.csv" >"$out/fast.md" &&
        /tmp/npp_bench "$w" "$h" 30 >"$out/npp.csv" &&
        python3 scripts/npp_compare.py "$out/fast.csv" "$out/npp.csv" | tee "$out/compare.md" ||
        status=1
    ;;
video)
    # A real clip: decode only, decode + encode, and filtered on the GPU (libx264 on the CPU).
    clip=$1
    {
        echo "## $(basename "$clip")"
        $cf filter "$clip" -o null --passthrough 2>&1
        $cf filter "$clip" -o /tmp/pt.mp4 --passthrough 2>&1
        $cf filter "$clip" -o /tmp/f.mp4 --kernel gaussian:9 --backend cuda 2>&1
        $cf filter "$clip" -o null --kernel gaussian:9 --backend cuda 2>&1
        $cf filter "$clip" -o /tmp/check.mkv --codec ffv1 --kernel gaussian:9 --backend cuda --check 2>&1 | head -n 1
    } | tee "$out/video.log"
    ;;
esac
exit $status
