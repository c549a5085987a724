// convflow's own kernel family ("fast"), specialized at NVRTC compile time.
//
// Defines supplied by the host (src/backend/cuda/fast.rs): KW, KH (kernel size), AX, AY
// (anchor), CH (interleaved channels), BORDER, SB (bytes per stored sample: 1, or 2 for 16-bit
// words), PX (output samples per thread along a row: a multiple of 4 and of CH for the tiled
// kernels, 16 bytes' worth for fast_reg), PY (output rows per thread), KY_UNROLL (unroll
// factor of the kernel-row loop of fast_full when PY is 1), SEPARABLE (1: weights are the
// column factor then the row factor; 0: row-major weights), REG (1: build fast_reg, the
// shared-memory-free kernel for small kernels, launched with 128-thread blocks, at least
// REG_MINB of them resident per multiprocessor; 0: the tiled fast_full / fast_sep), INT (with
// REG: build fast_int instead, the exact integer kernel for 8-bit samples, whose divisor and
// offset numerator are IDIV and IOFF; DEIL 1: fast_int deinterleaves the channels of each
// window row before its dot products, PX / CH pixels per thread). Weights live in __constant__ memory and are indexed with
// compile-time offsets, so they become FFMA constant operands (c_w; fast_int's packed signed
// bytes are c_wp; with INT and SEPARABLE, c_wp is the row factor packed as one kernel row and
// c_wc the column factor).
//
// Conversions avoid the conversion unit (I2F/F2I issue at 16 per clock per multiprocessor on
// Hopper, an eighth of FFMA): a sample becomes a float by placing its bits in the mantissa of
// 2^23 (byte_perm) and subtracting 2^23; an output is rounded half to even by adding 1.5 * 2^23
// to the saturated value, whose low mantissa bits are then the integer. Both are exact, so the
// results are the contract's (filter::finish) bit for bit.
#include "common.cuh"

#if SB == 1
typedef u8 sample_t;
#else
typedef u16 sample_t;
#endif
#define SPW (4 / SB)                      // samples per aligned 4-byte word

// Stored sample t (a constant) of the aligned word w as a float value, without I2F: its bits go
// into the low mantissa of 2^23 (0x4B000000), and 2^23 is subtracted (exact: values < 2^23).
__device__ __forceinline__ float word_value(const PlaneParams& p, unsigned w, int t) {
#if SB == 1
    return __int_as_float(__byte_perm(w, 0x4B000000u, 0x7440u + t)) - 8388608.0f;
#else
    const unsigned v = (__byte_perm(w, 0u, t ? 0x4432u : 0x4410u) >> p.shift) | 0x4B000000u;
    return __int_as_float(v) - 8388608.0f;
#endif
}

// The output rule of common.cuh's finish_value, with the result in the low mantissa bits of
// the returned word: saturating before rounding is the same as after (the bounds 0 and maxval
// are integers and fmaxf(NaN, 0) is 0), and adding 1.5 * 2^23 to a value in [0, 2^16) rounds it
// to an integer, half to even, in bits 0..21.
__device__ __forceinline__ unsigned finish_bits(float acc, const PlaneParams& p) {
    float v = __fadd_rn(acc, p.offset);
    if (p.abs_out) v = fabsf(v);
    v = fminf(fmaxf(v, 0.0f), SB == 1 ? 255.0f : (float)p.maxval);
    return __float_as_uint(__fadd_rn(v, 12582912.0f));
}

// SPW stored samples (in the low bits of s[0..SPW)) packed into one word.
__device__ __forceinline__ unsigned pack_word(const unsigned* s) {
#if SB == 1
    return __byte_perm(__byte_perm(s[0], s[1], 0x0040), __byte_perm(s[2], s[3], 0x0040), 0x5410);
#else
    return __byte_perm(s[0], s[1], 0x5410);
#endif
}

#define SEG (PX + (KW - 1) * CH)          // samples one thread reads from a tile row
#define SEG4 ((SEG + 3) & ~3)
#define SEG_IN_REGS (SEG4 <= CONVFLOW_FAST_MAX_SEG)

#if SEPARABLE
__constant__ float c_w[KH + KW];
#else
__constant__ float c_w[KH * KW];
#endif

// Input row r of a thread's window into every output row py that reads it, with kernel row
// ky = r - py: every output sees its rows in increasing ky (contract order). Separable: v holds
// the row's PX horizontal sums, weighted by the column factor; full: its SEG samples, through
// kernel row ky.
__device__ __forceinline__ void feed_rows(int r, const float* v, float acc[PY][PX]) {
#pragma unroll
    for (int py = 0; py < PY; ++py) {
        const int ky = r - py;
        if (ky >= 0 && ky < KH) {
#if SEPARABLE
#pragma unroll
            for (int i = 0; i < PX; ++i) acc[py][i] = fmaf(c_w[ky], v[i], acc[py][i]);
#else
#pragma unroll
            for (int kx = 0; kx < KW; ++kx)
#pragma unroll
                for (int i = 0; i < PX; ++i) acc[py][i] = fmaf(c_w[ky * KW + kx], v[i + kx * CH], acc[py][i]);
#endif
        }
    }
}

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
                    for (int t = 0; t < SPW; ++t) trow[j + t] = word_value(p, v, t);
                } else {
#pragma unroll
                    for (int t = 0; t < SPW; ++t)
                        if (j + t >= 0 && j + t < ts) trow[j + t] = j + t < tw ? word_value(p, v, t) : 0.0f;
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

// Writes PX output samples starting at sample e of row y (out: stored samples in the low
// bits): 16-byte stores when PX fills them and the address allows, else 4-byte stores, else
// samples. Unfiltered channels (mask) keep the source's stored sample.
__device__ __forceinline__ void store_samples(const PlaneParams& p, int e, int y, unsigned out[PX]) {
    const int n = p.width * CH;
    sample_t* drow = row_of_mut<sample_t>(p.dst, y, p.dst_stride);
    if (p.mask != (1 << CH) - 1) {
        const sample_t* srow = row_of<sample_t>(p.src, y, p.src_stride);
#pragma unroll
        for (int i = 0; i < PX; ++i)
            if (e + i < n && !filtered(p, (e + i) % CH)) out[i] = srow[e + i];
    }
    const unsigned long long a = (unsigned long long)(drow + e);
    if (e + PX <= n && (a & 3) == 0) {
        unsigned w[PX / SPW];
#pragma unroll
        for (int i = 0; i < PX / SPW; ++i) w[i] = pack_word(out + i * SPW);
#if (PX * SB) % 16 == 0
        if ((a & 15) == 0) {
#pragma unroll
            for (int i = 0; i < PX / SPW; i += 4) *(uint4*)(drow + e + i * SPW) = make_uint4(w[i], w[i + 1], w[i + 2], w[i + 3]);
            return;
        }
#endif
#pragma unroll
        for (int i = 0; i < PX / SPW; ++i) *(unsigned*)(drow + e + i * SPW) = w[i];
    } else {
        for (int i = 0; i < PX && e + i < n; ++i) drow[e + i] = (sample_t)out[i];
    }
}

// PX f32 sums through the output rule into row y from sample e.
__device__ __forceinline__ void store_acc(const PlaneParams& p, int e, int y, const float acc[PX]) {
    unsigned out[PX];
#pragma unroll
    for (int i = 0; i < PX; ++i) out[i] = finish_bits(acc[i], p) << storage_shift<sample_t>(p);
    store_samples(p, e, y, out);
}

#if !SEPARABLE && !REG
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
    store_acc(p, e0 + ex, y0 + ybase, acc);
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
        feed_rows(r, v, acc);
    }
#pragma unroll
    for (int py = 0; py < PY; ++py)
        if (y0 + ybase + py < p.height) store_acc(p, e0 + ex, y0 + ybase + py, acc[py]);
#endif
}

#endif  // !SEPARABLE && !REG

#if SEPARABLE && !REG
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
        feed_rows(r, v, acc);
    }
#pragma unroll
    for (int py = 0; py < PY; ++py)
        if (y0 + ybase + py < p.height) store_acc(p, e, y0 + ybase + py, acc[py]);
}
#endif  // SEPARABLE && !REG

#if REG
// Register kernel for small kernels: no shared memory and no barriers. Each thread owns PX
// consecutive samples (16 bytes) of PY consecutive output rows. For each of the PY + KH - 1
// input rows it reads the row segment it needs (the 16 bytes under its outputs in one load,
// the halo words beside them in 4-byte loads that neighbours' loads bring into L1), converts it
// once, and feeds every output row that uses it: row r serves output row py with kernel row
// ky = r - py, so each output still sees its rows in increasing ky (contract order). All rows'
// loads are issued before the first is used (window_words): one memory latency per thread.
#define HWL ((AX * CH + SPW - 1) / SPW)            // halo words left of the outputs
#define HWR (((KW - 1 - AX) * CH + SPW - 1) / SPW)  // and right of them
#define CW (PX / SPW)                               // words under the outputs
#define OFF (HWL * SPW - AX * CH)                   // first needed sample within the words
#define NWR (HWL + CW + HWR)                        // words per row segment
#define RIN (PY + KH - 1)                           // input rows per thread

// Feeds input row r of the thread's window (SEG values) into every output row that reads it.
__device__ __forceinline__ void reg_accumulate(int r, const float v[SEG], float acc[PY][PX]) {
#if SEPARABLE
    float h[PX];
#pragma unroll
    for (int i = 0; i < PX; ++i) {
        h[i] = 0.0f;
#pragma unroll
        for (int kx = 0; kx < KW; ++kx) h[i] = fmaf(c_w[KH + kx], v[i + kx * CH], h[i]);
    }
    feed_rows(r, h, acc);
#else
    feed_rows(r, v, acc);
#endif
}

// The words of the thread's window when its row segments lie inside the rows, for all RIN rows
// (MODE 2: the 16 bytes under the outputs in one aligned load; 1: 4-byte loads), with no branch
// between them, so that their latencies overlap; a row outside the plane is read from a row
// inside it and, for the zero border, zeroed (a zero word is the value 0).
template <int MODE>
__device__ __forceinline__ void reg_words(const PlaneParams& p, int e, int y0, unsigned words[RIN][NWR]) {
#pragma unroll
    for (int r = 0; r < RIN; ++r) {
        const int sy = map_index<BORDER>(y0 - AY + r, p.height);
        const unsigned* w = (const unsigned*)(row_of<sample_t>(p.src, max(sy, 0), p.src_stride) + e);
#pragma unroll
        for (int k = 0; k < HWL; ++k) words[r][k] = __ldg(w - HWL + k);
        if (MODE == 2) {
#pragma unroll
            for (int k = 0; k < CW; k += 4) {
                const uint4 q = __ldg((const uint4*)(w + k));
                words[r][HWL + k] = q.x;
                words[r][HWL + k + 1] = q.y;
                words[r][HWL + k + 2] = q.z;
                words[r][HWL + k + 3] = q.w;
            }
        } else {
#pragma unroll
            for (int k = 0; k < CW; ++k) words[r][HWL + k] = __ldg(w + k);
        }
#pragma unroll
        for (int k = 0; k < HWR; ++k) words[r][HWL + CW + k] = __ldg(w + CW + k);
        if (BORDER == BORDER_ZERO && sy < 0) {
#pragma unroll
            for (int k = 0; k < NWR; ++k) words[r][k] = 0;
        }
    }
}

// The same words for threads whose window crosses a row end, or on planes not 4-byte aligned:
// a word lying wholly inside the row is loaded as it is (when `aligned`), any other is built
// sample by sample through the border rule (samples of the zero border are 0, as are samples
// outside the window). A row-end thread thus builds only the words past the end one by one.
__device__ __forceinline__ void gather_words(const PlaneParams& p, int e, int y0, bool aligned, unsigned words[RIN][NWR]) {
    const int n = p.width * CH, s = e - AX * CH;
#pragma unroll
    for (int r = 0; r < RIN; ++r) {
        const int sy = map_index<BORDER>(y0 - AY + r, p.height);
        const sample_t* row = row_of<sample_t>(p.src, max(sy, 0), p.src_stride);
#pragma unroll
        for (int k = 0; k < NWR; ++k) {
            const int j0 = SPW * k - OFF;  // window sample of the word's first lane
            if (aligned && sy >= 0 && s + j0 >= 0 && s + j0 + SPW <= n) {
                words[r][k] = __ldg((const unsigned*)(row + s + j0));
                continue;
            }
            unsigned w = 0;
#pragma unroll
            for (int l = 0; l < SPW; ++l) {
                const int j = j0 + l;
                if (j >= 0 && j < SEG) {
                    const int px = floor_div(s + j, CH);
                    const int sx = map_index<BORDER>(px, p.width);
                    if (sx >= 0 && sy >= 0) w |= (unsigned)row[(size_t)sx * CH + (s + j - px * CH)] << (8 * SB * l);
                }
            }
            words[r][k] = w;
        }
    }
}

// A thread's window words, by the fastest load its position and the plane's alignment allow.
// Whole words beyond the last needed sample stay within the row's stride or the device slack
// (CONVFLOW_DEVICE_SLACK) after the plane.
__device__ __forceinline__ void window_words(const PlaneParams& p, int e, int y0, unsigned words[RIN][NWR]) {
    const int n = p.width * CH;
    const bool inside = e - AX * CH >= 0 && e + PX + (KW - 1 - AX) * CH <= n;
    const unsigned long long a = p.src | (unsigned long long)(unsigned)p.src_stride;
    if (inside && (a & 15) == 0 && (PX * SB) % 16 == 0)
        reg_words<2>(p, e, y0, words);
    else if (inside && (a & 3) == 0)
        reg_words<1>(p, e, y0, words);
    else
        gather_words(p, e, y0, (a & 3) == 0, words);
}

#if !INT

// REG_MINB blocks of 128 threads per multiprocessor at least: caps the registers so that the
// loads of enough warps are in flight.
extern "C" __global__ void __launch_bounds__(128, REG_MINB) fast_reg(PlaneParams p) {
    const int n = p.width * CH;
    const int e = (blockIdx.x * blockDim.x + threadIdx.x) * PX;
    const int y0 = (blockIdx.y * blockDim.y + threadIdx.y) * PY;
    if (e >= n || y0 >= p.height) return;
    unsigned words[RIN][NWR];
    window_words(p, e, y0, words);
    float acc[PY][PX];
#pragma unroll
    for (int py = 0; py < PY; ++py)
#pragma unroll
        for (int i = 0; i < PX; ++i) acc[py][i] = 0.0f;
#pragma unroll
    for (int r = 0; r < RIN; ++r) {
        float v[SEG];
#pragma unroll
        for (int j = 0; j < SEG; ++j) v[j] = word_value(p, words[r][(j + OFF) / SPW], (j + OFF) % SPW);
        reg_accumulate(r, v, acc);
    }
#pragma unroll
    for (int py = 0; py < PY; ++py)
        if (y0 + py < p.height) store_acc(p, e, y0 + py, acc[py]);
}
#endif  // !INT

#if INT
// The exact integer path (src/filter/exact.rs): 8-bit samples, integer weights n over the
// divisor IDIV, offset numerator IOFF; the host builds it only where filter::exact proves that
// round_half_even((sum n*s + IOFF) / IDIV) is the f32 contract's output for every input. A
// thread's windows are the register kernel's words; output i's taps in input row r are the
// bytes OFF + i + kx*CH, spread over IWIN words at most, and one __dp4a (unsigned samples times
// signed 8-bit weights, 4 taps per instruction, exact in 32 bits) consumes a word against the
// weights packed for that byte offset: c_wp[(ky * 4 + b) * IWIN + t] holds in lane l the weight
// of tap kx where 4t + l - b = kx*TSTR (0 elsewhere), b the window's offset in its first word.
// No conversion: the bytes are used as loaded (TSTR = CH), or, with DEIL, regrouped per
// channel by byte_perm first (TSTR = 1).
#if SB != 1
#error "the integer path takes 8-bit samples"
#endif
// Bytes between a kernel row's taps in the words the dot products read: CH in the plane's
// words, 1 in deinterleaved channel words.
#if DEIL
#define TSTR 1
#else
#define TSTR CH
#endif
#define IWIN ((3 + (KW - 1) * TSTR + 1 + 3) / 4)
#if SEPARABLE
// Separable integer kernels (one channel): c_wp holds the row factor packed as one kernel
// row, c_wc the column factor; each input row's horizontal sums (dp4a) are weighted by the
// column factor into every output row that reads them (exact integers: the order is free).
#if DEIL
#error "separable integer kernels take one channel"
#endif
__constant__ int c_wp[4 * IWIN];
__constant__ int c_wc[KH];
#else
__constant__ int c_wp[KH * 4 * IWIN];
#endif

__device__ __forceinline__ int dp4a_us(unsigned a, int b, int c) {
    int d;
    asm("dp4a.u32.s32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    return d;
}

#if DEIL
// Deinterleaved windows (DEIL, for 2-4 channels): with the taps of a channel CH bytes apart,
// a 5-tap row of RGB spreads over 4 words and most dp4a lanes would carry zero weights. So a
// thread owns DP whole pixels (PX = DP * CH samples), and each window row is first regrouped
// into DCW words per channel holding consecutive pixels of that channel; output pixel i of
// channel c then reads words i/4.. of its channel with the weights packed for byte offset
// i % 4 (c_wp packed as for one channel), a 5-tap row in 2 dp4a instead of 4.
#define DP (PX / CH)              // pixels per thread
#define DWP (DP + KW - 1)         // window pixels per row
#define DCW ((DWP + 3) / 4)       // words per channel and row
#if PX % CH != 0 || DP % 4 != 0
#error "DEIL threads own whole pixels, a multiple of 4"
#endif

// Word m of channel c of a window row: lane l holds the channel's sample of window pixel
// 4m + l (lanes past the window repeat its last pixel; their weights are 0). The lanes' bytes
// lie in 1-4 consecutive words of the row; every index and selector here is a compile-time
// constant once the callers' loops are unrolled, so this is 1-3 byte_perm.
__device__ __forceinline__ unsigned deil_word(const unsigned w[NWR], int c, int m) {
    int s[4];
#pragma unroll
    for (int l = 0; l < 4; ++l) s[l] = OFF + min(4 * m + l, DWP - 1) * CH + c;
    const int a = s[0] / 4, last = s[3] / 4;
    // Lanes in words a and a + 1 (selector nibbles 0-7 of that pair); the others are
    // placeholders replaced below.
    unsigned sel = 0;
#pragma unroll
    for (int l = 0; l < 4; ++l) sel |= (unsigned)(s[l] / 4 <= a + 1 ? s[l] - 4 * a : 0) << (4 * l);
    const unsigned lo = __byte_perm(w[a], w[min(a + 1, NWR - 1)], sel);
    if (last <= a + 1) return lo;
    // Lanes in words a + 2 and a + 3, merged over the placeholders (nibble 4 + l: lane l of
    // the second operand).
    unsigned hsel = 0, msel = 0;
#pragma unroll
    for (int l = 0; l < 4; ++l) {
        const bool high = s[l] / 4 >= a + 2;
        hsel |= (unsigned)(high ? s[l] - 4 * (a + 2) : 0) << (4 * l);
        msel |= (unsigned)(high ? 4 + (last == a + 2 ? s[l] - 4 * (a + 2) : l) : l) << (4 * l);
    }
    if (last == a + 2) return __byte_perm(lo, w[a + 2], msel);
    return __byte_perm(lo, __byte_perm(w[a + 2], w[a + 3], hsel), msel);
}

__device__ __forceinline__ void int_accumulate(const unsigned words[RIN][NWR], int acc[PY][PX]) {
#pragma unroll
    for (int r = 0; r < RIN; ++r) {
        unsigned cw[CH][DCW];
#pragma unroll
        for (int c = 0; c < CH; ++c)
#pragma unroll
            for (int m = 0; m < DCW; ++m) cw[c][m] = deil_word(words[r], c, m);
#pragma unroll
        for (int py = 0; py < PY; ++py) {
            const int ky = r - py;
            if (ky >= 0 && ky < KH) {
#pragma unroll
                for (int c = 0; c < CH; ++c)
#pragma unroll
                    for (int i = 0; i < DP; ++i) {
                        const int b = i % 4, q = i / 4;
#pragma unroll
                        for (int t = 0; t * 4 < b + KW; ++t)
                            acc[py][i * CH + c] = dp4a_us(cw[c][q + t], c_wp[(ky * 4 + b) * IWIN + t], acc[py][i * CH + c]);
                    }
            }
        }
    }
}
#elif SEPARABLE
__device__ __forceinline__ void int_accumulate(const unsigned words[RIN][NWR], int acc[PY][PX]) {
#pragma unroll
    for (int r = 0; r < RIN; ++r)
#pragma unroll
        for (int i = 0; i < PX; ++i) {
            const int b = (i + OFF) % 4, q = (i + OFF) / 4;
            int h = 0;
#pragma unroll
            for (int t = 0; t * 4 < b + (KW - 1) * CH + 1; ++t) h = dp4a_us(words[r][q + t], c_wp[b * IWIN + t], h);
#pragma unroll
            for (int py = 0; py < PY; ++py) {
                const int ky = r - py;
                if (ky >= 0 && ky < KH) acc[py][i] += c_wc[ky] * h;
            }
        }
}
#else
__device__ __forceinline__ void int_accumulate(const unsigned words[RIN][NWR], int acc[PY][PX]) {
#pragma unroll
    for (int r = 0; r < RIN; ++r)
#pragma unroll
        for (int py = 0; py < PY; ++py) {
            const int ky = r - py;
            if (ky >= 0 && ky < KH) {
#pragma unroll
                for (int i = 0; i < PX; ++i) {
                    const int b = (i + OFF) % 4, q = (i + OFF) / 4;
#pragma unroll
                    for (int t = 0; t * 4 < b + (KW - 1) * CH + 1; ++t)
                        acc[py][i] = dp4a_us(words[r][q + t], c_wp[(ky * 4 + b) * IWIN + t], acc[py][i]);
                }
            }
        }
}
#endif  // DEIL, SEPARABLE

// filter::IntegerForm::finish: (sum + IOFF) / IDIV, |.| with --abs, rounded half to even,
// saturated to 0..255. IDIV and IOFF are compile-time constants, and filter::exact gives forms
// only with odd or power-of-two divisors: for an odd one (2t + IDIV) / (2 IDIV) is a multiply
// and shift, and there are no ties; for 2^s, (t + 2^(s-1) - 1 + bit s of t) >> s rounds ties to
// even. Sums stay below 2^29 in magnitude (filter::exact), so nothing overflows 32 bits.
#if IDIV % 2 == 0 && (IDIV & (IDIV - 1)) != 0
#error "integer forms have odd or power-of-two divisors"
#endif
__device__ __forceinline__ unsigned finish_int(int sum, const PlaneParams& p) {
    int t = sum + IOFF;
    if (p.abs_out) t = abs(t);
    const unsigned u = (unsigned)max(t, 0);  // t <= 0 gives 0
#if IDIV == 1
    const unsigned q = u;
#elif IDIV % 2 == 0
    const unsigned q = (u + (IDIV / 2u - 1u) + ((u / IDIV) & 1u)) / IDIV;
#else
    const unsigned q = (2u * u + IDIV) / (2u * IDIV);
#endif
    return min(q, 255u);
}

extern "C" __global__ void __launch_bounds__(128, REG_MINB) fast_int(PlaneParams p) {
    const int n = p.width * CH;
    const int e = (blockIdx.x * blockDim.x + threadIdx.x) * PX;
    const int y0 = (blockIdx.y * blockDim.y + threadIdx.y) * PY;
    if (e >= n || y0 >= p.height) return;
    unsigned words[RIN][NWR];
    window_words(p, e, y0, words);
    int acc[PY][PX];
#pragma unroll
    for (int py = 0; py < PY; ++py)
#pragma unroll
        for (int i = 0; i < PX; ++i) acc[py][i] = 0;
    int_accumulate(words, acc);
#pragma unroll
    for (int py = 0; py < PY; ++py) {
        if (y0 + py >= p.height) continue;
        unsigned out[PX];
#pragma unroll
        for (int i = 0; i < PX; ++i) out[i] = finish_int(acc[py][i], p);
        store_samples(p, e, y0 + py, out);
    }
}
#endif  // INT
#endif  // REG
