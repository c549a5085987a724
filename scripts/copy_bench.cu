// Development tool (not part of the product build): what per-frame host<->device copies can
// sustain, both directions at once, for one frame size, under four ways of issuing them. It
// tells the pipeline's small-frame numbers apart from the link: if "queued" reaches the bound and
// "sync" does not, the gap is host round trips between copies, not the bus.
//   sync     one thread per direction: copy, wait for it, copy the next (one in flight)
//   queued   the same thread keeps DEPTH copies in flight on its one stream
//   streams  DEPTH copies in flight, alternating between DEPTH streams
//   batch4   four frames per copy call, one in flight
// Pinned host memory; each line: mode, bytes, frames/s (the slower direction), ratio to the
// duplex bound measured here with 256 MiB copies. COPY_BENCH_WC=1 makes the upload source
// write-combined, as the pipeline's upload pool is.
//   nvcc -O2 -o /tmp/copy_bench scripts/copy_bench.cu && /tmp/copy_bench 2073600 6220800
#include <cuda_runtime.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <thread>
#include <vector>

#define CK(x) do { cudaError_t err_ = (x); if (err_ != cudaSuccess) { \
    fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(err_)); exit(1); } } while (0)

static const int DEPTH = 2;

// Copies `frames` frames of `bytes` in one direction; returns seconds.
static double pump(bool up, size_t bytes, int frames, const char *mode, char *host, char *dev) {
    bool batch = mode[0] == 'b';
    int per = batch ? 4 : 1, depth = mode[0] == 's' && mode[1] == 'y' ? 1 : (batch ? 1 : DEPTH);
    int nstreams = mode[0] == 's' && mode[1] == 't' ? DEPTH : 1;
    std::vector<cudaStream_t> st(nstreams);
    for (auto &s : st) CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    std::vector<cudaEvent_t> ev(depth);
    for (auto &e : ev) CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0, call = 0; i < frames; i += per, call++) {
        int slot = call % depth;
        if (call >= depth) CK(cudaEventSynchronize(ev[slot]));
        size_t off = (size_t)(call % (2 * DEPTH)) * bytes * per;
        cudaStream_t s = st[call % nstreams];
        if (up) CK(cudaMemcpyAsync(dev + off, host + off, bytes * per, cudaMemcpyHostToDevice, s));
        else CK(cudaMemcpyAsync(host + off, dev + off, bytes * per, cudaMemcpyDeviceToHost, s));
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
    const char *modes[] = {"sync", "queued", "streams", "batch4"};
    for (int a = 1; a < argc; a++) {
        size_t bytes = strtoull(argv[a], 0, 10);
        int frames = (int)(4e9 / bytes) / 4 * 4;
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
