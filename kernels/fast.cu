// convflow's own kernel family ("fast"), specialized at NVRTC compile time.
//
// Defines supplied by the host (src/backend/cuda/registry.rs): KW, KH (kernel size), AX, AY
// (anchor), CH (interleaved channels), BORDER, SB (bytes per stored sample: 1, or 2 for 16-bit
// words), PX (output samples per thread along a row, a
// multiple of 4 and of CH), PY (output rows per thread), KY_UNROLL (unroll factor of the
// kernel-row loop of fast_full when PY is 1), SEPARABLE (1: build fast_sep, whose weights are
// the column factor then the row factor; 0: fast_full, row-major weights), STREAM (1: build
// fast_stream instead, the shared-memory-free kernel for small kernels, with ROWS output rows
// per thread). Weights live in __constant__ memory and are
// indexed with compile-time offsets, so they become FFMA constant operands.
//
// Both kernels stage the block's input as f32 in shared memory (row stride `ts`, chosen by the
// host as a multiple of 4 for float4 reads with room for the last thread's over-read), then each thread keeps the row segment it needs in registers and computes
// PX (x PY) outputs: register blocking. The per-sample tap order is the contract's order.
#include "common.cuh"

#if SB == 1
typedef u8 sample_t;
#else
typedef u16 sample_t;
#endif
#define SPW (4 / SB)                      // samples per aligned 4-byte word
#define SMASK ((1u << (8 * SB)) - 1)       // one stored sample of a word
// Stored sample t of word v, as its value.
#define WORD_SAMPLE(p, v, t) ((((v) >> (8 * SB * (t))) & SMASK) >> storage_shift<sample_t>(p))

#define SEG (PX + (KW - 1) * CH)          // samples one thread reads from a tile row
#define SEG4 ((SEG + 3) & ~3)
#define SEG_IN_REGS (SEG4 <= CONVFLOW_FAST_MAX_SEG)

#if SEPARABLE
__constant__ float c_w[KH + KW];
#else
__constant__ float c_w[KH * KW];
#endif

__device__ __forceinline__ int floor_div(int a, int b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

// Fills th rows x ts samples of f32: tile sample (r, j) is the value of image sample s0 + j of
// row y0 + r, mapped by the border rule per pixel (zero border and padding columns are 0).
__device__ __forceinline__ void load_tile(const PlaneParams& p, float* tile, int tw, int ts, int th, int s0, int y0) {
    const int n = p.width * CH;
    const int tid = threadIdx.y * blockDim.x + threadIdx.x, nthreads = blockDim.x * blockDim.y;
    const bool interior = y0 >= 0 && y0 + th <= p.height && s0 >= 0 && s0 + tw <= n;
    if (interior && (p.src_stride & 3) == 0 && (p.src & 3) == 0) {
        // Aligned 4-byte loads from a0 = s0 rounded down to a whole word (SPW samples); the
        // last word of the last row may end up to 3 bytes past it, inside the host's
        // CONVFLOW_DEVICE_SLACK.
        const int a0 = s0 & ~(SPW - 1), shift = s0 - a0, nw = (shift + tw + SPW - 1) / SPW;
        const u8* base = (const u8*)row_of<sample_t>(p.src, y0, p.src_stride) + (size_t)a0 * SB;
        // Rows over threadIdx.y, words over threadIdx.x; unrolled so that several independent
        // loads are in flight before the first is used.
#pragma unroll 4
        for (int r = threadIdx.y; r < th; r += blockDim.y) {
            const unsigned* row = (const unsigned*)(base + (size_t)r * p.src_stride);
            float* trow = tile + r * ts;
            for (int wi = threadIdx.x; wi < nw; wi += blockDim.x) {
                const unsigned v = __ldg(row + wi);
                const int j = SPW * wi - shift;
                if (j >= 0 && j + SPW - 1 < tw) {
#pragma unroll
                    for (int t = 0; t < SPW; ++t) trow[j + t] = (float)WORD_SAMPLE(p, v, t);
                } else {
#pragma unroll
                    for (int t = 0; t < SPW; ++t)
                        if (j + t >= 0 && j + t < ts) trow[j + t] = j + t < tw ? (float)WORD_SAMPLE(p, v, t) : 0.0f;
                }
            }
        }
        // Padding columns past the last word (at most 7 per row).
        const int pad0 = SPW * nw - shift, padn = ts - pad0;
        for (int i = tid; i < th * padn; i += nthreads) {
            const int r = i / padn;
            tile[r * ts + pad0 + (i - r * padn)] = 0.0f;
        }
        return;
    }
    if (interior) {
        for (int i = tid; i < ts * th; i += nthreads) {
            int r = i / ts, j = i - r * ts;
            tile[i] = j < tw ? (float)value(p, row_of<sample_t>(p.src, y0 + r, p.src_stride)[s0 + j]) : 0.0f;
        }
        return;
    }
    for (int i = tid; i < ts * th; i += nthreads) {
        int r = i / ts, j = i - r * ts;
        float v = 0.0f;
        if (j < tw) {
            int s = s0 + j;
            int px = floor_div(s, CH);
            int c = s - px * CH;
            int sy = map_index<BORDER>(y0 + r, p.height), sx = map_index<BORDER>(px, p.width);
            if (sy >= 0 && sx >= 0)
                v = (float)value(p, row_of<sample_t>(p.src, sy, p.src_stride)[(size_t)sx * CH + c]);
        }
        tile[i] = v;
    }
}

// N consecutive floats of shared memory (16-byte aligned, N a multiple of 4) into registers.
template <int N>
__device__ __forceinline__ void load_segment(const float* t, float v[N]) {
#pragma unroll
    for (int j = 0; j < N; j += 4) {
        const float4 q = *(const float4*)(t + j);
        v[j] = q.x;
        v[j + 1] = q.y;
        v[j + 2] = q.z;
        v[j + 3] = q.w;
    }
}

// One row segment (SEG samples from `t`) times the horizontal taps w[0..KW) into acc[PX].
__device__ __forceinline__ void row_taps(const float* __restrict__ t, const float* w, float acc[PX]) {
#if SEG_IN_REGS
    float v[SEG4];
    load_segment<SEG4>(t, v);
#pragma unroll
    for (int kx = 0; kx < KW; ++kx) {
        const float wv = w[kx];
#pragma unroll
        for (int i = 0; i < PX; ++i) acc[i] = fmaf(wv, v[i + kx * CH], acc[i]);
    }
#else
#pragma unroll 4
    for (int kx = 0; kx < KW; ++kx) {
        const float wv = w[kx];
#pragma unroll
        for (int i = 0; i < PX; ++i) acc[i] = fmaf(wv, t[i + kx * CH], acc[i]);
    }
#endif
}

// Writes PX output samples starting at sample e of row y (4-byte stores when aligned). e is a
// pixel boundary (PX is a multiple of CH), so sample i is channel i % CH: a constant.
__device__ __forceinline__ void store_samples(const PlaneParams& p, int e, int y, const float acc[PX]) {
    const int n = p.width * CH;
    const sample_t* srow = row_of<sample_t>(p.src, y, p.src_stride);
    sample_t* drow = row_of_mut<sample_t>(p.dst, y, p.dst_stride);
    const bool whole = e + PX <= n;
    const bool all = p.mask == (1 << CH) - 1;
    unsigned out[PX];  // stored words of the samples
#pragma unroll
    for (int i = 0; i < PX; ++i) {
        out[i] = finish_value<sample_t>(acc[i], p) << storage_shift<sample_t>(p);
        if (!all && !filtered(p, i % CH)) out[i] = (whole || e + i < n) ? srow[e + i] : 0;
    }
    if (whole && ((unsigned long long)(drow + e) & 3) == 0) {
#pragma unroll
        for (int i = 0; i < PX; i += SPW) {
            unsigned w = 0;
#pragma unroll
            for (int t = 0; t < SPW; ++t) w |= out[i + t] << (8 * SB * t);
            *(unsigned int*)(drow + e + i) = w;
        }
    } else {
        for (int i = 0; i < PX && e + i < n; ++i) drow[e + i] = (sample_t)out[i];
    }
}

#if !SEPARABLE && !STREAM
// Full kernel: block = blockDim.x threads x PX samples wide, blockDim.y x PY rows high. With
// PY > 1 (small kernels: KY_UNROLL covers every row) each tile row segment loaded into
// registers serves all PY output rows that read it; row r feeds output row py with kernel row
// ky = r - py, so every output still sees its rows in increasing ky (contract order).
extern "C" __global__ void fast_full(PlaneParams p, int ts) {
    extern __shared__ float tile[];
    const int bw = blockDim.x * PX;
    const int tw = bw + (KW - 1) * CH, rows = blockDim.y * PY, th = rows + KH - 1;
    const int e0 = blockIdx.x * bw, y0 = blockIdx.y * rows;
    load_tile(p, tile, tw, ts, th, e0 - AX * CH, y0 - AY);
    __syncthreads();
    const int ex = threadIdx.x * PX, ybase = threadIdx.y * PY;
    if (y0 + ybase >= p.height || e0 + ex >= p.width * CH) return;
#if PY == 1
    float acc[PX];
#pragma unroll
    for (int i = 0; i < PX; ++i) acc[i] = 0.0f;
#pragma unroll KY_UNROLL
    for (int ky = 0; ky < KH; ++ky) row_taps(tile + (ybase + ky) * ts + ex, c_w + ky * KW, acc);
    store_samples(p, e0 + ex, y0 + ybase, acc);
#else
    float acc[PY][PX];
#pragma unroll
    for (int py = 0; py < PY; ++py)
#pragma unroll
        for (int i = 0; i < PX; ++i) acc[py][i] = 0.0f;
#pragma unroll
    for (int r = 0; r < PY + KH - 1; ++r) {
        const float* t = tile + (ybase + r) * ts + ex;
        float v[SEG4];
        load_segment<SEG4>(t, v);
#pragma unroll
        for (int py = 0; py < PY; ++py) {
            const int ky = r - py;
            if (ky >= 0 && ky < KH) {
#pragma unroll
                for (int kx = 0; kx < KW; ++kx)
#pragma unroll
                    for (int i = 0; i < PX; ++i) acc[py][i] = fmaf(c_w[ky * KW + kx], v[i + kx * CH], acc[py][i]);
            }
        }
    }
#pragma unroll
    for (int py = 0; py < PY; ++py)
        if (y0 + ybase + py < p.height) store_samples(p, e0 + ex, y0 + ybase + py, acc[py]);
#endif
}

#endif  // !SEPARABLE && !STREAM

#if SEPARABLE && !STREAM
// Separable, fused: horizontal results for blockDim.y*PY + KH - 1 rows go to shared memory
// after the tile; each thread then runs the vertical pass for PY rows x PX samples.
extern "C" __global__ void fast_sep(PlaneParams p, int ts) {
    extern __shared__ float smem[];
    const int bw = blockDim.x * PX;
    const int tw = bw + (KW - 1) * CH;
    const int rows = blockDim.y * PY, th = rows + KH - 1;
    float* tile = smem;
    float* hs = smem + ts * th;  // th x bw
    const int e0 = blockIdx.x * bw, y0 = blockIdx.y * rows;
    load_tile(p, tile, tw, ts, th, e0 - AX * CH, y0 - AY);
    __syncthreads();
    const int ex = threadIdx.x * PX;
    const float* roww = c_w + KH;
    for (int r = threadIdx.y; r < th; r += blockDim.y) {
        float acc[PX];
#pragma unroll
        for (int i = 0; i < PX; ++i) acc[i] = 0.0f;
        row_taps(tile + r * ts + ex, roww, acc);
#pragma unroll
        for (int i = 0; i < PX; i += 4) *(float4*)(hs + r * bw + ex + i) = make_float4(acc[i], acc[i + 1], acc[i + 2], acc[i + 3]);
    }
    __syncthreads();
    const int e = e0 + ex, ybase = threadIdx.y * PY;
    if (e >= p.width * CH || y0 + ybase >= p.height) return;
    float acc[PY][PX];
#pragma unroll
    for (int py = 0; py < PY; ++py)
#pragma unroll
        for (int i = 0; i < PX; ++i) acc[py][i] = 0.0f;
#pragma unroll
    for (int r = 0; r < PY + KH - 1; ++r) {
        float v[PX];
        load_segment<PX>(hs + (ybase + r) * bw + ex, v);
#pragma unroll
        for (int py = 0; py < PY; ++py) {
            const int ky = r - py;  // rows arrive in increasing ky for every output: contract order
            if (ky >= 0 && ky < KH) {
#pragma unroll
                for (int i = 0; i < PX; ++i) acc[py][i] = fmaf(c_w[ky], v[i], acc[py][i]);
            }
        }
    }
#pragma unroll
    for (int py = 0; py < PY; ++py)
        if (y0 + ybase + py < p.height) store_samples(p, e, y0 + ybase + py, acc[py]);
}
#endif  // SEPARABLE && !STREAM

#if STREAM
// Streaming kernel for small kernels: no shared memory and no barriers. Each thread owns PX
// consecutive samples of ROWS consecutive output rows and walks down the image, reading each
// input row segment straight from global memory (aligned 4-byte loads; neighbours' halos hit
// L1) into a ring of the last KH rows kept in registers: raw samples (full kernel) or
// horizontal sums (separable). Ring slots are compile-time indices: the row loop is unrolled
// by KH, so input row t always lands in slot t % KH.
// (e - AX*CH) mod SPW for e a multiple of 4 samples: where a thread's first sample sits in its
// first aligned word.
#define SHIFT ((SPW - (AX * CH) % SPW) % SPW)
#define NW ((SHIFT + SEG + SPW - 1) / SPW)

// SEG samples of image row y starting at sample s (border rule applied) as floats (values).
__device__ __forceinline__ void load_row(const PlaneParams& p, int y, int s, bool fast_x, float v[SEG]) {
    const int sy = map_index<BORDER>(y, p.height);
    if (sy < 0) {
#pragma unroll
        for (int j = 0; j < SEG; ++j) v[j] = 0.0f;
        return;
    }
    const sample_t* row = row_of<sample_t>(p.src, sy, p.src_stride);
    if (fast_x) {
        const unsigned* w = (const unsigned*)(row + s - SHIFT);
        unsigned words[NW];
#pragma unroll
        for (int k = 0; k < NW; ++k) words[k] = __ldg(w + k);
#pragma unroll
        for (int j = 0; j < SEG; ++j) v[j] = (float)WORD_SAMPLE(p, words[(j + SHIFT) / SPW], (j + SHIFT) % SPW);
    } else {
#pragma unroll
        for (int j = 0; j < SEG; ++j) {
            const int px = floor_div(s + j, CH);
            const int sx = map_index<BORDER>(px, p.width);
            v[j] = sx < 0 ? 0.0f : (float)value(p, row[(size_t)sx * CH + (s + j - px * CH)]);
        }
    }
}

extern "C" __global__ void fast_stream(PlaneParams p) {
    const int n = p.width * CH;
    const int e = (blockIdx.x * blockDim.x + threadIdx.x) * PX;
    if (e >= n) return;
    const int y0 = blockIdx.y * ROWS;
    const int s = e - AX * CH;
    const bool fast_x = s - SHIFT >= 0 && s + SEG <= n && (p.src_stride & 3) == 0 && (p.src & 3ull) == 0;
#if SEPARABLE
    float ring[KH][PX];
#else
    float ring[KH][SEG];
#endif
    const int last = min(ROWS, p.height - y0) + KH - 1;  // input rows this thread reads
    for (int t0 = 0; t0 < last; t0 += KH) {
#pragma unroll
        for (int j = 0; j < KH; ++j) {
            const int t = t0 + j;
            if (t >= last) return;
            const int iy = y0 - AY + t;
#if SEPARABLE
            {
                float v[SEG];
                load_row(p, iy, s, fast_x, v);
#pragma unroll
                for (int i = 0; i < PX; ++i) {
                    float h = 0.0f;
#pragma unroll
                    for (int kx = 0; kx < KW; ++kx) h = fmaf(c_w[KH + kx], v[i + kx * CH], h);
                    ring[j][i] = h;
                }
            }
#else
            load_row(p, iy, s, fast_x, ring[j]);
#endif
            if (t >= KH - 1) {
                float acc[PX];
#pragma unroll
                for (int i = 0; i < PX; ++i) acc[i] = 0.0f;
#pragma unroll
                for (int ky = 0; ky < KH; ++ky) {
                    const int slot = (j + 1 + ky) % KH;  // oldest row first: contract order
#if SEPARABLE
#pragma unroll
                    for (int i = 0; i < PX; ++i) acc[i] = fmaf(c_w[ky], ring[slot][i], acc[i]);
#else
#pragma unroll
                    for (int kx = 0; kx < KW; ++kx)
#pragma unroll
                        for (int i = 0; i < PX; ++i) acc[i] = fmaf(c_w[ky * KW + kx], ring[slot][i + kx * CH], acc[i]);
#endif
                }
                store_samples(p, e, y0 + t - (KH - 1), acc);
            }
        }
    }
}
#endif  // STREAM
