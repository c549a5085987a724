#!/usr/bin/env bash
# Runs on a GPU host with the binaries from scripts/build-for-gpu.sh in .carry/:
# the GPU test suite with CONVFLOW_REQUIRE_GPU=1 (a missing GPU fails instead of skipping) and
# the kernel benchmark. Results go to OUTDIR (default ./gpu-results).
#   bash scripts/gpu-run.sh [OUTDIR] [bench arguments...]
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
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$out/gpu.txt"
.carry/convflow info | tee -a "$out/gpu.txt"
status=0
.carry/gpu 2>&1 | tee "$out/gpu-tests.log" | tail -n 3 || status=1
.carry/conformance --test-threads "$(nproc)" 2>&1 | tee "$out/conformance.log" | grep -E "test result|FAILED|panicked" || status=1
grep -q "test result: ok" "$out/conformance.log" || status=1
# End to end on the bundled samples, every variant checked against cpu-seq (--check).
for v in auto global constant shared shared-constant texture separable-global separable-shared fast; do
    case $v in global|constant|shared|shared-constant|texture) mode=full ;; *) mode=auto ;; esac
    .carry/convflow filter samples/testsrc2.png -o "$out/testsrc2-$v.png" --kernel gaussian:9 --mode $mode \
        --backend cuda --variant $v --check 2>&1 | tee -a "$out/samples.log" || status=1
done
.carry/convflow filter samples/frames -o "$out/frames-sobel" --kernel sobel-x --abs --backend cuda --check \
    2>&1 | tee -a "$out/samples.log" || status=1
rm -rf "$out"/testsrc2-*.png "$out/frames-sobel"

if [ "$#" -gt 0 ]; then
    .carry/convflow bench kernels --backend cuda "$@" --csv "$out/bench.csv" | tee "$out/bench.md"
fi
exit $status
