#!/usr/bin/env bash
# Installs what convflow needs to build and test on Debian/Ubuntu, skipping what is present.
# Needs root (or sudo) only when a package is missing.
set -euo pipefail

# FFmpeg: the CLI (tests make and probe clips with it) and the dev packages ffmpeg-next links
# (bindgen needs clang); x264 comes with Debian's libavcodec.
apt_packages=(build-essential pkg-config ca-certificates curl python3 python3-pip ffmpeg
    libavcodec-dev libavformat-dev libavutil-dev libswscale-dev libswresample-dev clang libclang-dev
    fonts-dejavu-core    # the benchmark charts' text
    groff-base)          # the tests format `convflow man` with groff

missing=()
for p in "${apt_packages[@]}"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
    echo "install-deps: installing ${missing[*]}" >&2
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Rust 1.89 or newer (Debian's own cargo is older): use rustup when cargo is missing or old.
need_rust() {
    command -v cargo >/dev/null 2>&1 || return 0
    local v
    v=$(rustc --version | awk '{print $2}')
    [ "$(printf '%s\n1.89.0\n' "$v" | sort -V | head -n1)" != "1.89.0" ]
}
if need_rust; then
    [ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"
fi
if need_rust; then
    echo "install-deps: installing Rust with rustup" >&2
    curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal >&2
    . "$HOME/.cargo/env"
fi
