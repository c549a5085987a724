#!/usr/bin/env bash
# One command on a fresh machine: install what is missing, build, and filter a bundled sample
# (on the GPU when one is usable, else on the CPU: --backend auto). The samples are small enough
# for cpu-par to finish before a CUDA context comes up, so --gpu-only keeps every frame on the
# GPU where there is one (without a GPU it changes nothing).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"
cargo build --release --locked
mkdir -p out
./target/release/convflow info
./target/release/convflow filter samples/testsrc2.png -o out/testsrc2-gaussian9.png --kernel gaussian:9 --backend auto --gpu-only
./target/release/convflow filter samples/frames -o out/frames-sobel --kernel sobel-x --abs --backend auto --check --gpu-only
./target/release/convflow filter samples/testsrc2.mp4 -o out/testsrc2-gaussian9.mp4 --kernel gaussian:9 --backend auto --gpu-only
echo "quickstart: results in out/ (testsrc2-gaussian9.png, frames-sobel/, testsrc2-gaussian9.mp4)"
