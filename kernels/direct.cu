// Direct (non-separable) convolution in the memory variants of the literature:
//   global           one thread per output pixel, weights in global memory
//   constant         weights in __constant__ memory
//   shared           input tile + halo staged in shared memory, weights in global memory
//   shared_constant  both
//   texture          input read through a texture object
// Every variant sums taps in row-major order with fmaf (the arithmetic contract). Each is built
// for 8-bit (T = u8) and 16-bit (T = u16) samples.
#include "common.cuh"

__constant__ float c_weights[CONVFLOW_MAX_CONST_TAPS];

template <int B, typename T>
__device__ __forceinline__ void direct_pixel(const PlaneParams& p, const float* __restrict__ w, int x, int y) {
    const T* srow = row_of<T>(p.src, y, p.src_stride);
    T* dst = row_of_mut<T>(p.dst, y, p.dst_stride) + (size_t)x * p.channels;
    for (int c = 0; c < p.channels; ++c) {
        if (!filtered(p, c)) {
            dst[c] = srow[(size_t)x * p.channels + c];
            continue;
        }
        float acc = 0.0f;
        for (int ky = 0; ky < p.kh; ++ky) {
            int sy = map_index<B>(y + ky - p.ay, p.height);
            if (sy < 0) continue;
            const T* row = row_of<T>(p.src, sy, p.src_stride);
            for (int kx = 0; kx < p.kw; ++kx) {
                int sx = map_index<B>(x + kx - p.ax, p.width);
                if (sx < 0) continue;
                acc = fmaf(w[ky * p.kw + kx], (float)value(p, row[(size_t)sx * p.channels + c]), acc);
            }
        }
        dst[c] = finish<T>(acc, p);
    }
}

template <int B, typename T>
__device__ void conv_direct(const PlaneParams& p, const float* __restrict__ w) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < p.width && y < p.height) direct_pixel<B, T>(p, w, x, y);
}

// Stages the block's input tile (blockDim + kernel - 1 in each direction, all channels, as
// sample values of type T) in shared memory, in as many passes as the halo needs. Zero-border
// taps are stored as 0.
template <int B, typename T>
__device__ void conv_tiled(const PlaneParams& p, const float* __restrict__ w) {
    extern __shared__ u8 smem_bytes[];
    T* tile = (T*)smem_bytes;
    const int ch = p.channels;
    const int tw = blockDim.x + p.kw - 1, th = blockDim.y + p.kh - 1;
    const int x0 = blockIdx.x * blockDim.x - p.ax, y0 = blockIdx.y * blockDim.y - p.ay;
    stage_tile<B, T>(p, tile, tw, th, x0, y0);
    __syncthreads();
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= p.width || y >= p.height) return;
    const T* srow = row_of<T>(p.src, y, p.src_stride);
    T* dst = row_of_mut<T>(p.dst, y, p.dst_stride) + (size_t)x * ch;
    for (int c = 0; c < ch; ++c) {
        if (!filtered(p, c)) {
            dst[c] = srow[(size_t)x * ch + c];
            continue;
        }
        float acc = 0.0f;
        for (int ky = 0; ky < p.kh; ++ky) {
            const T* trow = tile + ((threadIdx.y + ky) * tw + threadIdx.x) * ch + c;
            for (int kx = 0; kx < p.kw; ++kx) acc = fmaf(w[ky * p.kw + kx], (float)trow[kx * ch], acc);
        }
        dst[c] = finish<T>(acc, p);
    }
}

// Texture reads: one sample (8 or 16 bits) per texel, the plane seen as (width*channels) x
// height. When `hw` is set (one channel, clamp or zero border) the hardware address mode
// resolves out-of-range taps (CLAMP, or BORDER with colour 0); otherwise the border rule is
// applied in software and every fetch lands inside the plane (reflect-101 has no hardware mode,
// and wrap needs normalized coordinates).
template <int B, typename T>
__device__ void conv_texture(const PlaneParams& p, const float* __restrict__ w, cudaTextureObject_t tex, int hw) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= p.width || y >= p.height) return;
    const int ch = p.channels;
    T* dst = row_of_mut<T>(p.dst, y, p.dst_stride) + (size_t)x * ch;
    for (int c = 0; c < ch; ++c) {
        if (!filtered(p, c)) {
            dst[c] = tex2D<T>(tex, (float)(x * ch + c) + 0.5f, (float)y + 0.5f);
            continue;
        }
        float acc = 0.0f;
        for (int ky = 0; ky < p.kh; ++ky) {
            int sy = y + ky - p.ay;
            if (!hw) {
                sy = map_index<B>(sy, p.height);
                if (sy < 0) continue;
            }
            for (int kx = 0; kx < p.kw; ++kx) {
                int sx = x + kx - p.ax;
                if (!hw) {
                    sx = map_index<B>(sx, p.width);
                    if (sx < 0) continue;
                }
                float v = (float)value(p, tex2D<T>(tex, (float)(sx * ch + c) + 0.5f, (float)sy + 0.5f));
                acc = fmaf(w[ky * p.kw + kx], v, acc);
            }
        }
        dst[c] = finish<T>(acc, p);
    }
}

#define DEF_DIRECT_T(name, b, sfx, T)                                                                         \
    extern "C" __global__ void conv_global##sfx##_##name(PlaneParams p, const float* w) { conv_direct<b, T>(p, w); } \
    extern "C" __global__ void conv_constant##sfx##_##name(PlaneParams p) { conv_direct<b, T>(p, c_weights); }     \
    extern "C" __global__ void conv_shared##sfx##_##name(PlaneParams p, const float* w) { conv_tiled<b, T>(p, w); } \
    extern "C" __global__ void conv_shared_constant##sfx##_##name(PlaneParams p) { conv_tiled<b, T>(p, c_weights); } \
    extern "C" __global__ void conv_texture##sfx##_##name(PlaneParams p, const float* w, cudaTextureObject_t t, int hw) { \
        conv_texture<b, T>(p, w, t, hw);                                                                      \
    }
#define DEF_DIRECT(name, b) DEF_DIRECT_T(name, b, , u8) DEF_DIRECT_T(name, b, _u16, u16)
CONVFLOW_FOR_BORDERS(DEF_DIRECT)
