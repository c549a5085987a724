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

# The library as a library: its docs build without a warning (broken links, missing docs);
# without the `cli` feature it builds without the CLI's dependencies; the crate packages
# only what a user needs (sources, kernels, examples, licences and docs; no samples,
# results or scripts).
RUSTDOCFLAGS="-D warnings" cargo doc --locked --no-deps --lib
cargo check --locked --lib --no-default-features --features cuda
if cargo tree --locked --no-default-features --features cuda -e normal \
    | grep -E "^[^a-z]*(clap|indicatif|plotters|anyhow) "; then
    echo "test.sh: the library without the cli feature still depends on the CLI's crates" >&2
    exit 1
fi
files=$(cargo package --locked --list --allow-dirty)
for f in README.md LICENSE-MIT LICENSE-APACHE CHANGELOG.md src/lib.rs kernels/fast.cu \
    kernels/fast_words.cuh kernels/fast_sep.cuh kernels/fast_reg.cuh kernels/fast_int.cuh \
    examples/still.rs; do
    grep -qx "$f" <<<"$files" || { echo "test.sh: cargo package leaves out $f" >&2; exit 1; }
done
if grep -E "^(samples|docs|scripts|tests|target|fuzz|\.carry|\.deps)/" <<<"$files"; then
    echo "test.sh: cargo package ships files users do not need (above)" >&2
    exit 1
fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT
cargo test --release --locked --all-targets 2>&1 | tee "$log"
# Doc examples (the crate docs' runnable examples; --all-targets leaves them out).
cargo test --release --locked --doc 2>&1 | tee -a "$log"
# One closing line over every test binary.
awk '/^test result:/ { p += $4; f += $6; s += $8 } END { printf "all tests: %d passed, %d failed, %d skipped\n", p, f, s }' "$log"
