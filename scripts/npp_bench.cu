// NPP's general 2D filter (nppiFilterBorder32f, f32 weights, replicate border) timed the way
// `convflow bench kernels` times its kernels (src/backend/cuda/timing.rs): warm-up; each run
// queues a batch of 10 calls (1 once a call takes over a millisecond) between two CUDA events
// behind a stream hold (one thread spinning until the host, once the batch is queued, writes a
// word of mapped host memory), so the batch runs back to back on the device whatever the host's
// launch cost; each call of a batch works on the next of several copies of the frame, which
// together hold twice the L2 cache, so no call reads what the call before left in the cache;
// the mean call of a run is one sample, and the median of many runs is printed with min and
// max. A 5th argument `paced` times one call per event pair on one frame without the hold (the
// method before: the host's launch cost shows where a call is shorter than it). Built and run
// on the GPU host by scripts/gpu-run.sh (npp):
//   nvcc -O2 -o npp_bench scripts/npp_bench.cu -lnppif -lnppc && ./npp_bench 3840 2160 50 rgb,nv12
// Prints CSV: library,format,k,width,height,runs,median_us,min_us,max_us,clock (`held`;
// `host-paced` where a batch's hold timed out, the call having waited for the device; `paced`
// with the 5th argument). Rows `npp` are the
// full k x k filter; rows `npp-rowcol` the separable pair nppiFilterRowBorder32f +
// nppiFilterColumnBorder32f through a sample-typed intermediate (NPP rounds between the passes,
// so it is not the same arithmetic as convflow's f32 separable path: timing reference only).
// Formats: gray, rgb, rgba, gray16, rgb48, rgba64 (the 8u/16u C1R, C3R and AC4R functions:
// alpha kept, as convflow's default `--alpha keep`), and yuv420p, yuv420p10 and nv12 as one
// call per plane timed together (NV12's chroma through the C2R full filter; NPP has no
// two-channel row or column filter, so NV12 has no separable row).
// Medians of an even count are the mean of the two middle runs.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <cuda_runtime.h>
#include <npp.h>

#define CK(x)                                                                        \
    do {                                                                             \
        cudaError_t e_ = (x);                                                        \
        if (e_ != cudaSuccess) {                                                     \
            fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
            exit(1);                                                                 \
        }                                                                            \
    } while (0)

static NppStreamContext context(cudaStream_t s) {
    NppStreamContext c{};
    int dev = 0;
    CK(cudaGetDevice(&dev));
    cudaDeviceProp p{};
    CK(cudaGetDeviceProperties(&p, dev));
    c.hStream = s;
    c.nCudaDeviceId = dev;
    c.nMultiProcessorCount = p.multiProcessorCount;
    c.nMaxThreadsPerMultiProcessor = p.maxThreadsPerMultiProcessor;
    c.nMaxThreadsPerBlock = p.maxThreadsPerBlock;
    c.nSharedMemPerBlock = p.sharedMemPerBlock;
    c.nCudaDevAttrComputeCapabilityMajor = p.major;
    c.nCudaDevAttrComputeCapabilityMinor = p.minor;
    CK(cudaStreamGetFlags(s, &c.nStreamFlags));
    return c;
}

// One plane of a format: its size as a divisor of the frame's, and its channels.
struct Plane {
    int wdiv, hdiv, ch;
};

// A format as convflow's `bench kernels` names it, laid out plane by plane the way convflow
// stores it. `keep_alpha`: the 4th channel passes through (convflow's `--alpha keep`, NPP's
// AC4R). NV12's interleaved chroma has NPP's two-channel full filter but no two-channel row or
// column filter, so its separable row is left out.
struct Fmt {
    const char* name;
    int bytes;
    std::vector<Plane> planes;
    bool keep_alpha;
};

// One filter call on a w x h plane of `ch` channels of `bytes`-byte samples; NPP_NOT_SUPPORTED_MODE_ERROR
// where NPP has no such function.
static NppStatus run(int bytes, int ch, bool keep_alpha, const void* src, int sstep, void* dst, int dstep,
                     NppiSize size, const float* k, int kn, NppStreamContext ctx) {
    NppiPoint off{0, 0}, anchor{kn / 2, kn / 2};
    NppiSize ks{kn, kn};
#define FULL(T, SFX)                                                                                   \
    return nppiFilterBorder32f_##SFX##_Ctx((const T*)src, sstep, size, off, (T*)dst, dstep, size, k, ks, \
                                           anchor, NPP_BORDER_REPLICATE, ctx);
    if (bytes == 1) {
        if (ch == 1) { FULL(Npp8u, 8u_C1R) }
        if (ch == 2) { FULL(Npp8u, 8u_C2R) }
        if (ch == 3) { FULL(Npp8u, 8u_C3R) }
        if (keep_alpha) { FULL(Npp8u, 8u_AC4R) }
        FULL(Npp8u, 8u_C4R)
    }
    if (ch == 1) { FULL(Npp16u, 16u_C1R) }
    if (ch == 3) { FULL(Npp16u, 16u_C3R) }
    if (ch == 4 && keep_alpha) { FULL(Npp16u, 16u_AC4R) }
    if (ch == 4) { FULL(Npp16u, 16u_C4R) }
#undef FULL
    return NPP_NOT_SUPPORTED_MODE_ERROR;
}

// The separable pair: row pass into `tmp`, column pass into dst (same types as the plane).
static NppStatus run_rowcol(int bytes, int ch, bool keep_alpha, const void* src, int step, void* tmp, void* dst,
                            NppiSize size, const float* k, int kn, NppStreamContext ctx) {
    const NppiPoint off{0, 0};
    NppStatus st;
#define ROWCOL(T, SFX)                                                                                        \
    st = nppiFilterRowBorder32f_##SFX##_Ctx((const T*)src, step, size, off, (T*)tmp, step, size, k, kn, kn / 2, \
                                            NPP_BORDER_REPLICATE, ctx);                                        \
    if (st != NPP_SUCCESS) return st;                                                                          \
    return nppiFilterColumnBorder32f_##SFX##_Ctx((const T*)tmp, step, size, off, (T*)dst, step, size, k, kn,    \
                                                 kn / 2, NPP_BORDER_REPLICATE, ctx);
    if (bytes == 1) {
        if (ch == 1) { ROWCOL(Npp8u, 8u_C1R) }
        if (ch == 3) { ROWCOL(Npp8u, 8u_C3R) }
        if (ch == 4 && keep_alpha) { ROWCOL(Npp8u, 8u_AC4R) }
        if (ch == 4) { ROWCOL(Npp8u, 8u_C4R) }
        return NPP_NOT_SUPPORTED_MODE_ERROR;
    }
    if (ch == 1) { ROWCOL(Npp16u, 16u_C1R) }
    if (ch == 3) { ROWCOL(Npp16u, 16u_C3R) }
    if (ch == 4 && keep_alpha) { ROWCOL(Npp16u, 16u_AC4R) }
    if (ch == 4) { ROWCOL(Npp16u, 16u_C4R) }
#undef ROWCOL
    return NPP_NOT_SUPPORTED_MODE_ERROR;
}

static double median(const std::vector<float>& v) {
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * ((double)v[n / 2 - 1] + v[n / 2]);
}

// The stream hold, convflow_hold: the benchmark's own kernel.
#include "../kernels/hold.cu"

// How calls are timed: held batches over rotating copies, or one call per event pair (`paced`).
// The gate is mapped host memory: the host releases the hold by writing it, with no stream in
// between (a second stream could share the timed one's hardware queue and wait behind it).
struct Clock {
    bool paced;
    volatile unsigned* gate;  // host address
    unsigned* gate_dev;       // its device address
    unsigned ticket;
    int sets;
};

// Times `call(set)` (which enqueues on `s`, working on copy `set` of the frame) like bench
// kernels: 3 warm-up runs (one call each, not held), then `runs` timed ones. Prints one CSV row;
// false if a call failed.
template <class F>
static bool timed(const char* library, const char* fmt, int kn, int w, int h, int runs, cudaStream_t s,
                  cudaEvent_t a, cudaEvent_t b, Clock& clk, F call) {
    std::vector<float> us;
    int batch = clk.paced ? 1 : 10, next = 0;
    bool host_paced = false;
    for (int r = -3; r < runs; ++r) {
        const bool held = !clk.paced && r >= 0;
        const int n = r < 0 ? 1 : batch;
        if (held) {
            convflow_hold<<<1, 1, 0, s>>>(clk.gate_dev, ++clk.ticket, 50000000ull);
            CK(cudaGetLastError());
        }
        CK(cudaEventRecord(a, s));
        NppStatus st = NPP_SUCCESS;
        for (int i = 0; i < n && st == NPP_SUCCESS; ++i) st = call(clk.paced ? 0 : next++ % clk.sets);
        CK(cudaEventRecord(b, s));
        if (held) clk.gate[0] = clk.ticket;
        CK(cudaEventSynchronize(b));
        if (st != NPP_SUCCESS) {
            fprintf(stderr, "NPP error %d (%s %s k=%d)\n", (int)st, library, fmt, kn);
            return false;
        }
        if (held && clk.gate[1] == clk.ticket) host_paced = true;
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, a, b));
        if (r >= 0) us.push_back(ms * 1000.0f / n);
        if (ms / n > 1.0f) batch = 1;
    }
    std::sort(us.begin(), us.end());
    printf("%s,%s,%d,%d,%d,%d,%.1f,%.1f,%.1f,%s\n", library, fmt, kn, w, h, runs, median(us), us.front(),
           us.back(), clk.paced ? "paced" : host_paced ? "host-paced" : "held");
    return true;
}

// Copies n16 16-byte words: each thread a few, the loads of a thread issued before its stores.
__device__ __forceinline__ void copy_words(const uint4* __restrict__ src, uint4* __restrict__ dst, size_t n16) {
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + 3 * stride < n16; i += 4 * stride) {
        const uint4 a = src[i], b = src[i + stride], c = src[i + 2 * stride], d = src[i + 3 * stride];
        dst[i] = a;
        dst[i + stride] = b;
        dst[i + 2 * stride] = c;
        dst[i + 3 * stride] = d;
    }
    for (; i < n16; i += stride) dst[i] = src[i];
}

__global__ void copy16(const uint4* __restrict__ src, uint4* __restrict__ dst, size_t n16) { copy_words(src, dst, n16); }

// copy16 queued as a programmatic dependent of the kernel before it on the stream (as convflow
// queues `fast` on compute capability 9.0 and later): its blocks may start as that kernel's
// last blocks exit, and each first waits until that kernel has completed and its writes are
// visible, as fast.cu's fast_follow does.
__global__ void copy16_dependent(const uint4* __restrict__ src, uint4* __restrict__ dst, size_t n16) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
    copy_words(src, dst, n16);
}

// Usage: npp_bench [WIDTH HEIGHT RUNS [FORMAT,FORMAT,... [paced]]]. Rows `copy-*` (k 0) copy the
// whole frame device to device, each timed like the filters: what reading and writing the
// frame's bytes once takes at this size, launch and ramp included, the practical memory floor
// of a filter. `copy-memcpy` is a cudaMemcpyAsync and `copy-kernel` a 16-byte-word copy kernel,
// both queued plainly as NPP's calls are; `copy-kernel-dependent` is that kernel queued as a
// programmatic dependent (copy16_dependent; compute capability 9.0 and later, else no row), as
// convflow's `fast` launches are.
int main(int argc, char** argv) {
    const int w = argc > 1 ? atoi(argv[1]) : 3840, h = argc > 2 ? atoi(argv[2]) : 2160;
    const int runs = argc > 3 ? atoi(argv[3]) : 50;
    const std::string wanted = argc > 4 ? argv[4] : "gray,rgb,rgba,gray16,rgb48,rgba64,yuv420p,yuv420p10,nv12";
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    NppStreamContext ctx = context(s);
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    Clock clk{argc > 5 && std::string(argv[5]) == "paced", nullptr, nullptr, 0, 1};
    unsigned* gate = nullptr;
    CK(cudaHostAlloc(&gate, 2 * sizeof(unsigned), cudaHostAllocMapped));
    gate[0] = gate[1] = 0;
    clk.gate = gate;
    CK(cudaHostGetDevicePointer(&clk.gate_dev, gate, 0));
    int l2 = 0;
    CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
    printf("library,format,k,width,height,runs,median_us,min_us,max_us,clock\n");
    const std::vector<Plane> yuv420{{1, 1, 1}, {2, 2, 1}, {2, 2, 1}};
    const Fmt fmts[] = {
        {"gray", 1, {{1, 1, 1}}, false},   {"rgb", 1, {{1, 1, 3}}, false},
        {"rgba", 1, {{1, 1, 4}}, true},    {"gray16", 2, {{1, 1, 1}}, false},
        {"rgb48", 2, {{1, 1, 3}}, false},  {"rgba64", 2, {{1, 1, 4}}, true},
        {"yuv420p", 1, yuv420, false},     {"yuv420p10", 2, yuv420, false},
        {"nv12", 1, {{1, 1, 1}, {2, 2, 2}}, false},
    };
    for (const Fmt& f : fmts) {
        if (("," + wanted + ",").find("," + std::string(f.name) + ",") == std::string::npos) continue;
        struct Lay {
            NppiSize size;
            int ch, step;
            size_t off;
        };
        std::vector<Lay> lay;
        size_t total = 0;
        for (const Plane& p : f.planes) {
            const NppiSize sz{(w + p.wdiv - 1) / p.wdiv, (h + p.hdiv - 1) / p.hdiv};
            const int step = sz.width * p.ch * f.bytes;
            lay.push_back({sz, p.ch, step, total});
            total += (size_t)step * sz.height;
        }
        // Copies of the frame (source, destination and the row/column pair's intermediate) that
        // together hold twice the L2 cache (at most 256, a quarter of the free memory; as
        // src/backend/cuda/timing.rs).
        size_t free_mem = 0, total_mem = 0;
        CK(cudaMemGetInfo(&free_mem, &total_mem));
        clk.sets = clk.paced ? 1
                             : (int)std::max<size_t>(1, std::min<size_t>({(2 * (size_t)l2 + 2 * total - 1) / (2 * total),
                                                                           256, free_mem / 4 / (3 * total)}));
        std::vector<unsigned char*> srcs(clk.sets), dsts(clk.sets), tmps(clk.sets);
        std::vector<unsigned char> host(total);
        for (size_t i = 0; i < host.size(); ++i) host[i] = (unsigned char)(i * 2654435761u >> 24);
        for (int i = 0; i < clk.sets; ++i) {
            CK(cudaMalloc(&srcs[i], total));
            CK(cudaMalloc(&dsts[i], total));
            CK(cudaMalloc(&tmps[i], total));
            CK(cudaMemcpy(srcs[i], host.data(), host.size(), cudaMemcpyHostToDevice));
        }
        if (!timed("copy-memcpy", f.name, 0, w, h, runs, s, a, b, clk, [&](int i) {
                return cudaMemcpyAsync(dsts[i], srcs[i], total, cudaMemcpyDeviceToDevice, s) == cudaSuccess
                           ? NPP_SUCCESS
                           : NPP_ERROR;
            }))
            return 1;
        // Frame sizes here are multiples of 16 bytes; a tail would be left uncopied (timing only).
        const size_t n16 = total / 16;
        const int blocks = (int)std::min<size_t>((n16 + 255) / 256, (size_t)ctx.nMultiProcessorCount * 16);
        if (!timed("copy-kernel", f.name, 0, w, h, runs, s, a, b, clk, [&](int i) {
                copy16<<<blocks, 256, 0, s>>>((const uint4*)srcs[i], (uint4*)dsts[i], n16);
                return cudaGetLastError() == cudaSuccess ? NPP_SUCCESS : NPP_ERROR;
            }))
            return 1;
        // (Paced, a call per event pair, no launch has a kernel right before it to follow, so
        // this row then times plain launches; held, every call but a batch's first follows one.)
        if (ctx.nCudaDevAttrComputeCapabilityMajor >= 9) {
            cudaLaunchAttribute follow[1];
            follow[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
            follow[0].val.programmaticStreamSerializationAllowed = 1;
            cudaLaunchConfig_t cfg = {};
            cfg.gridDim = dim3(blocks);
            cfg.blockDim = dim3(256);
            cfg.stream = s;
            cfg.attrs = follow;
            cfg.numAttrs = 1;
            if (!timed("copy-kernel-dependent", f.name, 0, w, h, runs, s, a, b, clk, [&](int i) {
                    return cudaLaunchKernelEx(&cfg, copy16_dependent, (const uint4*)srcs[i], (uint4*)dsts[i], n16) ==
                                   cudaSuccess
                               ? NPP_SUCCESS
                               : NPP_ERROR;
                }))
                return 1;
        }
        for (int kn : {3, 5, 7, 9, 15, 25}) {
            for (int sep = 0; sep < 2; ++sep) {
                bool supported = true;
                for (const Lay& l : lay) supported &= !(sep && l.ch == 2);
                if (!supported) continue;
                // Full: a box of kn x kn; separable: the row and column factors of a box.
                std::vector<float> kh(sep ? kn : kn * kn, sep ? 1.0f / kn : 1.0f / (kn * kn));
                float* k;
                CK(cudaMalloc(&k, kh.size() * sizeof(float)));
                CK(cudaMemcpy(k, kh.data(), kh.size() * sizeof(float), cudaMemcpyHostToDevice));
                const bool ok = timed(sep ? "npp-rowcol" : "npp", f.name, kn, w, h, runs, s, a, b, clk, [&](int i) {
                    for (const Lay& l : lay) {
                        const NppStatus st =
                            sep ? run_rowcol(f.bytes, l.ch, f.keep_alpha, srcs[i] + l.off, l.step, tmps[i] + l.off,
                                             dsts[i] + l.off, l.size, k, kn, ctx)
                                : run(f.bytes, l.ch, f.keep_alpha, srcs[i] + l.off, l.step, dsts[i] + l.off,
                                      l.step, l.size, k, kn, ctx);
                        if (st != NPP_SUCCESS) return st;
                    }
                    return NPP_SUCCESS;
                });
                CK(cudaFree(k));
                if (!ok) return 1;
            }
        }
        for (int i = 0; i < clk.sets; ++i) {
            CK(cudaFree(srcs[i]));
            CK(cudaFree(dsts[i]));
            CK(cudaFree(tmps[i]));
        }
    }
    return 0;
}
