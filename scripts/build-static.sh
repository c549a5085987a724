#!/usr/bin/env bash
# Builds convflow with video support and a minimal FFmpeg 5.1 linked statically, for hosts
# that have the NVIDIA driver but no FFmpeg libraries (the GPU machine). The binary needs only
# glibc (checked with readelf at the end); CUDA is still loaded at run time.
#
#   bash scripts/build-static.sh            # -> target/release/convflow (static FFmpeg + x264)
#
# FFmpeg comes from Debian's own source package (the same 5.1 the normal build links as shared
# libraries), configured with just the codecs, containers and parsers convflow uses. It is built
# once into .deps/ffmpeg-static (about 3 minutes on 2 cores); later runs reuse it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
prefix=${FFMPEG_STATIC_PREFIX:-$root/.deps/ffmpeg-static}
sudo=""
[ "$(id -u)" = 0 ] || sudo=sudo

need=()
for p in dpkg-dev nasm pkg-config clang libclang-dev libx264-dev zlib1g-dev build-essential; do
    dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}"
fi

# What convflow needs: its containers; decoders for 8-bit and 10/12-bit video (H.264 High 10,
# HEVC Main 10/12, VP9 profile 2, ProRes, DNxHR, FFV1); x264 (8 and 10-bit) and FFV1 to encode;
# parsers and bitstream filters so that copied audio and subtitle streams keep their timestamps
# and fit the output container (ADTS AAC into mp4); and the common audio decoders, which
# convflow never runs on the samples but FFmpeg's stream probing needs: without them an AAC
# stream in MPEG-TS has no sample rate (its parser leaves that to the decoder) and no muxer
# takes it, so the copy would lose it (the Opus decoder needs libswresample, so it is built too).
config=(
    --enable-static --disable-shared --enable-pic
    --disable-programs --disable-doc --disable-everything --disable-autodetect
    --enable-pthreads --enable-zlib --enable-gpl --enable-libx264
    --enable-avcodec --enable-avformat --enable-swscale --enable-avutil
    --disable-avdevice --disable-avfilter --disable-postproc --enable-swresample
    --enable-protocol=file,pipe
    --enable-demuxer=mov,matroska,avi,mpegts,mxf,h264,hevc,m4v,mpegvideo,ivf,yuv4mpegpipe,rawvideo,image2
    --enable-muxer=mp4,mov,matroska,avi,mpegts,h264,yuv4mpegpipe,rawvideo,nut
    --enable-decoder=h264,hevc,mpeg4,mpeg2video,mpeg1video,vp8,vp9,prores,dnxhd,ffv1,rawvideo,mjpeg,png,wrapped_avframe,huffyuv,utvideo
    --enable-decoder=aac,aac_latm,ac3,eac3,mp1,mp2,mp3,flac,vorbis,opus,dca,truehd,mlp,alac
    --enable-encoder=libx264,ffv1,rawvideo,mpeg4,wrapped_avframe,mjpeg,huffyuv
    --enable-parser=h264,hevc,mpeg4video,mpegvideo,vp8,vp9,mjpeg,png,aac,ac3,opus,flac,mpegaudio,dca,dvbsub,dvd_nav
    --enable-bsf=h264_mp4toannexb,hevc_mp4toannexb,vp9_superframe,vp9_superframe_split,aac_adtstoasc,extract_extradata,null
)
# A prefix built with other options is rebuilt.
if [ -f "$prefix/lib/libavcodec.a" ] && [ "$(cat "$prefix/.config" 2>/dev/null)" != "${config[*]}" ]; then
    echo "FFmpeg options changed: rebuilding $prefix"
    rm -rf "$prefix"
fi
if [ ! -f "$prefix/lib/libavcodec.a" ]; then
    # A private source list, so the machine's own apt configuration is left alone.
    . /etc/os-release
    src_list=/etc/apt/sources.list.d/convflow-deb-src.list
    if ! apt-cache showsrc ffmpeg >/dev/null 2>&1 || [ -z "$(apt-cache showsrc ffmpeg 2>/dev/null)" ]; then
        case "$ID" in
        debian)
            printf 'deb-src http://deb.debian.org/debian %s main\ndeb-src http://deb.debian.org/debian %s-updates main\ndeb-src http://deb.debian.org/debian-security %s-security main\n' \
                "$VERSION_CODENAME" "$VERSION_CODENAME" "$VERSION_CODENAME" | $sudo tee "$src_list" >/dev/null ;;
        ubuntu)
            printf 'deb-src http://archive.ubuntu.com/ubuntu %s main universe\ndeb-src http://archive.ubuntu.com/ubuntu %s-updates main universe\n' \
                "$VERSION_CODENAME" "$VERSION_CODENAME" | $sudo tee "$src_list" >/dev/null ;;
        *) echo "build-static.sh: unsupported distribution '$ID'" >&2; exit 1 ;;
        esac
        $sudo apt-get update -qq
    fi
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    (cd "$work" && apt-get source -qq ffmpeg >/dev/null)
    src=$(find "$work" -maxdepth 1 -type d -name 'ffmpeg-*' | head -1)
    echo "building $(basename "$src") into $prefix"
    cd "$src"
    ./configure --prefix="$prefix" "${config[@]}" \
        >"$work/configure.log" || { tail -30 "$work/configure.log"; exit 1; }
    make -j"$(nproc)" >"$work/make.log" 2>&1 || { tail -40 "$work/make.log"; exit 1; }
    make install >/dev/null
    echo "${config[*]}" >"$prefix/.config"
    # pkg-config links a library statically only when its .a is in a -L directory outside /usr.
    multiarch=$(gcc -print-multiarch)
    cp "/usr/lib/$multiarch/libx264.a" "/usr/lib/$multiarch/libz.a" "$prefix/lib/"
    cd "$root"
    # ffmpeg-sys-next's build script does not watch the .a files.
    cargo clean --release -p ffmpeg-sys-next >/dev/null 2>&1 || true
fi

cd "$root"
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
cargo build --release --locked --features video-static
bin=target/release/convflow
if readelf -d "$bin" | grep -E 'NEEDED.*(libav|libsw|libx264|libz\.)' ; then
    echo "build-static.sh: $bin still needs shared FFmpeg/x264/zlib libraries (above)" >&2
    exit 1
fi
# The copied streams survive: short MPEG-TS clips with AAC, Opus and AC-3 audio (made by the
# ffmpeg CLI, where there is one with that encoder) keep their audio streams through a filter run.
if command -v ffmpeg >/dev/null && command -v ffprobe >/dev/null; then
    t=$(mktemp -d)
    # Removed on any exit, with the FFmpeg source tree where this run built one.
    trap 'rm -rf "$t" ${work:+"$work"}' EXIT
    fail() { echo "build-static.sh: $bin $1" >&2; exit 1; }
    checked=() skipped=()
    for enc in aac:aac libopus:opus ac3:ac3; do
        codec=${enc#*:}
        if ! ffmpeg -nostdin -y -v error -f lavfi -i testsrc2=size=64x36:rate=25 \
            -f lavfi -i sine=sample_rate=48000 -t 1 -c:v libx264 -c:a "${enc%%:*}" -shortest \
            "$t/in.ts" 2>/dev/null; then
            skipped+=("$codec")
            continue
        fi
        "$bin" filter "$t/in.ts" -o "$t/out.ts" -k box:3 --backend cpu-seq -q ||
            fail "failed on an MPEG-TS clip with $codec audio"
        audio=$(ffprobe -v error -select_streams a -show_entries stream=codec_name -of csv=p=0 \
            "$t/out.ts") || fail "wrote an unreadable MPEG-TS file"
        grep -qx "$codec" <<<"$audio" || fail "lost the $codec audio of an MPEG-TS clip"
        checked+=("$codec")
        rm -f "$t/in.ts" "$t/out.ts"
    done
    echo "copied audio kept in MPEG-TS: ${checked[*]:-none checked}${skipped:+ (no ffmpeg encoder for: ${skipped[*]})}"
fi
echo "built $bin with static FFmpeg (needs: $(readelf -d "$bin" | sed -n 's/.*NEEDED.*\[\(.*\)\]/\1/p' | tr '\n' ' '))"
