// NPP's general 2D filter (nppiFilterBorder32f, f32 weights, replicate border) timed the way
// `convflow bench kernels` times its kernels: CUDA events around each launch, warm-up, median
// of many runs with min and max. Built and run on the GPU host by scripts/gpu-run.sh (npp):
//   nvcc -O2 -o npp_bench scripts/npp_bench.cu -lnppif -lnppc && ./npp_bench 3840 2160 50
// Prints CSV: library,format,k,width,height,runs,median_us,min_us,max_us. Rows `npp` are the
// full k x k filter; rows `npp-rowcol` the separable pair nppiFilterRowBorder32f +
// nppiFilterColumnBorder32f through a sample-typed intermediate (NPP rounds between the passes,
// so it is not the same arithmetic as convflow's f32 separable path: timing reference only).
// Medians of an even count are the mean of the two middle runs.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
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

// One filter call on a width x height frame of `ch` channels of `bytes`-byte samples.
static NppStatus run(int bytes, int ch, const void* src, int sstep, void* dst, int dstep, NppiSize size,
                     const float* k, int kn, NppStreamContext ctx) {
    NppiPoint off{0, 0}, anchor{kn / 2, kn / 2};
    NppiSize ks{kn, kn};
    if (bytes == 1 && ch == 1)
        return nppiFilterBorder32f_8u_C1R_Ctx((const Npp8u*)src, sstep, size, off, (Npp8u*)dst, dstep, size, k,
                                              ks, anchor, NPP_BORDER_REPLICATE, ctx);
    if (bytes == 1 && ch == 3)
        return nppiFilterBorder32f_8u_C3R_Ctx((const Npp8u*)src, sstep, size, off, (Npp8u*)dst, dstep, size, k,
                                              ks, anchor, NPP_BORDER_REPLICATE, ctx);
    if (bytes == 2 && ch == 1)
        return nppiFilterBorder32f_16u_C1R_Ctx((const Npp16u*)src, sstep, size, off, (Npp16u*)dst, dstep, size,
                                               k, ks, anchor, NPP_BORDER_REPLICATE, ctx);
    return nppiFilterBorder32f_16u_C3R_Ctx((const Npp16u*)src, sstep, size, off, (Npp16u*)dst, dstep, size, k,
                                           ks, anchor, NPP_BORDER_REPLICATE, ctx);
}

// The separable pair: row pass into `tmp`, column pass into dst (same types as the frame).
static NppStatus run_rowcol(int bytes, int ch, const void* src, int step, void* tmp, void* dst, NppiSize size,
                            const float* k, int kn, NppStreamContext ctx) {
    const NppiPoint off{0, 0};
    NppStatus st;
#define ROWCOL(T, SFX)                                                                                        \
    st = nppiFilterRowBorder32f_##SFX##_Ctx((const T*)src, step, size, off, (T*)tmp, step, size, k, kn, kn / 2, \
                                            NPP_BORDER_REPLICATE, ctx);                                        \
    if (st != NPP_SUCCESS) return st;                                                                          \
    return nppiFilterColumnBorder32f_##SFX##_Ctx((const T*)tmp, step, size, off, (T*)dst, step, size, k, kn,    \
                                                 kn / 2, NPP_BORDER_REPLICATE, ctx);
    if (bytes == 1 && ch == 1) { ROWCOL(Npp8u, 8u_C1R) }
    if (bytes == 1 && ch == 3) { ROWCOL(Npp8u, 8u_C3R) }
    if (bytes == 2 && ch == 1) { ROWCOL(Npp16u, 16u_C1R) }
    ROWCOL(Npp16u, 16u_C3R)
#undef ROWCOL
}

static double median(const std::vector<float>& v) {
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * ((double)v[n / 2 - 1] + v[n / 2]);
}

int main(int argc, char** argv) {
    const int w = argc > 1 ? atoi(argv[1]) : 3840, h = argc > 2 ? atoi(argv[2]) : 2160;
    const int runs = argc > 3 ? atoi(argv[3]) : 50;
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    NppStreamContext ctx = context(s);
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    printf("library,format,k,width,height,runs,median_us,min_us,max_us\n");
    struct Fmt {
        const char* name;
        int bytes, ch;
    } fmts[] = {{"gray", 1, 1}, {"rgb", 1, 3}, {"gray16", 2, 1}, {"rgb48", 2, 3}};
    for (const Fmt& f : fmts) {
        const size_t step = (size_t)w * f.ch * f.bytes;
        void *src, *dst, *tmp;
        CK(cudaMalloc(&src, step * h));
        CK(cudaMalloc(&dst, step * h));
        CK(cudaMalloc(&tmp, step * h));
        std::vector<unsigned char> host(step * h);
        for (size_t i = 0; i < host.size(); ++i) host[i] = (unsigned char)(i * 2654435761u >> 24);
        CK(cudaMemcpy(src, host.data(), host.size(), cudaMemcpyHostToDevice));
        for (int kn : {3, 5, 7, 9, 15, 25}) {
            for (int sep = 0; sep < 2; ++sep) {
                // Full: a box of kn x kn; separable: the row and column factors of a box.
                std::vector<float> kh(sep ? kn : kn * kn, sep ? 1.0f / kn : 1.0f / (kn * kn));
                float* k;
                CK(cudaMalloc(&k, kh.size() * sizeof(float)));
                CK(cudaMemcpy(k, kh.data(), kh.size() * sizeof(float), cudaMemcpyHostToDevice));
                std::vector<float> us;
                for (int r = -3; r < runs; ++r) {
                    CK(cudaEventRecord(a, s));
                    NppStatus st = sep ? run_rowcol(f.bytes, f.ch, src, (int)step, tmp, dst, NppiSize{w, h}, k, kn, ctx)
                                       : run(f.bytes, f.ch, src, (int)step, dst, (int)step, NppiSize{w, h}, k, kn, ctx);
                    CK(cudaEventRecord(b, s));
                    CK(cudaEventSynchronize(b));
                    if (st != NPP_SUCCESS) {
                        fprintf(stderr, "NPP error %d (%s k=%d%s)\n", (int)st, f.name, kn, sep ? " row+col" : "");
                        return 1;
                    }
                    float ms = 0;
                    CK(cudaEventElapsedTime(&ms, a, b));
                    if (r >= 0) us.push_back(ms * 1000.0f);
                }
                std::sort(us.begin(), us.end());
                printf("%s,%s,%d,%d,%d,%d,%.1f,%.1f,%.1f\n", sep ? "npp-rowcol" : "npp", f.name, kn, w, h, runs,
                       median(us), us.front(), us.back());
                CK(cudaFree(k));
            }
        }
        CK(cudaFree(src));
        CK(cudaFree(dst));
        CK(cudaFree(tmp));
    }
    return 0;
}
