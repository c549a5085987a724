// Separable convolution: a horizontal pass with the row factor into f32, then a vertical pass
// with the column factor (the contract's separable path).
//   separable_global  two launches through an f32 temporary in global memory
//   separable_shared  one launch: input tile in shared memory, horizontal results in shared
//                     memory (with the vertical halo), then the vertical pass
// Factors come in global memory: col (kh values) then row (kw values). Each is built for 8-bit
// (T = u8) and 16-bit (T = u16) samples.
#include "common.cuh"

// tmp[y][x*ch + c] for every row y of the plane (tight f32 rows of width*channels).
template <int B, typename T>
__device__ void sep_row(const PlaneParams& p, const float* __restrict__ row, float* __restrict__ tmp) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= p.width || y >= p.height) return;
    const int ch = p.channels;
    const T* src = row_of<T>(p.src, y, p.src_stride);
    float* out = tmp + ((size_t)y * p.width + x) * ch;
    for (int c = 0; c < ch; ++c) {
        float acc = 0.0f;
        for (int kx = 0; kx < p.kw; ++kx) {
            int sx = map_index<B>(x + kx - p.ax, p.width);
            if (sx < 0) continue;
            acc = fmaf(row[kx], (float)value(p, src[(size_t)sx * ch + c]), acc);
        }
        out[c] = acc;
    }
}

template <int B, typename T>
__device__ void sep_col(const PlaneParams& p, const float* __restrict__ col, const float* __restrict__ tmp) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= p.width || y >= p.height) return;
    const int ch = p.channels;
    T* dst = row_of_mut<T>(p.dst, y, p.dst_stride) + (size_t)x * ch;
    for (int c = 0; c < ch; ++c) {
        if (!filtered(p, c)) {
            dst[c] = row_of<T>(p.src, y, p.src_stride)[(size_t)x * ch + c];
            continue;
        }
        float acc = 0.0f;
        for (int ky = 0; ky < p.kh; ++ky) {
            int sy = map_index<B>(y + ky - p.ay, p.height);
            if (sy < 0) continue;
            acc = fmaf(col[ky], tmp[((size_t)sy * p.width + x) * ch + c], acc);
        }
        dst[c] = finish<T>(acc, p);
    }
}

// Fused: shared memory holds the f32 horizontal results for (blockDim.y + kh - 1) rows x
// blockDim.x pixels, followed by the input tile (blockDim + kernel - 1 each way) of T values.
template <int B, typename T>
__device__ void sep_fused(const PlaneParams& p, const float* __restrict__ col, const float* __restrict__ row) {
    extern __shared__ float smem[];
    const int ch = p.channels;
    const int bx = blockDim.x, by = blockDim.y;
    const int tw = bx + p.kw - 1, th = by + p.kh - 1;
    float* hsum = smem;                          // th * bx * ch floats
    T* tile = (T*)(smem + (size_t)th * bx * ch);  // tw * th * ch samples
    const int x0 = blockIdx.x * bx - p.ax, y0 = blockIdx.y * by - p.ay;
    const int tid = threadIdx.y * bx + threadIdx.x, nthreads = bx * by;
    stage_tile<B, T>(p, tile, tw, th, x0, y0);
    __syncthreads();
    // Horizontal pass over all th rows; a zero-border row is all zeros, so its sum is 0.
    for (int i = tid; i < th * bx; i += nthreads) {
        int r = i / bx, x = i - r * bx;
        const T* t = tile + ((size_t)r * tw + x) * ch;
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
    T* dst = row_of_mut<T>(p.dst, y, p.dst_stride) + (size_t)x * ch;
    for (int c = 0; c < ch; ++c) {
        if (!filtered(p, c)) {
            dst[c] = row_of<T>(p.src, y, p.src_stride)[(size_t)x * ch + c];
            continue;
        }
        float acc = 0.0f;
        for (int ky = 0; ky < p.kh; ++ky)
            acc = fmaf(col[ky], hsum[((size_t)(threadIdx.y + ky) * bx + threadIdx.x) * ch + c], acc);
        dst[c] = finish<T>(acc, p);
    }
}

#define DEF_SEP_T(name, b, sfx, T)                                                                        \
    extern "C" __global__ void sep_row##sfx##_##name(PlaneParams p, const float* f, float* tmp) {        \
        sep_row<b, T>(p, f + p.kh, tmp);                                                                  \
    }                                                                                                     \
    extern "C" __global__ void sep_col##sfx##_##name(PlaneParams p, const float* f, const float* tmp) {  \
        sep_col<b, T>(p, f, tmp);                                                                         \
    }                                                                                                     \
    extern "C" __global__ void sep_fused##sfx##_##name(PlaneParams p, const float* f) {                  \
        sep_fused<b, T>(p, f, f + p.kh);                                                                  \
    }
#define DEF_SEP(name, b) DEF_SEP_T(name, b, , u8) DEF_SEP_T(name, b, _u16, u16)
CONVFLOW_FOR_BORDERS(DEF_SEP)
