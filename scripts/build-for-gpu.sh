#!/usr/bin/env bash
# Builds convflow and its GPU test binaries here (no CUDA needed: cudarc loads libcuda and
# NVRTC at run time) and collects what a GPU host needs in .carry/ (git-ignored):
#   .carry/convflow      the CLI
#   .carry/conformance   every backend and CUDA variant vs cpu-seq vs the f64 oracle
#   .carry/gpu           NVRTC compile check of every kernel
# Copy .carry/ and scripts/gpu-run.sh to the GPU host (or carry them with the device tool) and
# run: bash scripts/gpu-run.sh OUTDIR
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked
mkdir -p .carry
rm -f .carry/*
cp target/release/convflow .carry/
for t in conformance gpu; do
    exe=$(cargo test --release --locked --no-run --test "$t" 2>&1 | sed -n "s/.*Executable tests\/$t.rs (\(.*\))/\1/p")
    cp "$exe" ".carry/$t"
done
strip .carry/*
ls -la .carry
