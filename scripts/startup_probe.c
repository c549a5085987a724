// Development tool (not part of the product build): what bringing up CUDA costs on this machine
// before any program of ours runs, step by step through the driver API alone (no runtime, no
// NVRTC, no FFmpeg): the floor under `convflow filter`'s `startup` line. Each line: the step,
// its milliseconds, and the milliseconds since main() began.
//   gcc -O2 -o /tmp/startup_probe scripts/startup_probe.c -I/usr/local/cuda/include -lcuda
//   /tmp/startup_probe
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

#define CK(x)                                                      \
    do {                                                           \
        CUresult r_ = (x);                                         \
        if (r_ != CUDA_SUCCESS) {                                  \
            const char* s_ = "?";                                  \
            cuGetErrorString(r_, &s_);                             \
            fprintf(stderr, "%s: %s\n", #x, s_);                   \
            exit(1);                                               \
        }                                                          \
    } while (0)

static double t0, last;
static void step(const char* what) {
    double t = now_ms();
    printf("%-34s %8.1f ms  (at %8.1f ms)\n", what, t - last, t - t0);
    last = t;
}

// The smallest module: one empty kernel.
static const char* PTX =
    ".version 8.0\n.target sm_80\n.address_size 64\n"
    ".visible .entry probe() { ret; }\n";

int main(void) {
    t0 = last = now_ms();
    CK(cuInit(0));
    step("cuInit");
    CUdevice dev;
    CK(cuDeviceGet(&dev, 0));
    char name[128];
    CK(cuDeviceGetName(name, sizeof name, dev));
    step("cuDeviceGet + name");
    CUcontext ctx;
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    step("cuDevicePrimaryCtxRetain");
    CK(cuCtxSetCurrent(ctx));
    step("cuCtxSetCurrent");
    CUstream s;
    CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    step("cuStreamCreate");
    CUdeviceptr d;
    CK(cuMemAlloc(&d, 64 << 20));
    step("cuMemAlloc 64 MiB");
    void* h;
    CK(cuMemHostAlloc(&h, 8 << 20, 0));
    step("cuMemHostAlloc 8 MiB (pinned)");
    CUmodule m;
    CK(cuModuleLoadData(&m, PTX));
    CUfunction f;
    CK(cuModuleGetFunction(&f, m, "probe"));
    step("cuModuleLoadData (JIT) + function");
    CK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL));
    CK(cuStreamSynchronize(s));
    step("first launch + synchronize");
    CK(cuMemcpyHtoDAsync(d, h, 8 << 20, s));
    CK(cuStreamSynchronize(s));
    step("first 8 MiB upload");
    printf("device: %s; total %.1f ms\n", name, now_ms() - t0);
    return 0;
}
