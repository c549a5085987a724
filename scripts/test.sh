#!/usr/bin/env bash
# The whole test suite (what CI runs): installs what is missing, then runs every test.
#  - CPU backends, kernels, CLI: always.
#  - Every CUDA kernel is compiled through NVRTC for sm_80 and sm_90 (no GPU needed): NVRTC
#    comes from the nvidia-cuda-nvrtc 13.0 wheel, unpacked into .deps/nvrtc.
#  - y4m round trips run through the real ffmpeg CLI (installed by install-deps).
#  - GPU tests skip without a GPU; set CONVFLOW_REQUIRE_GPU=1 to make them fail instead.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"

nvrtc_dir=.deps/nvrtc/nvidia/cu13/lib
if [ ! -e "$nvrtc_dir/libnvrtc.so.13" ]; then
    echo "test.sh: fetching NVRTC (nvidia-cuda-nvrtc 13.0.x wheel)" >&2
    rm -rf .deps/wheels .deps/nvrtc
    python3 -m pip download -q --no-deps --only-binary=:all: --dest .deps/wheels \
        --platform manylinux_2_12_x86_64 --python-version 3 "nvidia-cuda-nvrtc==13.0.*"
    python3 -m zipfile -e .deps/wheels/nvidia_cuda_nvrtc-*.whl .deps/nvrtc
    rm -rf .deps/wheels
fi
export LD_LIBRARY_PATH="$PWD/$nvrtc_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export CONVFLOW_REQUIRE_NVRTC=1 CONVFLOW_REQUIRE_FFMPEG=1
set -o pipefail

# Style: clippy with warnings as errors, and no source line over 100 columns.
cargo clippy --release --locked --all-targets -- -D warnings
python3 - <<'PY'
import pathlib, sys
files = sorted(p for root in ("src", "tests", "examples") for p in pathlib.Path(root).glob("**/*.rs"))
long = [f"{p}:{i}: {len(l)} columns" for p in files
        for i, l in enumerate(p.read_text(encoding="utf-8").split("\n"), 1) if len(l) > 100]
if long:
    sys.exit("lines over 100 columns:\n" + "\n".join(long))
PY

log=$(mktemp)
trap 'rm -f "$log"' EXIT
cargo test --release --locked --all-targets 2>&1 | tee "$log"
# One closing line over every test binary.
awk '/^test result:/ { p += $4; f += $6; s += $8 } END { printf "all tests: %d passed, %d failed, %d skipped\n", p, f, s }' "$log"
