#!/usr/bin/env bash
# One command on a fresh machine: install what is missing, build, and filter a bundled sample
# (on the GPU when one is usable, else on the CPU: --backend auto).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"
cargo build --release --locked
mkdir -p out
./target/release/convflow info
./target/release/convflow filter samples/testsrc2.png -o out/testsrc2-gaussian9.png --kernel gaussian:9 --backend auto
./target/release/convflow filter samples/frames -o out/frames-sobel --kernel sobel-x --abs --backend auto --check
./target/release/convflow filter samples/testsrc2.mp4 -o out/testsrc2-gaussian9.mp4 --kernel gaussian:9 --backend auto
echo "quickstart: results in out/ (testsrc2-gaussian9.png, frames-sobel/, testsrc2-gaussian9.mp4)"
