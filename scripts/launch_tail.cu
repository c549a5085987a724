// Development tool (not part of the product build): how much of a kernel's time, launched back
// to back as `convflow bench kernels` times its passes, is the launch's ramp and tail rather
// than its bytes. A 16-byte copy kernel over frames of 1080p to 8K (gray and RGB bytes), 10
// passes between two CUDA events behind a busy kernel (so all 10 are queued before the first
// starts), each pass on the next of up to 64 copies (256 MiB: no pass reads what the one before
// left in L2), the passes on 1, 2 or 4 streams in turn. Each line: frame, streams, median /
// min / max microseconds a pass over 20 batches; then a 256 MiB copy's bandwidth (the floor's).
// On one stream a pass waits for the one before to drain; on two, one pass's tail overlaps the
// next pass's ramp.
//   nvcc -O2 -arch=native -o /tmp/launch_tail scripts/launch_tail.cu && /tmp/launch_tail
#include <cuda_runtime.h>
#include <cstdio>
#include <vector>
#include <algorithm>
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e_)); return 1; } } while (0)
__global__ void busy(long long n) { long long t = clock64(); while (clock64() - t < n) {} }
__global__ void copy16(const uint4* __restrict__ s, uint4* __restrict__ d, size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) d[i] = __ldg(s + i);
}
int main() {
    size_t sizes[] = {1920 * 1080, 3840 * 2160, 3 * 3840 * 2160, 7680 * 4320, 3 * 7680 * 4320};
    const char* names[] = {"1080p gray", "4K gray", "4K rgb", "8K gray", "8K rgb"};
    cudaStream_t st[4];
    for (auto& s : st) CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaEvent_t a, b, j[4];
    CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
    for (auto& e : j) CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    size_t pool = 256u << 20;
    char *src, *dst;
    CK(cudaMalloc(&src, pool)); CK(cudaMalloc(&dst, pool));
    CK(cudaMemset(src, 1, pool)); CK(cudaMemset(dst, 0, pool));
    printf("frame,streams,median_us,min_us,max_us\n");
    for (int z = 0; z < 5; ++z) {
        size_t bytes = (sizes[z] + 255) / 256 * 256, n = bytes / 16;
        int copies = (int)std::min<size_t>(pool / bytes, 64);
        for (int ns : {1, 2, 4}) {
            std::vector<float> t;
            int c = 0;
            for (int run = 0; run < 23; ++run) {
                busy<<<1, 1, 0, st[0]>>>(2000000);
                CK(cudaEventRecord(a, st[0]));
                for (int k = 1; k < ns; ++k) CK(cudaStreamWaitEvent(st[k], a, 0));
                for (int p = 0; p < 10; ++p, c = (c + 1) % copies) {
                    cudaStream_t s = st[p % ns];
                    copy16<<<(unsigned)((n + 255) / 256), 256, 0, s>>>((const uint4*)(src + c * bytes), (uint4*)(dst + c * bytes), n);
                }
                for (int k = 1; k < ns; ++k) { CK(cudaEventRecord(j[k], st[k])); CK(cudaStreamWaitEvent(st[0], j[k], 0)); }
                CK(cudaEventRecord(b, st[0]));
                CK(cudaEventSynchronize(b));
                float ms; CK(cudaEventElapsedTime(&ms, a, b));
                if (run >= 3) t.push_back(ms * 100.0f);  // us per pass
            }
            std::sort(t.begin(), t.end());
            printf("%s,%d,%.2f,%.2f,%.2f\n", names[z], ns, t[t.size() / 2], t[0], t.back());
        }
    }
    // The floor's bandwidth: one copy of the whole pool.
    size_t n = pool / 16; std::vector<float> t;
    for (int run = 0; run < 10; ++run) {
        CK(cudaEventRecord(a, st[0]));
        copy16<<<(unsigned)((n + 255) / 256), 256, 0, st[0]>>>((const uint4*)src, (uint4*)dst, n);
        CK(cudaEventRecord(b, st[0])); CK(cudaEventSynchronize(b));
        float ms; CK(cudaEventElapsedTime(&ms, a, b)); t.push_back(ms);
    }
    std::sort(t.begin(), t.end());
    printf("256MiB copy: %.1f us, %.0f GB/s\n", t[5] * 1e3, 2.0 * pool / (t[5] * 1e-3) / 1e9);
    return 0;
}
