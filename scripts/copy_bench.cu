// Development tool (not part of the product build): what per-frame host<->device copies can
// sustain, both directions at once, for one frame size, under four ways of issuing them. It
// tells the pipeline's small-frame numbers apart from the link: if "queued" reaches the bound and
// "sync" does not, the gap is host round trips between copies, not the bus.
//   sync     one thread per direction: copy, wait for it, copy the next (one in flight)
//   queued   the same thread keeps DEPTH copies in flight on its one stream
//   streams  DEPTH copies in flight, alternating between DEPTH streams
//   batch4   four frames per copy call, one in flight
//   batchNq  N frames per copy call (N = 2, 4, 8), DEPTH calls in flight on one stream
//   apiNq    N frames apart in memory (4 KiB between them) in one cudaMemcpyBatchAsync call,
//            DEPTH calls in flight
//   pitchNq  N frames, back to back on the host, 4 KiB apart on the device, in one
//            cudaMemcpy2DAsync (a frame a row), DEPTH calls in flight
//   mapped   no DMA: a kernel moves each frame through mapped page-locked memory (16-byte
//            words, every SM), DEPTH frames in flight
// Pinned host memory; each line: mode, bytes, frames/s (the slower direction), ratio to the
// duplex bound measured here with 256 MiB copies. COPY_BENCH_WC=1 makes the upload source
// write-combined, as the pipeline's upload pool is.
//   nvcc -O2 -o /tmp/copy_bench scripts/copy_bench.cu && /tmp/copy_bench 2073600 6220800
#include <cuda_runtime.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#define CK(x) do { cudaError_t err_ = (x); if (err_ != cudaSuccess) { \
    fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(err_)); exit(1); } } while (0)

static const int DEPTH = 2;

// One frame moved by the SMs: `n` 16-byte words from `src` to `dst` (one of them mapped host
// memory).
__global__ void move_words(const uint4 *__restrict__ src, uint4 *__restrict__ dst, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        dst[i] = src[i];
}

// Copies `frames` frames of `bytes` in one direction; returns seconds.
static double pump(bool up, size_t bytes, int frames, const char *mode, char *host, char *dev) {
    std::string m(mode);
    bool api = m.rfind("api", 0) == 0, pitch = m.rfind("pitch", 0) == 0;
    bool batch = m.rfind("batch", 0) == 0, queued_batch = (batch || api || pitch) && m.back() == 'q';
    bool mapped = m == "mapped";
    int per = batch ? m[5] - '0' : api ? m[3] - '0' : pitch ? m[5] - '0' : 1;
    size_t gap = api || pitch ? 4096 : 0;
    int depth = m == "sync" ? 1 : (batch && !queued_batch ? 1 : DEPTH);
    int nstreams = m == "streams" ? DEPTH : 1;
    int sms = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    std::vector<cudaStream_t> st(nstreams);
    for (auto &s : st) CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    std::vector<cudaEvent_t> ev(depth);
    for (auto &e : ev) CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0, call = 0; i < frames; i += per, call++) {
        int slot = call % depth;
        if (call >= depth) CK(cudaEventSynchronize(ev[slot]));
        size_t off = (size_t)(call % (2 * DEPTH)) * (bytes + gap) * per;
        cudaStream_t s = st[call % nstreams];
        if (api) {
            const void *src[8];
            void *dst[8];
            size_t sizes[8];
            for (int f = 0; f < per; f++) {
                size_t o = off + f * (bytes + gap);
                src[f] = up ? (const void *)(host + o) : (const void *)(dev + o);
                dst[f] = up ? (void *)(dev + o) : (void *)(host + o);
                sizes[f] = bytes;
            }
            cudaMemcpyAttributes attr = {};
            attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
            size_t idx = 0;
            CK(cudaMemcpyBatchAsync(dst, src, sizes, per, &attr, &idx, 1, s));
        } else if (pitch) {
            size_t hp = bytes, dp = bytes + gap;
            if (up) CK(cudaMemcpy2DAsync(dev + off, dp, host + off, hp, bytes, per,
                                         cudaMemcpyHostToDevice, s));
            else CK(cudaMemcpy2DAsync(host + off, hp, dev + off, dp, bytes, per,
                                      cudaMemcpyDeviceToHost, s));
        } else if (mapped) {
            const char *src = up ? host + off : dev + off;
            char *dst = up ? dev + off : host + off;
            move_words<<<sms * 4, 256, 0, s>>>((const uint4 *)src, (uint4 *)dst, bytes / 16);
            CK(cudaGetLastError());
        } else if (up) {
            CK(cudaMemcpyAsync(dev + off, host + off, bytes * per, cudaMemcpyHostToDevice, s));
        } else {
            CK(cudaMemcpyAsync(host + off, dev + off, bytes * per, cudaMemcpyDeviceToHost, s));
        }
        CK(cudaEventRecord(ev[slot], s));
    }
    for (auto &s : st) CK(cudaStreamSynchronize(s));
    double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (auto &s : st) CK(cudaStreamDestroy(s));
    for (auto &e : ev) CK(cudaEventDestroy(e));
    return t;
}

int main(int argc, char **argv) {
    size_t big = 256u << 20;
    char *h[2], *d[2];
    for (int i = 0; i < 2; i++) {
        const char *wc = getenv("COPY_BENCH_WC");
        bool combined = i == 0 && wc && wc[0] == '1';
        CK(cudaHostAlloc(&h[i], big, combined ? cudaHostAllocWriteCombined : cudaHostAllocDefault));
        CK(cudaMalloc(&d[i], big));
    }
    double best = 0;
    for (int r = 0; r < 5; r++) {
        double tu = 0, td = 0;
        std::thread a([&] { tu = pump(true, big, 1, "sync", h[0], d[0]); });
        std::thread b([&] { td = pump(false, big, 1, "sync", h[1], d[1]); });
        a.join(); b.join();
        double rate = 2.0 * big / (tu > td ? tu : td);
        if (rate > best) best = rate;
    }
    printf("duplex bound %.1f GB/s\n", best / 1e9);
    printf("mode,bytes,fps,of_bound\n");
    const char *modes[] = {"sync",    "queued",  "streams", "batch4",
                           "batch2q", "batch4q", "batch8q", "api2q",
                           "api4q",   "pitch2q", "pitch4q", "mapped"};
    for (int a = 1; a < argc; a++) {
        size_t bytes = strtoull(argv[a], 0, 10);
        int frames = (int)(4e9 / bytes) / 8 * 8;
        for (auto mode : modes) {
            std::vector<double> fps;
            for (int r = 0; r < 3; r++) {
                double tu = 0, td = 0;
                std::thread x([&] { tu = pump(true, bytes, frames, mode, h[0], d[0]); });
                std::thread y([&] { td = pump(false, bytes, frames, mode, h[1], d[1]); });
                x.join(); y.join();
                fps.push_back(frames / (tu > td ? tu : td));
            }
            std::sort(fps.begin(), fps.end());
            printf("%s,%zu,%.0f,%.3f\n", mode, bytes, fps[1], fps[1] * 2.0 * bytes / best);
        }
    }
}
