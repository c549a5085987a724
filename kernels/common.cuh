// Shared by every convflow kernel: the parameter block, the border rule and the output rule.
// These mirror src/border.rs and filter::finish in Rust exactly; change them together.
// Constants shared with the host (border ids, limits, the PlaneParams checks) are not written
// here: src/backend/cuda/abi.rs generates them into a prelude prepended to every source.
#pragma once

#ifndef CONVFLOW_FOR_BORDERS
#error "compile through convflow's registry: the ABI prelude (src/backend/cuda/abi.rs) is missing"
#endif

typedef unsigned char u8;
typedef unsigned short u16;

// One plane to filter. Pointers are device addresses; strides are in bytes. Layout matches
// `PlaneParams` in src/backend/cuda/abi.rs (#[repr(C)]), checked below. Samples are u8, or u16
// (little-endian words) for deeper formats: the kernel's entry point says which; a sample's
// value is its word shifted right by `shift` (MSB-aligned formats such as P010), and outputs
// saturate at `maxval` (2^bits - 1 of the format).
struct PlaneParams {
    unsigned long long src;
    unsigned long long dst;
    int width;       // pixels
    int height;      // rows
    int src_stride;  // bytes
    int dst_stride;  // bytes
    int channels;    // interleaved samples per pixel
    int mask;        // bit c set: channel c is filtered, else copied
    int kw, kh;      // kernel size
    int ax, ay;      // anchor (kw/2, kh/2)
    int abs_out;     // --abs
    float offset;    // added to every sum
    int maxval;      // largest sample value: 255, 1023, 65535, ...
    int shift;       // value = stored word >> shift
};
static_assert(sizeof(PlaneParams) == CONVFLOW_PLANE_PARAMS_SIZE, "PlaneParams size differs from Rust's");

// Writes the byte offset of every PlaneParams field, in declaration order, to out[0..16): the
// GPU tests compare them with Rust's #[repr(C)] layout (abi::PLANE_PARAMS_FIELDS), as NVRTC
// has no offsetof for a compile-time check.
extern "C" __global__ void convflow_plane_params_layout(long long* out) {
    PlaneParams p;
    const char* b = (const char*)&p;
    int i = 0;
#define CONVFLOW_OFF(f) out[i++] = (const char*)&p.f - b;
    CONVFLOW_OFF(src) CONVFLOW_OFF(dst) CONVFLOW_OFF(width) CONVFLOW_OFF(height) CONVFLOW_OFF(src_stride)
    CONVFLOW_OFF(dst_stride) CONVFLOW_OFF(channels) CONVFLOW_OFF(mask) CONVFLOW_OFF(kw) CONVFLOW_OFF(kh)
    CONVFLOW_OFF(ax) CONVFLOW_OFF(ay) CONVFLOW_OFF(abs_out) CONVFLOW_OFF(offset) CONVFLOW_OFF(maxval)
    CONVFLOW_OFF(shift)
#undef CONVFLOW_OFF
}

// Kernels may read whole aligned 4-byte words that end up to 3 bytes past the last row, and
// aligned 16-byte loads and copies (fast.cu's load_tile, fast_sep.cuh's raw_rows) that end up to 15 bytes past
// it; the host allocates CONVFLOW_DEVICE_SLACK bytes after every frame for that.
static_assert(CONVFLOW_DEVICE_SLACK >= 16, "device frames need 16 bytes of slack for 16-byte reads");

// Maps coordinate i on an axis of length n to 0..n-1, or -1 for the constant zero.
// Reflect-101 has period 2(n-1) (n = 1 maps everything to 0); wrap has period n.
template <int B>
__device__ __forceinline__ int map_index(int i, int n) {
    if ((unsigned)i < (unsigned)n) return i;
    if (B == BORDER_CLAMP) return i < 0 ? 0 : n - 1;
    if (B == BORDER_ZERO) return -1;
    if (B == BORDER_REFLECT) {
        if (n == 1) return 0;
        int period = 2 * (n - 1);
        int m = i % period;
        if (m < 0) m += period;
        return m < n ? m : period - m;
    }
    int m = i % n;  // BORDER_WRAP
    return m < 0 ? m + n : m;
}

// Output rule: v = acc + offset; |v| if abs; round half to even; saturate to 0..maxval.
// fmaxf(NaN, 0) is 0, as Rust's f32::max, so the conversion below is always in range. Returns
// the value (not yet shifted into its storage).
// 8-bit samples are never shifted and saturate at 255: constants, so the 8-bit kernels compile
// as if depth did not exist.
template <typename T>
__device__ __forceinline__ unsigned finish_value(float acc, const PlaneParams& p) {
    float v = __fadd_rn(acc, p.offset);
    if (p.abs_out) v = fabsf(v);
    v = fminf(fmaxf(rintf(v), 0.0f), sizeof(T) == 1 ? 255.0f : (float)p.maxval);
    return (unsigned)(int)v;
}

// Where a value sits in its stored word.
template <typename T>
__device__ __forceinline__ int storage_shift(const PlaneParams& p) {
    return sizeof(T) == 1 ? 0 : p.shift;
}

// The output rule, stored as a sample of type T.
template <typename T>
__device__ __forceinline__ T finish(float acc, const PlaneParams& p) {
    return (T)(finish_value<T>(acc, p) << storage_shift<T>(p));
}

// A stored sample's value.
template <typename T>
__device__ __forceinline__ unsigned value(const PlaneParams& p, T raw) {
    return (unsigned)raw >> storage_shift<T>(p);
}

// Row y of a plane of T samples at device address base, rows `stride` bytes apart.
template <typename T>
__device__ __forceinline__ const T* row_of(unsigned long long base, int y, int stride) {
    return (const T*)((const u8*)base + (size_t)y * stride);
}
template <typename T>
__device__ __forceinline__ T* row_of_mut(unsigned long long base, int y, int stride) {
    return (T*)((u8*)base + (size_t)y * stride);
}

__device__ __forceinline__ bool filtered(const PlaneParams& p, int c) { return (p.mask >> c) & 1; }

// Stages the input tile of a block in shared memory as sample values of type T: tw x th pixels
// (all channels) whose top-left is image pixel (x0, y0), mapped by the border rule, loaded by
// all threads of the block in as many passes as needed; zero-border taps are stored as 0. No
// barrier inside.
template <int B, typename T>
__device__ __forceinline__ void stage_tile(const PlaneParams& p, T* tile, int tw, int th, int x0, int y0) {
    const int ch = p.channels;
    const int nthreads = blockDim.x * blockDim.y;
    for (int i = threadIdx.y * blockDim.x + threadIdx.x; i < tw * th; i += nthreads) {
        int ty = i / tw, tx = i - ty * tw;
        int sy = map_index<B>(y0 + ty, p.height), sx = map_index<B>(x0 + tx, p.width);
        for (int c = 0; c < ch; ++c)
            tile[i * ch + c] =
                (sy < 0 || sx < 0) ? 0 : (T)value(p, row_of<T>(p.src, sy, p.src_stride)[(size_t)sx * ch + c]);
    }
}

// CONVFLOW_FOR_BORDERS(M) (from the prelude) expands M(name, BORDER_ID) for every border, to
// declare `extern "C"` entry points NAME_clamp, NAME_zero, …, and NAME_u16_clamp, … for 16-bit
// samples: Rust builds these names in `abi::entry_name`.
