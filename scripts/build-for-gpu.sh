#!/usr/bin/env bash
# Builds convflow and its GPU test binaries here (no CUDA needed: cudarc loads libcuda and
# NVRTC at run time) with FFmpeg linked statically (the GPU host has no FFmpeg libraries), and
# collects what a GPU host needs in .carry/ (git-ignored):
#   .carry/convflow       the CLI (static FFmpeg + x264; needs only glibc)
#   .carry/conformance    every backend and CUDA variant vs cpu-seq vs the f64 oracle
#   .carry/gpu            NVRTC compile check of every kernel
#   .carry/gpu_pipeline   the CUDA backend inside the pipeline (overlap and --sync), OOM, bandwidth
# Copy .carry/ and scripts/gpu-run.sh to the GPU host (or carry them with the device tool) and
# run: bash scripts/gpu-run.sh OUTDIR
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build-static.sh
export PKG_CONFIG_PATH="$PWD/.deps/ffmpeg-static/lib/pkgconfig"
mkdir -p .carry
rm -f .carry/*
cp target/release/convflow .carry/
for t in conformance gpu gpu_pipeline; do
    exe=$(cargo test --release --locked --features video-static --no-run --test "$t" 2>&1 |
        sed -n "s/.*Executable tests\/$t.rs (\(.*\))/\1/p")
    cp "$exe" ".carry/$t"
done
strip .carry/*
for f in .carry/*; do
    if readelf -d "$f" | grep -qE 'NEEDED.*(libav|libsw|libx264|libz\.)'; then
        echo "build-for-gpu.sh: $f needs shared FFmpeg libraries" >&2
        exit 1
    fi
done
ls -la .carry
