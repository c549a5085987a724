#!/usr/bin/env bash
# The whole test suite (what CI runs): installs what is missing, then runs every test.
# GPU tests skip without a GPU; set CONVFLOW_REQUIRE_GPU=1 to make them fail instead.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"
cargo test --release --locked
