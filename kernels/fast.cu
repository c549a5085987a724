// convflow's own kernel family ("fast"), specialized at NVRTC compile time.
//
// Defines supplied by the host (src/backend/cuda/fast.rs): KW, KH (kernel size), AX, AY (anchor),
// CH (interleaved channels), BORDER, SB (bytes per stored sample: 1, or 2 for 16-bit words), PX
// (output samples per thread along a row: a multiple of 4, for the tiled kernels whole pixels
// where a channel is unfiltered, and by the host's rules but fast_sep's on small RGB planes
// (sep_px); for fast_reg and fast_int 16 bytes' worth, or 8 samples on small launches, a multiple
// of 4 either way), PY (output rows per thread), KY_UNROLL (unroll factor of the kernel-row loop
// of fast_full when PY is 1), SEPARABLE (1: weights are the column factor then the row factor; 0:
// row-major weights), REG (1: build fast_reg, the shared-memory-free kernel for small kernels,
// launched with 128-thread blocks, at least REG_MINB of them resident per multiprocessor; 0: the
// tiled fast_full / fast_sep), SEPG (with SEPARABLE and not REG: fast_sep's row pass reads its
// windows from global memory, no input tile; PXH: the samples of one of its row-pass items, a
// multiple of PX; SEPA: blocks inside the plane first copy their input rows to shared memory,
// raw_rows), TILE_PAD (1: the tiled kernels' shared rows are padded, see tcol), HS_PAD
// (fast_sep's horizontal-sum rows an odd number of float4s apart, sums_row), SEPC (fast_sep's f32
// row pass one channel at a time in a loop, each 4 pixels' sums channel after channel, row_item),
// CROLL (fast_sep's column pass rolled where every output row takes the input row, column_pass),
// SEPI (with SEPG: fast_sep's row pass in exact integers, its row factor n / RDIV in c_wr; see
// row_item), INT (with REG: build fast_int instead, the exact integer kernel for 8-bit samples
// and for full plans on 16-bit ones, whose divisor and offset numerator are IDIV and IOFF), DEIL
// (1: the integer dot products of fast_int, PX / CH pixels per thread, or of fast_sep's SEPI row
// pass read each window row with its channels regrouped first, channel_word), CMASK (bit c set:
// channel c is filtered; the others, such as RGBA's alpha under --alpha keep, are neither
// computed nor converted, and take the source's stored samples), SHIFT (a sample's value is its
// stored word shifted right by this: MSB-aligned formats such as P010; 0 otherwise), CONV_UNIT
// (samples converted by the conversion unit: 16-bit ones from bit 0, bytes 0 and 3 of 8-bit
// words; word_value), ABS (--abs) and ZERO_OFFSET (the kernel's offset is 0: nothing to add;
// both for the register kernels and for fast_sep where the host says so), SEP_BX and SEP_BY
// (fast_sep's block compiled in, 0: read from blockDim; fast_sep.cuh), SEP_TS (fast_sep's staged
// rows' stride compiled in with them, 0: the ts parameter), SEPV (fast_sep reads its staged
// words by 16-byte loads, shared_words), SEPK (fast_sep keeps no horizontal sums for 4
// channels' unfiltered alpha, SUMS_COL),
// SAT_FREE (the output rule's clamp never acts for this plan and depth: left out, finish_bits;
// fast_int then finishes in floating point where its divisor allows, INT_FFIN), PLANES (planes
// per launch, below), TILED_TB and TILED_MINB (the tiled kernels' launch bounds, TILED_BOUNDS).
// Weights live in __constant__ memory and are indexed with compile-time offsets, so they become
// FFMA constant operands (c_w; fast_int's packed signed bytes are c_wp; with INT and SEPARABLE,
// c_wp is the row factor packed as one kernel row and c_wc the column factor).
//
// The PLANES planes of one frame that share this specialization (YUV's three planes, say) run
// in one launch, its blocks numbered plane after plane (FAST_PLANE, plane_block).
//
// This file holds the conversions, the planes of a launch, the input tile, the output stores
// and fast_full; the register windows (fast_words.cuh), fast_sep (fast_sep.cuh) and the
// register kernels (fast_reg.cuh, with fast_int.cuh) are inlined at its end by the host
// (src/backend/cuda/registry.rs), one source for NVRTC.
//
// With FAST_PAIR (fast_pair.cuh), this file is compiled twice into one module, each time for
// one plane of a frame whose two planes take different specializations (NV12's luma and
// interleaved chroma, say), inside a namespace of its own; its entry points are then device
// functions (FAST_ENTRY) that fast_pair's one launch calls with the block's plane and place.
//
// Conversions avoid the conversion unit (I2F/F2I issue at 16 per clock per multiprocessor on
// Hopper, an eighth of FFMA) but with CONV_UNIT (16-bit samples stored from bit 0, and bytes 0
// and 3 of 8-bit words in the f32 register kernel of 5-7 taps on 2-4 channels, where one I2F a
// sample on a pipe of its own measured faster): a sample becomes a float by
// placing its bits in the mantissa of 2^23 (byte_perm) and subtracting 2^23; an output is
// rounded half to even by adding 1.5 * 2^23 to the saturated value, whose low mantissa bits
// are then the integer. Both are exact, so the
// results are the contract's (filter::finish) bit for bit.
#include "common.cuh"

#if SB == 1
typedef u8 sample_t;
#else
typedef u16 sample_t;
#endif
#define SPW (4 / SB)                      // samples per aligned 4-byte word
// Whether store_rows checks a thread's rows once, not row by row: only for 8-bit one-channel
// planes, where a thread stores few samples a row (H100, separable gaussian 5-9: 4K gray and
// NV12 1.02-1.04x; for RGB, rgb48 and gray16 the second copy of the output code cost registers
// and up to 1.36x the time: 4K rgb48 gaussian:7 75.5 against 58.8 us).
#define STORE_ROWS_ONCE (SB == 1 && CH == 1)

// Whether output sample i of a thread (whose first sample starts a pixel) is computed.
#define ALL_FILTERED (CMASK == (1 << CH) - 1)
#define FILTERED(i) ((CMASK >> ((i) % CH)) & 1)
#if !ALL_FILTERED && PX % CH != 0
#error "a thread with unfiltered channels owns whole pixels"
#endif
#if SEPG && (PXH % PX != 0 || PXH % 4 != 0)
#error "a row-pass item is whole threads' outputs"
#endif
#if CONV_UNIT && SHIFT != 0
#error "the conversion unit takes samples stored from bit 0"
#endif
#if DEIL && !INT && !(SEPARABLE && !REG && SEPG && SEPI)
#error "DEIL regroups the windows of the integer dot products only"
#endif
#if SEPC && !(SEPARABLE && !REG && SEPG && !SEPI && CH >= 2 && PX % (4 * CH) == 0)
#error "SEPC: fast_sep's f32 row pass on 2-4 channels, threads owning groups of 4 pixels"
#endif
#if CROLL && !(SEPARABLE && !REG && KH >= PY)
#error "CROLL: fast_sep's column pass, at least as many taps high as rows a thread"
#endif

// The planes of one launch (FastPlanes in src/backend/cuda/abi.rs, its size checked below).
// Plane k's blocks are first[k] .. first[k + 1] - 1 of a one-dimensional grid, gx[k] of them
// to a row of blocks. (One plane takes a PlaneParams and a two-dimensional grid instead.)
struct FastPlanes {
    PlaneParams p[CONVFLOW_MAX_PLANES];
    int first[CONVFLOW_MAX_PLANES];
    int gx[CONVFLOW_MAX_PLANES];
};
static_assert(sizeof(FastPlanes) == CONVFLOW_FAST_PLANES_SIZE, "FastPlanes size differs from Rust's");
static_assert(PLANES >= 1 && PLANES <= CONVFLOW_MAX_PLANES, "1 to CONVFLOW_MAX_PLANES planes a launch");

// A `fast` block's first step (compute capability 9.0 and later). The host may queue a `fast`
// launch as a programmatic dependent of the kernel before it on its stream (abi.rs,
// `launch::queue_ex`): its blocks may then start as that kernel's last blocks exit, before it
// has completed, so each first waits here until that kernel has completed and its writes are
// visible. Queued otherwise, the wait returns at once. No block reads or writes a sample before
// it, and none leaves before it, so the launch's reads and writes keep the stream's order, and
// work queued after it still waits for both kernels. (Triggering this grid's own dependents
// early, with griddepcontrol.launch_dependents first in each block, lost up to 24 %: H100,
// 720p YUV 4:2:0 15x15 full 31.9 against 24.4 us; at each block's exit, the default, it never
// lost beyond the spread, 0.997x at worst.)
__device__ __forceinline__ void fast_follow() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// The planes of an entry point and this block's place among them: FAST_PLANES_PARAM is the
// entry point's first parameter and FAST_PLANE declares p (this block's plane) and (bx, by) (its
// block in the plane). One plane is passed as a PlaneParams and read where it is used, as a
// kernel parameter is; several as a __grid_constant__ FastPlanes, the block-uniform plane
// index k found from the block index. (A FastPlanes for one plane too cost the separable
// kernels a third of their occupancy: the compiler then holds the plane's fields in
// registers.)
//
// FAST_PLANE starts with fast_follow (above): nothing may come before it but declarations.
// With FAST_PAIR the entry points are device functions given the plane and the block (fast_pair
// waits in fast_follow first), and FAST_ENTRY(BOUNDS) declares each: a kernel with launch
// bounds BOUNDS, or such a function (the pair's kernel has the bounds).
#if FAST_PAIR
#define FAST_ENTRY(BOUNDS) __device__ __forceinline__ void
#define FAST_PLANES_PARAM const PlaneParams &p, const int bx, const int by
#define FAST_PLANE
#else
#define FAST_ENTRY(BOUNDS) extern "C" __global__ void BOUNDS
#endif
#if FAST_PAIR
#elif PLANES == 1
#define FAST_PLANES_PARAM PlaneParams p
#define FAST_PLANE     \
    fast_follow();     \
    const int bx = blockIdx.x, by = blockIdx.y;
#else
#define FAST_PLANES_PARAM const __grid_constant__ FastPlanes planes
#define FAST_PLANE                                           \
    fast_follow();                                           \
    int bx, by;                                              \
    const PlaneParams& p = planes.p[plane_block(planes, bx, by)];

__device__ __forceinline__ int plane_block(const FastPlanes& s, int& bx, int& by) {
    const int b = blockIdx.x;
    int k = 0;
#pragma unroll
    for (int i = 1; i < PLANES; ++i)
        if (b >= s.first[i]) k = i;
    const int first = s.first[k], gx = s.gx[k];
    by = (b - first) / gx;
    bx = b - first - by * gx;
    return k;
}
#endif

// Stored sample t (a constant) of the aligned word w as a float value, without I2F: its bits go
// into the low mantissa of 2^23 (0x4B000000), and 2^23 is subtracted (exact: values < 2^23);
// with CONV_UNIT by the conversion unit instead, on a pipe the FFMAs do not use (exact too):
// 16-bit samples from bit 0 by I2F.U16, which reads either half of a word in one instruction,
// and of 8-bit samples those in bytes 0 and 3, which I2F.U8 reads in one (bytes 1 and 2 would
// take a shift first, no fewer instructions than byte_perm and FADD).
__device__ __forceinline__ float word_value(unsigned w, int t) {
#if SB == 1
#if CONV_UNIT
    if (t == 0) return __uint2float_rn(w & 0xFFu);
    if (t == 3) return __uint2float_rn(w >> 24);
#endif
    return __int_as_float(__byte_perm(w, 0x4B000000u, 0x7440u + t)) - 8388608.0f;
#elif CONV_UNIT
    // The conversion unit: one I2F.U16 a sample, on its own pipe (FastSpec::conv_unit).
    return __uint2float_rn(t ? w >> 16 : w & 0xFFFFu);
#elif SHIFT == 0
    return __int_as_float(__byte_perm(w, 0x4B000000u, t ? 0x7432u : 0x7410u)) - 8388608.0f;
#else
    const unsigned v = (__byte_perm(w, 0u, t ? 0x4432u : 0x4410u) >> SHIFT) | 0x4B000000u;
    return __int_as_float(v) - 8388608.0f;
#endif
}

// The output rule of common.cuh's finish_value, with the result in the low mantissa bits of
// the returned word: saturating before rounding is the same as after (the bounds 0 and maxval
// are integers and fmaxf(NaN, 0) is 0), and adding 1.5 * 2^23 to a value in [0, 2^16) rounds it
// to an integer, half to even, in bits 0..21. With SAT_FREE the host proved every v of the plan
// in [-0.5, maxval + 0.5) (Plan::saturation_free), where rounding alone lands in 0..maxval (v in
// [-0.5, 0) rounds to 0 in bits 0..21), so the clamp is left out.
__device__ __forceinline__ unsigned finish_bits(float acc, const PlaneParams& p) {
    // The register kernels compile --abs and a zero offset in, fast_sep both with its block
    // fixed where the offset is 0 (FastSpec::zero_offset); the tiled ones read them otherwise
    // (with them compiled in, ptxas interleaved more of fast_sep's rows and spilled up to 800
    // bytes under its launch bounds: 4K RGB gaussian:7 separable 103 µs instead of 49).
#if ZERO_OFFSET
    float v = acc;  // acc + 0 is acc (a -0 it leaves rounds to 0 as +0 does: -0 + 1.5 * 2^23)
#else
    float v = __fadd_rn(acc, p.offset);
#endif
    if (REG || (SEPARABLE && SEP_BX > 0 && ZERO_OFFSET) ? ABS : p.abs_out) v = fabsf(v);
#if !SAT_FREE
    v = fminf(fmaxf(v, 0.0f), SB == 1 ? 255.0f : (float)p.maxval);
#endif
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

#define SEGP(P) ((P) + (KW - 1) * CH)     // samples a thread owning P outputs of a row reads
#define SEG SEGP(PX)                      // … for its PX outputs
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
            for (int i = 0; i < PX; ++i)
                if (FILTERED(i)) acc[py][i] = fmaf(c_w[ky], v[i], acc[py][i]);
#else
#pragma unroll
            for (int kx = 0; kx < KW; ++kx)
#pragma unroll
                for (int i = 0; i < PX; ++i)
                    if (FILTERED(i)) acc[py][i] = fmaf(c_w[ky * KW + kx], v[i + kx * CH], acc[py][i]);
#endif
        }
    }
}

__device__ __forceinline__ int floor_div(int a, int b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

// Where logical column j (a sample of a tile or horizontal-sum row) lies in its shared-memory
// row: with TILE_PAD (the host's FastSpec::tile_pad says for which specializations and why), a
// float4 of padding after every CONVFLOW_TILE_PAD_PERIOD floats, so that neighbouring threads'
// float4 reads fall on distinct bank groups; every 4-aligned run of 4 columns stays contiguous.
__device__ __forceinline__ int tcol(int j) {
    return TILE_PAD ? j + (int)((unsigned)j / CONVFLOW_TILE_PAD_PERIOD) * CONVFLOW_TILE_PAD_FLOATS : j;
}

// Floats of a logical row of n columns (a multiple of 4) in shared memory; the host's
// FastSpec::tile computes the same.
__device__ __forceinline__ int padded_row(int n) {
    return TILE_PAD ? n + (int)((unsigned)(n - 1) / CONVFLOW_TILE_PAD_PERIOD) * CONVFLOW_TILE_PAD_FLOATS : n;
}

// Floats between rows of fast_sep's horizontal sums (bw columns, padded_row): with HS_PAD an
// odd number of float4s, one added where padded_row gives an even number. The row pass
// stores float4s of items in up to 8 consecutive rows at once (a warp of 8 x 4 threads); rows
// a multiple of 32 floats apart put them all on the same four-bank groups (ncu, 4K gray
// gaussian:7: 8.5 wavefronts per store where 4 carry its bytes); an odd number of float4s
// apart, consecutive rows start on different groups. The host's FastSpec::sums_row computes
// the same. (fast_sep.cuh's sep_sums_row takes another stride for SEPK in blocks 4 wide.)
__device__ __forceinline__ int sums_row(int bw) {
    const int n = padded_row(bw);
    return HS_PAD && (n / 4) % 2 == 0 ? n + 4 : n;
}

// The logical width of a tile row of tw samples: a multiple of 4 (float4 reads) with room for
// the last thread's over-read (the host's FastSpec::tile computes the same).
__device__ __forceinline__ int tile_cols(int tw) { return (tw + 3 + 3) & ~3; }

// Where sample s of a row (any integer: samples outside the row's width pixels of CH
// channels stand for their pixel's, which the border rule maps) is stored in it: the index of
// the same channel of the mapped pixel, or -1 for a zero-border pixel outside the row. Every
// builder of a window row (mapped_sample and fast_words.cuh's) maps columns through this.
__device__ __forceinline__ int source_sample(int s, int width) {
    const int px = floor_div(s, CH);
    const int sx = map_index<BORDER>(px, width);
    return sx >= 0 ? sx * CH + (s - px * CH) : -1;
}

// Sample s (any integer: the border rule maps it) of the stored row srow, as a float.
__device__ __forceinline__ float mapped_sample(const PlaneParams& p, const sample_t* srow, int s) {
    const int q = source_sample(s, p.width);
    return q >= 0 ? (float)value(p, srow[q]) : 0.0f;
}

// The aligned word w of a tile row's source into the shared row trow, its first sample at
// tile column j (which may be negative: the word starts before the tile); its samples outside
// the tile's tw columns are padding (0) up to tile_cols(tw) and dropped past it.
__device__ __forceinline__ void tile_word(float* trow, int tw, int j, unsigned w) {
    if (j >= 0 && j + SPW - 1 < tw) {
#pragma unroll
        for (int t = 0; t < SPW; ++t) trow[tcol(j + t)] = word_value(w, t);
    } else {
#pragma unroll
        for (int t = 0; t < SPW; ++t)
            if (j + t >= 0 && j + t < tile_cols(tw)) trow[tcol(j + t)] = j + t < tw ? word_value(w, t) : 0.0f;
    }
}

// n / d for 0 <= n < 2^20 and d >= 1, from rd = __fdividef(1.0f, (float)d) (one reciprocal
// for several quotients by d, no integer division): the exact (n + 0.5) / d lies at least
// 0.5 / d from an integer, and the float product, rd within 2 ulp and the product rounded
// once, within (n + 0.5) / d * 2^-21 < 0.5 / d of it, so its truncation is the quotient.
__device__ __forceinline__ int small_quot(int n, float rd) { return (int)(((float)n + 0.5f) * rd); }

// The words of a full kernel's tile group (4 tile columns; load_tile) from the word at src:
// 1-2 of 8-bit samples, 2-3 of 16-bit, by the group's first sample's place in its word (off).
__device__ __forceinline__ void tile_group_words(const u8* src, int off, unsigned w[3]) {
    const unsigned* wp = (const unsigned*)src;
    w[0] = __ldg(wp);
    w[1] = (SB == 2 || off) ? __ldg(wp + 1) : 0u;
    w[2] = (SB == 2 && off) ? __ldg(wp + 2) : 0u;
}

// A tile group's 4 samples from its words (tile_group_words) converted, as one float4 at dst.
__device__ __forceinline__ void tile_group(float* dst, int off, const unsigned w[3]) {
#if SB == 1
    const unsigned q = __byte_perm(w[0], w[1], 0x3210u + 0x1111u * off);
    *(float4*)dst = make_float4(word_value(q, 0), word_value(q, 1), word_value(q, 2), word_value(q, 3));
#else
    *(float4*)dst = off ? make_float4(word_value(w[0], 1), word_value(w[1], 0), word_value(w[1], 1), word_value(w[2], 0))
                        : make_float4(word_value(w[0], 0), word_value(w[0], 1), word_value(w[1], 0), word_value(w[1], 1));
#endif
}

// Whether a full kernel's tile load gives each thread a column of groups (load_tile): where
// a thread's FMAs (PX * PY * KW * KH) are at most 12000. Threads of more (8-bit RGBA 15x15 in
// 4 rows, 14400; 25x25 in 2, 20000) hold 168 and 224 registers (sm_90), so few warps hide
// each round of loads in flight, and the columns, which may take a round more (RGBA 15x15 in
// 8 x 32 blocks: 29 groups a thread, 8 rounds, against 27 in 7), lost up to 5 % (H200, 4K
// RGBA gaussian:15 full 353.3 against 336.2 us; docs/PERFORMANCE.md, "sixty-fifth round").
#define TILE_COLUMNS (!SEPARABLE && PX * PY * KW * KH <= 12000)

// Fills th rows x tile_cols(tw) samples of f32, rows ts floats apart, columns placed by tcol:
// tile sample (r, j) is the value of image sample s0 + j of row y0 + r, mapped by the border
// rule per pixel (zero border and padding columns are 0).
__device__ __forceinline__ void load_tile(const PlaneParams& p, float* tile, int tw, int ts, int th, int s0, int y0) {
    const int n = p.width * CH, tc = tile_cols(tw);
    const int tid = threadIdx.y * blockDim.x + threadIdx.x, nthreads = blockDim.x * blockDim.y;
    const bool interior = y0 >= 0 && y0 + th <= p.height && s0 >= 0 && s0 + tw <= n;
#if !SEPARABLE
    // Full kernel, inside the plane on 4-byte aligned rows: each thread takes groups of 4 tile
    // columns, loads the words that hold their samples (1-2 of 8-bit, 2-3 of 16-bit), and
    // stores them converted as one float4 (tcol keeps every 4-aligned run of columns
    // contiguous), where the paths below store a sample at a time behind a bounds check
    // (docs/PERFORMANCE.md, "twenty-eighth round"); but for 3 channels from the width the
    // host's FAST_TILE_RGB_WORD_LOADS_FROM says, where the 4-byte words below measured faster.
    // Columns from tw to tc take the samples that follow: no output's taps read them (a
    // window's SEG4 - SEG last floats are never multiplied). The last group's words end at
    // most 16 bytes past the tile: inside the row's stride or the host's
    // CONVFLOW_DEVICE_SLACK.
    constexpr bool groups = CH != 3 || KW < CONVFLOW_TILE_RGB_WORD_LOADS_FROM;
    if (groups && interior && (p.src_stride & 3) == 0 && (p.src & 3) == 0) {
        const int off = s0 & (SPW - 1), g = tc / 4;  // s0's sample within its word
        const u8* base = (const u8*)(row_of<sample_t>(p.src, y0, p.src_stride) + (s0 - off));
        // GB groups' words loaded before any is converted, so that their latencies overlap
        // (H100, full plans, against one group at a time: 1.01 / 1.03 / 1.03x geomean on 1080p /
        // 4K / 8K, RGBA64 9x9 1.09-1.12x; docs/PERFORMANCE.md, "twenty-ninth round").
        constexpr int GB = 4;
#if TILE_COLUMNS
        // The block's threads in rows_step = nthreads / g chunks of g: thread m of chunk r
        // takes group m of tile rows r, r + rows_step, … (the last nthreads - rows_step * g
        // threads idle), so that it keeps its group column down the tile and steps its two
        // addresses by whole rows: 14 instructions a group (sm_90, 16-bit samples) where the
        // loop below takes 29 with its 64-bit row products, after a prologue of two integer
        // divisions (docs/PERFORMANCE.md, "sixty-fifth round"). Where the chunks hold at least
        // 3 threads in 5.
        {
            const float rg = __fdividef(1.0f, (float)g);
            const int rows_step = small_quot(nthreads, rg);  // whole rows of groups
            if (rows_step > 0 && 5 * rows_step * g >= 3 * nthreads) {
                int r = small_quot(tid, rg);
                if (r >= rows_step) return;
                const int m = tid - r * g;
                const u8* src = base + (size_t)r * p.src_stride + 4 * SB * m;
                float* dst = tile + r * ts + tcol(4 * m);
                const size_t sstep = (size_t)rows_step * p.src_stride;
                const int tstep = rows_step * ts;
                for (; r < th; r += GB * rows_step) {
                    unsigned w[GB][3];
#pragma unroll
                    for (int k = 0; k < GB; ++k)
                        if (r + k * rows_step < th) tile_group_words(src + k * sstep, off, w[k]);
#pragma unroll
                    for (int k = 0; k < GB; ++k)
                        if (r + k * rows_step < th) tile_group(dst + k * tstep, off, w[k]);
                    src += GB * sstep;
                    dst += GB * tstep;
                }
                return;
            }
        }
#endif
        // Group i = tid, tid + nthreads, … of the th x g, row by row, stepped without a
        // division.
        const int dr = nthreads / g, dq = nthreads - dr * g;
        int r = tid / g, m = tid - r * g;
        while (r < th) {
            unsigned w[GB][3];
            int rs[GB], ms[GB];
#pragma unroll
            for (int k = 0; k < GB; ++k) {
                rs[k] = r;
                ms[k] = m;
                if (r < th) tile_group_words(base + (size_t)r * p.src_stride + 4 * SB * m, off, w[k]);
                m += dq;
                r += dr;
                if (m >= g) {
                    m -= g;
                    ++r;
                }
            }
#pragma unroll
            for (int k = 0; k < GB; ++k) {
                if (rs[k] >= th) break;
                tile_group(tile + rs[k] * ts + tcol(4 * ms[k]), off, w[k]);
            }
        }
        return;
    }
#endif
    // Inside the plane, on 16-byte aligned rows (the separable kernel's tile; a full kernel's
    // takes the groups above): aligned 16-byte loads from s0 rounded down to 16 bytes, 4 words
    // each, so a thread waits on a quarter of the loads of the 4-byte path below, spread over
    // all the block's threads; 3 channels keep the 4-byte path, which measured faster there.
    // The last load may end up to 15 bytes past the tile: inside the row's stride or the
    // host's CONVFLOW_DEVICE_SLACK.
    constexpr bool wide_loads = CH != 3;
    if (wide_loads && interior && (p.src_stride & 15) == 0 && (p.src & 15) == 0) {
        constexpr int SPQ = 16 / SB;  // samples per 16-byte load
        const int a0 = s0 & ~(SPQ - 1), shift = s0 - a0, nq = (shift + tw + SPQ - 1) / SPQ;
        const u8* base = (const u8*)row_of<sample_t>(p.src, y0, p.src_stride) + (size_t)a0 * SB;
        // Load i = tid, tid + nthreads, … of the th x nq, row by row: load qi of row r, both
        // stepped without a division.
        const int dr = nthreads / nq, dq = nthreads - dr * nq;
        int r = tid / nq, qi = tid - r * nq;
#pragma unroll 2
        while (r < th) {
            const uint4 q = __ldg((const uint4*)(base + (size_t)r * p.src_stride) + qi);
            const int j = SPQ * qi - shift;
            tile_word(tile + r * ts, tw, j, q.x);
            tile_word(tile + r * ts, tw, j + SPW, q.y);
            tile_word(tile + r * ts, tw, j + 2 * SPW, q.z);
            tile_word(tile + r * ts, tw, j + 3 * SPW, q.w);
            qi += dq;
            r += dr;
            if (qi >= nq) {
                qi -= nq;
                ++r;
            }
        }
        // Padding columns past the last load (at most 6 per row).
        const int pad0 = SPQ * nq - shift, padn = tc - pad0;
        for (int i = tid; i < th * padn; i += nthreads) {
            const int r = i / padn;
            tile[r * ts + tcol(pad0 + (i - r * padn))] = 0.0f;
        }
        return;
    }
    if ((p.src_stride & 3) == 0 && (p.src & 3) == 0) {
        // Aligned 4-byte words from a0 = s0 rounded down to a whole word (SPW samples). When
        // the tile ends inside the row, the last word may end up to 3 bytes past it (its
        // samples past the tile are padding): inside the row's stride or the host's
        // CONVFLOW_DEVICE_SLACK.
        const int a0 = s0 & ~(SPW - 1), shift = s0 - a0, nw = (shift + tw + SPW - 1) / SPW;
        if (interior) {
            const u8* base = (const u8*)row_of<sample_t>(p.src, y0, p.src_stride) + (size_t)a0 * SB;
            // Rows over threadIdx.y, words over threadIdx.x; unrolled so that several
            // independent loads are in flight before the first is used.
#pragma unroll 4
            for (int r = threadIdx.y; r < th; r += blockDim.y) {
                const unsigned* row = (const unsigned*)(base + (size_t)r * p.src_stride);
                for (int wi = threadIdx.x; wi < nw; wi += blockDim.x)
                    tile_word(tile + r * ts, tw, SPW * wi - shift, __ldg(row + wi));
            }
        } else {
            // A block at the plane's edges: each tile row's source row is mapped by the border
            // rule once (a zero-border row outside the plane is zeros), a word inside the row
            // is loaded as it is, and only the words that reach past a row end are built
            // sample by sample through the border rule. (Built sample by sample throughout,
            // these blocks took a quarter of 1080p RGBA 7x7's time. Unrolled, this loop cost
            // RGB 25x25 5 %.)
            // Samples past the last one the row's last output reads feed only outputs past
            // the row end (not stored): left 0, unmapped.
            const bool ends_inside = s0 + tw <= n;
            const int last = n + (KW - 1 - AX) * CH;
#pragma unroll 1
            for (int r = threadIdx.y; r < th; r += blockDim.y) {
                const int sy = map_index<BORDER>(y0 + r, p.height);
                const sample_t* srow = row_of<sample_t>(p.src, max(sy, 0), p.src_stride);
                for (int wi = threadIdx.x; wi < nw; wi += blockDim.x) {
                    const int sw = a0 + SPW * wi, j = SPW * wi - shift;
                    if (sy >= 0 && sw >= 0 && (ends_inside || sw + SPW <= n)) {
                        tile_word(tile + r * ts, tw, j, __ldg((const unsigned*)(srow + sw)));
                        continue;
                    }
                    float* trow = tile + r * ts;
#pragma unroll
                    for (int t = 0; t < SPW; ++t)
                        if (j + t >= 0 && j + t < tile_cols(tw))
                            trow[tcol(j + t)] = j + t < tw && sy >= 0 && sw + t < last ? mapped_sample(p, srow, sw + t) : 0.0f;
                }
            }
        }
        // Padding columns past the last word (at most 6 per row).
        const int pad0 = SPW * nw - shift, padn = tc - pad0;
        for (int i = tid; i < th * padn; i += nthreads) {
            const int r = i / padn;
            tile[r * ts + tcol(pad0 + (i - r * padn))] = 0.0f;
        }
        return;
    }
    if (interior) {
        for (int i = tid; i < tc * th; i += nthreads) {
            int r = i / tc, j = i - r * tc;
            tile[r * ts + tcol(j)] =
                j < tw ? (float)value(p, row_of<sample_t>(p.src, y0 + r, p.src_stride)[s0 + j]) : 0.0f;
        }
        return;
    }
    for (int i = tid; i < tc * th; i += nthreads) {
        int r = i / tc, j = i - r * tc;
        float v = 0.0f;
        if (j < tw) {
            const int sy = map_index<BORDER>(y0 + r, p.height);
            if (sy >= 0) v = mapped_sample(p, row_of<sample_t>(p.src, sy, p.src_stride), s0 + j);
        }
        tile[r * ts + tcol(j)] = v;
    }
}

// N consecutive columns of the shared-memory row t from column col (a multiple of 4; N too)
// into registers.
template <int N>
__device__ __forceinline__ void load_segment(const float* t, int col, float v[N]) {
#pragma unroll
    for (int j = 0; j < N; j += 4) {
        const float4 q = *(const float4*)(t + tcol(col + j));
        v[j] = q.x;
        v[j + 1] = q.y;
        v[j + 2] = q.z;
        v[j + 3] = q.w;
    }
}

// One row segment (SEG samples of the shared row t from column col) times the horizontal taps
// w[0..KW) into acc[PX].
__device__ __forceinline__ void row_taps(const float* __restrict__ t, int col, const float* w, float acc[PX]) {
#if SEG_IN_REGS
    float v[SEG4];
    load_segment<SEG4>(t, col, v);
#pragma unroll
    for (int kx = 0; kx < KW; ++kx) {
        const float wv = w[kx];
#pragma unroll
        for (int i = 0; i < PX; ++i)
            if (FILTERED(i)) acc[i] = fmaf(wv, v[i + kx * CH], acc[i]);
    }
#else
#pragma unroll 4
    for (int kx = 0; kx < KW; ++kx) {
        const float wv = w[kx];
#pragma unroll
        for (int i = 0; i < PX; ++i)
            if (FILTERED(i)) acc[i] = fmaf(wv, t[tcol(col + i + kx * CH)], acc[i]);
    }
#endif
}

// The source's stored samples of the unfiltered channels (CMASK) among the PX from sample e
// of row y, into out: one or two 16-byte loads where the row and address allow, else sample by
// sample. (The register kernels take them from their windows instead: keep_from_words.)
__device__ __forceinline__ void keep_from_source(const PlaneParams& p, int e, int y, unsigned out[PX]) {
#if !ALL_FILTERED
    const int n = p.width * CH;
    const sample_t* srow = row_of<sample_t>(p.src, y, p.src_stride);
#if (PX * SB) % 16 == 0
    if (e + PX <= n && ((unsigned long long)(srow + e) & 15) == 0) {
#pragma unroll
        for (int k = 0; k < PX / SPW; k += 4) {
            const uint4 q = __ldg((const uint4*)(srow + e) + k / 4);
            const unsigned w[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
            for (int i = k * SPW; i < (k + 4) * SPW; ++i)
                if (!FILTERED(i)) out[i] = (w[i / SPW - k] >> (8 * SB * (i % SPW))) & (SB == 1 ? 0xFFu : 0xFFFFu);
        }
        return;
    }
#endif
#pragma unroll
    for (int i = 0; i < PX; ++i)
        if (!FILTERED(i) && e + i < n) out[i] = srow[e + i];
#endif
}

// PX output samples (out: stored samples in the low bits) packed into words at d, 4-byte
// aligned: 16-byte stores when PX fills them and d is 16-byte aligned (a16), else 4-byte ones.
__device__ __forceinline__ void store_words(sample_t* d, const unsigned out[PX], bool a16) {
    unsigned w[PX / SPW];
#pragma unroll
    for (int i = 0; i < PX / SPW; ++i) w[i] = pack_word(out + i * SPW);
#if (PX * SB) % 16 == 0
    if (a16) {
#pragma unroll
        for (int i = 0; i < PX / SPW; i += 4) *(uint4*)(d + i * SPW) = make_uint4(w[i], w[i + 1], w[i + 2], w[i + 3]);
        return;
    }
#endif
#pragma unroll
    for (int i = 0; i < PX / SPW; ++i) *(unsigned*)(d + i * SPW) = w[i];
}

// Writes PX output samples starting at sample e of row y (out: stored samples in the low
// bits): 16-byte stores when PX fills them and the address allows, else 4-byte stores, else
// samples.
__device__ __forceinline__ void store_samples(const PlaneParams& p, int e, int y, unsigned out[PX]) {
    const int n = p.width * CH;
    sample_t* drow = row_of_mut<sample_t>(p.dst, y, p.dst_stride);
    const unsigned long long a = (unsigned long long)(drow + e);
    if (e + PX <= n && (a & 3) == 0)
        store_words(drow + e, out, (a & 15) == 0);
    else
        for (int i = 0; i < PX && e + i < n; ++i) drow[e + i] = (sample_t)out[i];
}

// The filtered channels' PX f32 sums through the output rule, as stored samples, into out.
__device__ __forceinline__ void finish_acc(const PlaneParams& p, const float acc[PX], unsigned out[PX]) {
#pragma unroll
    for (int i = 0; i < PX; ++i)
        if (FILTERED(i)) out[i] = finish_bits(acc[i], p) << SHIFT;
}

// PX f32 sums through the output rule into row y from sample e, the unfiltered channels'
// samples read from the source (the tiled kernels).
__device__ __forceinline__ void store_acc(const PlaneParams& p, int e, int y, const float acc[PX]) {
    unsigned out[PX];
    keep_from_source(p, e, y, out);
    finish_acc(p, acc, out);
    store_samples(p, e, y, out);
}

// PY rows of PX f32 sums through the output rule into rows y.. from sample e (rows past the
// plane skipped), the unfiltered channels' samples read from the source. A thread whose
// samples lie inside every row, on 4-byte aligned rows, checks that once and not row by row
// (a fifth of the output instructions of 8K gray gaussian:7 separable, 4 rows of 4 samples).
__device__ __forceinline__ void store_rows(const PlaneParams& p, int e, int y, const float acc[PY][PX]) {
#if STORE_ROWS_ONCE
    const unsigned long long a = p.dst | (unsigned long long)(unsigned)p.dst_stride | (unsigned)(e * SB);
    if (e + PX <= p.width * CH && y + PY <= p.height && (a & 3) == 0) {
        // Each row's address one 64-bit add from the row above's, not a multiply from y.
        u8* d = (u8*)(row_of_mut<sample_t>(p.dst, y, p.dst_stride) + e);
#pragma unroll
        for (int py = 0; py < PY; ++py) {
            unsigned out[PX];
            keep_from_source(p, e, y + py, out);
            finish_acc(p, acc[py], out);
            store_words((sample_t*)d, out, (a & 15) == 0);
            d += p.dst_stride;
        }
        return;
    }
#endif
#pragma unroll
    for (int py = 0; py < PY; ++py)
        if (y + py < p.height) store_acc(p, e, y + py, acc[py]);
}

// The tiled kernels' launch bounds (the host's FastSpec::tiled_bounds): TILED_TB threads a
// block, TILED_MINB blocks resident per multiprocessor at least; none when TILED_MINB is 0.
#if TILED_MINB > 0
#define TILED_BOUNDS __launch_bounds__(TILED_TB, TILED_MINB)
#else
#define TILED_BOUNDS
#endif

#if !SEPARABLE && !REG
// Full kernel: block = blockDim.x threads x PX samples wide, blockDim.y x PY rows high. With
// PY > 1 (small kernels: KY_UNROLL covers every row) each tile row segment loaded into
// registers serves all PY output rows that read it; row r feeds output row py with kernel row
// ky = r - py, so every output still sees its rows in increasing ky (contract order).
FAST_ENTRY(TILED_BOUNDS) fast_full(FAST_PLANES_PARAM, int ts) {
    extern __shared__ float tile[];
    FAST_PLANE
    const int bw = blockDim.x * PX;
    const int tw = bw + (KW - 1) * CH, rows = blockDim.y * PY, th = rows + KH - 1;
    const int e0 = bx * bw, y0 = by * rows;
    load_tile(p, tile, tw, ts, th, e0 - AX * CH, y0 - AY);
    __syncthreads();
    const int ex = threadIdx.x * PX, ybase = threadIdx.y * PY;
    if (y0 + ybase >= p.height || e0 + ex >= p.width * CH) return;
#if PY == 1
    float acc[PX];
#pragma unroll
    for (int i = 0; i < PX; ++i) acc[i] = 0.0f;
#pragma unroll KY_UNROLL
    for (int ky = 0; ky < KH; ++ky) row_taps(tile + (ybase + ky) * ts, ex, c_w + ky * KW, acc);
    store_acc(p, e0 + ex, y0 + ybase, acc);
#else
    float acc[PY][PX];
#pragma unroll
    for (int py = 0; py < PY; ++py)
#pragma unroll
        for (int i = 0; i < PX; ++i) acc[py][i] = 0.0f;
#pragma unroll
    for (int r = 0; r < PY + KH - 1; ++r) {
        float v[SEG4];
        load_segment<SEG4>(tile + (ybase + r) * ts, ex, v);
        feed_rows(r, v, acc);
    }
    store_rows(p, e0 + ex, y0 + ybase, acc);
#endif
}

#endif  // !SEPARABLE && !REG


#include "fast_words.cuh"
#include "fast_sep.cuh"
#include "fast_reg.cuh"
