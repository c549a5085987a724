// Separable convolution: a horizontal pass with the row factor into f32, then a vertical pass
// with the column factor (the contract's separable path).
//   separable_global  two launches through an f32 temporary in global memory
//   separable_shared  one launch: input tile in shared memory, horizontal results in shared
//                     memory (with the vertical halo), then the vertical pass
// Factors come in global memory: col (kh values) then row (kw values).
#include "common.cuh"

// tmp[y][x*ch + c] for every row y of the plane (tight f32 rows of width*channels).
template <int B>
__device__ void sep_row(const PlaneParams& p, const float* __restrict__ row, float* __restrict__ tmp) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= p.width || y >= p.height) return;
    const int ch = p.channels;
    const u8* src = (const u8*)p.src + (size_t)y * p.src_stride;
    float* out = tmp + ((size_t)y * p.width + x) * ch;
    for (int c = 0; c < ch; ++c) {
        float acc = 0.0f;
        for (int kx = 0; kx < p.kw; ++kx) {
            int sx = map_index<B>(x + kx - p.ax, p.width);
            if (sx < 0) continue;
            acc = fmaf(row[kx], (float)src[(size_t)sx * ch + c], acc);
        }
        out[c] = acc;
    }
}

template <int B>
__device__ void sep_col(const PlaneParams& p, const float* __restrict__ col, const float* __restrict__ tmp) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= p.width || y >= p.height) return;
    const int ch = p.channels;
    u8* dst = (u8*)p.dst + (size_t)y * p.dst_stride + (size_t)x * ch;
    for (int c = 0; c < ch; ++c) {
        if (!filtered(p, c)) {
            dst[c] = ((const u8*)p.src)[(size_t)y * p.src_stride + (size_t)x * ch + c];
            continue;
        }
        float acc = 0.0f;
        for (int ky = 0; ky < p.kh; ++ky) {
            int sy = map_index<B>(y + ky - p.ay, p.height);
            if (sy < 0) continue;
            acc = fmaf(col[ky], tmp[((size_t)sy * p.width + x) * ch + c], acc);
        }
        dst[c] = finish(acc, p.offset, p.abs_out);
    }
}

// Fused: shared memory holds the u8 input tile (blockDim + kernel - 1 each way) followed by
// the f32 horizontal results for (blockDim.y + kh - 1) rows x blockDim.x pixels.
template <int B>
__device__ void sep_fused(const PlaneParams& p, const float* __restrict__ col, const float* __restrict__ row) {
    extern __shared__ float smem[];
    const int ch = p.channels;
    const int bx = blockDim.x, by = blockDim.y;
    const int tw = bx + p.kw - 1, th = by + p.kh - 1;
    float* hsum = smem;                          // th * bx * ch floats
    u8* tile = (u8*)(smem + (size_t)th * bx * ch);  // tw * th * ch bytes
    const u8* src = (const u8*)p.src;
    const int x0 = blockIdx.x * bx - p.ax, y0 = blockIdx.y * by - p.ay;
    const int tid = threadIdx.y * bx + threadIdx.x, nthreads = bx * by;
    stage_tile_u8<B>(p, tile, tw, th, x0, y0);
    __syncthreads();
    // Horizontal pass over all th rows; a zero-border row is all zeros, so its sum is 0.
    for (int i = tid; i < th * bx; i += nthreads) {
        int r = i / bx, x = i - r * bx;
        const u8* t = tile + ((size_t)r * tw + x) * ch;
        for (int c = 0; c < ch; ++c) {
            float acc = 0.0f;
            for (int kx = 0; kx < p.kw; ++kx) acc = fmaf(row[kx], (float)t[kx * ch + c], acc);
            hsum[(size_t)i * ch + c] = acc;
        }
    }
    __syncthreads();
    int x = blockIdx.x * bx + threadIdx.x;
    int y = blockIdx.y * by + threadIdx.y;
    if (x >= p.width || y >= p.height) return;
    u8* dst = (u8*)p.dst + (size_t)y * p.dst_stride + (size_t)x * ch;
    for (int c = 0; c < ch; ++c) {
        if (!filtered(p, c)) {
            dst[c] = src[(size_t)y * p.src_stride + (size_t)x * ch + c];
            continue;
        }
        float acc = 0.0f;
        for (int ky = 0; ky < p.kh; ++ky)
            acc = fmaf(col[ky], hsum[((size_t)(threadIdx.y + ky) * bx + threadIdx.x) * ch + c], acc);
        dst[c] = finish(acc, p.offset, p.abs_out);
    }
}

#define DEF_SEP(name, b)                                                                                  \
    extern "C" __global__ void sep_row_##name(PlaneParams p, const float* f, float* tmp) {               \
        sep_row<b>(p, f + p.kh, tmp);                                                                     \
    }                                                                                                     \
    extern "C" __global__ void sep_col_##name(PlaneParams p, const float* f, const float* tmp) { sep_col<b>(p, f, tmp); } \
    extern "C" __global__ void sep_fused_##name(PlaneParams p, const float* f) { sep_fused<b>(p, f, f + p.kh); }
CONVFLOW_FOR_BORDERS(DEF_SEP)
