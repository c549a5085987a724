// Part of fast.cu, inlined at its end and compiled under its defines (see fast.cu's header):
// fast_sep, the tiled separable kernel (SEPARABLE and not REG). A block takes its input rows
// from an input tile or, with SEPG, reads its row-pass windows from global memory (staged in
// shared memory first with SEPA, raw_rows; summed in exact integers with SEPI, row_item),
// keeps each input row's horizontal sums in shared memory (sums_row) and runs the column pass
// on them into its threads' PY x PX outputs (column_pass).

#if SEPARABLE && !REG
// fast_sep's block: SEP_BX x SEP_BY threads compiled in where the host fixed it
// (FastSpec::fixed_block), so that the block's row width, rows, rows of sums, its staged
// copies' split and (SEP_TS) its staged rows' stride fold to constants (immediate offsets for
// the column pass's shared loads, no reciprocal and no stepping for the copies); blockDim
// otherwise. The host launches such a module with that block only.
#if SEP_BX > 0
#define SEP_BDX SEP_BX
#define SEP_BDY SEP_BY
#else
#define SEP_BDX ((int)blockDim.x)
#define SEP_BDY ((int)blockDim.y)
#endif
// SEPK: 4 channels whose alpha is not filtered (CMASK 7, --alpha keep) keep no horizontal sums
// for it: each group of 4 pixels holds only its 12 filtered sums, 3 float4s (pixel after
// pixel; with SEPC channel after channel), so that the row pass stores and the column pass
// loads a quarter fewer floats. ncu, H200, 8K RGBA gaussian:7 separable: the L1 at 97 %, the
// column pass's 16-byte loads of the sums 63 % of the shared-memory wavefronts, a quarter of
// them alpha's. The logical sums column c (a multiple of 16) lies at SUMS_COL(c); a group
// has SUMS_CH channels' sums.
#if SEPK && !(SEPG && CH == 4 && CMASK == 7 && PX % 16 == 0 && PXH % 16 == 0)
#error "SEPK: 4 channels, alpha unfiltered, threads and items of whole groups of 4 pixels"
#endif
#if SEPK
#define SUMS_COL(c) ((c) / 4 * 3)
#define SUMS_CH 3
#else
#define SUMS_COL(c) (c)
#define SUMS_CH CH
#endif
#if SEPG
#if SEPI
// SEPI, the exact integer row pass (8-bit samples): the host proved the row factor n / RDIV
// exact (filter::IntegerForm::row_pass: RDIV a power of two, every partial sum of the
// contract's row pass exact in f32), so the contract's horizontal sum is (sum n*s) / RDIV
// however it is computed. row_item takes the sum by __dp4a on the window words as loaded
// (unsigned samples times the signed weights packed for the output's byte offset b: c_wr[b *
// RWIN + t] as fast_int's c_wp for one kernel row, taps CH bytes apart; no sample converted),
// starting from 0x4B400000, the bits of 1.5 * 2^23: the word read as a float is then
// 1.5 * 2^23 + sum (|sum| < 2^22), and one FMA scales it by 1 / RDIV and takes 1.5 * 2^23 /
// RDIV away. The product is exact (a power of two) and the difference, sum / RDIV, is
// representable, so the FMA's one rounding leaves it exact: the f32 row pass's value, bit for
// bit; the column pass is the f32 one.
#if SB != 1
#error "the integer row pass takes 8-bit samples"
#endif
// With DEIL (2-4 channels) each item's window is first regrouped per channel (channel_word)
// and the weights are packed for taps 1 byte apart, as for one channel: 9 taps of RGB then
// take 3 dp4a a sum instead of 7.
#if DEIL
#define RTSTR 1
#if CH < 2 || (PXH / CH) % 4 != 0
#error "DEIL items are whole pixels of 2-4 channels, a multiple of 4"
#endif
#else
#define RTSTR CH
#endif
#define RWIN ((3 + (KW - 1) * RTSTR + 1 + 3) / 4)  // words one output's taps span at most
__constant__ int c_wr[4 * RWIN];
#endif

// A row-pass item of fast_sep: the PXH horizontal sums of the window words w (NWRP(PXH) of
// them, the first HWL words left of the item's first sample) into logical columns c.. of the
// shared row hrow: sum i at column c + i, or with SEPC each group of 4 pixels' sums channel
// after channel in the group's own columns, and with SEPK each group's 12 filtered sums from
// column SUMS_COL of its first (sums_segment reads them back). Output i's tap kx is sample i +
// kx * CH of the window, at lane (i + OFF + kx * CH) of the words.
__device__ __forceinline__ void row_item(const unsigned w[NWRP(PXH)], float* hrow, int c) {
#if !SEPC
    float acc[PXH];
#endif
#if SEPI
    constexpr float inv = 1.0f / RDIV, bias = -12582912.0f / RDIV;
#endif
#if SEPI && DEIL
    constexpr int DPH = PXH / CH, DWPH = DPH + KW - 1, DCWH = (DWPH + 3) / 4;
    unsigned cw[CH][DCWH];
#pragma unroll
    for (int k = 0; k < CH; ++k)
#pragma unroll
        for (int m = 0; m < DCWH; ++m) cw[k][m] = FILTERED(k) ? channel_word<NWRP(PXH), DWPH>(w, k, m) : 0u;
#pragma unroll
    for (int i = 0; i < PXH; ++i) {
        const int k = i % CH, j = i / CH, b = j % 4, q = j / 4;  // channel, pixel of the item
        int h = 0x4B400000;
#pragma unroll
        for (int t = 0; t * 4 < b + KW; ++t)
            if (FILTERED(i)) h = dp4a_us(cw[k][q + t], c_wr[b * RWIN + t], h);
        acc[i] = fmaf(__int_as_float(h), inv, bias);
    }
#elif SEPI
#pragma unroll
    for (int i = 0; i < PXH; ++i) {
        const int b = (i + OFF) % 4, q = (i + OFF) / 4;
        int h = 0x4B400000;
#pragma unroll
        for (int t = 0; t * 4 < b + (KW - 1) * CH + 1; ++t)
            if (FILTERED(i)) h = dp4a_us(w[q + t], c_wr[b * RWIN + t], h);
        acc[i] = fmaf(__int_as_float(h), inv, bias);
    }
#elif SEPC
    // One channel at a time, in a loop that is not unrolled (all PXH * KW FFMAs of an item
    // unrolled left the instruction buffer empty: 8-bit RGB gaussian:25, 1200 of them; the
    // loop's body has NP * KW, 400):
    // channel k's NP sums take the samples k + CH * t of the window, which after k shifts of
    // the words by one sample lie at the compile-time lanes CH * t + OFF. Each sum sees its
    // taps in order, so the sums are the unrolled pass's bits. Each group of 4 pixels keeps
    // its 4 * CH columns (with SEPK 4 * 3), its sums stored channel after channel there
    // (channel k of pixels 4g.. at columns SUMS_COL(c) + (g * SUMS_CH + k) * 4..), so a
    // column-pass thread reads its columns as it would unrolled and puts them back in pixel
    // order (sums_segment).
    constexpr int NP = PXH / CH, T = NP + KW - 1;  // pixels of the item, samples of a channel
    const float* roww = c_w + KH;
    unsigned s[NWRP(PXH)];
#pragma unroll
    for (int q = 0; q < NWRP(PXH); ++q) s[q] = w[q];
#pragma unroll 1
    for (int k = 0; k < CH; ++k) {
        if ((CMASK >> k) & 1) {
            float v[T], acc[NP];
#pragma unroll
            for (int t = 0; t < T; ++t) v[t] = word_value(s[(t * CH + OFF) / SPW], (t * CH + OFF) % SPW);
#pragma unroll
            for (int m = 0; m < NP; ++m) acc[m] = 0.0f;
#pragma unroll
            for (int kx = 0; kx < KW; ++kx)
#pragma unroll
                for (int m = 0; m < NP; ++m) acc[m] = fmaf(roww[kx], v[m + kx], acc[m]);
#pragma unroll
            for (int m = 0; m < NP; m += 4)
                *(float4*)(hrow + tcol(SUMS_COL(c) + (m / 4 * SUMS_CH + k) * 4)) = make_float4(acc[m], acc[m + 1], acc[m + 2], acc[m + 3]);
        }
#pragma unroll
        for (int q = 0; q + 1 < NWRP(PXH); ++q) s[q] = __funnelshift_r(s[q], s[q + 1], 8 * SB);
        s[NWRP(PXH) - 1] >>= 8 * SB;
    }
#else
    const float* roww = c_w + KH;
    float v[SEGP(PXH)];
#pragma unroll
    for (int j = 0; j < SEGP(PXH); ++j) v[j] = word_value(w[(j + OFF) / SPW], (j + OFF) % SPW);
#pragma unroll
    for (int i = 0; i < PXH; ++i) acc[i] = 0.0f;
#pragma unroll
    for (int kx = 0; kx < KW; ++kx)
#pragma unroll
        for (int i = 0; i < PXH; ++i)
            if (FILTERED(i)) acc[i] = fmaf(roww[kx], v[i + kx * CH], acc[i]);
#endif
#if !SEPC && SEPK
    // Each group of 4 pixels' 12 filtered sums, pixel after pixel.
#pragma unroll
    for (int g = 0; g < PXH; g += 16) {
        float f[12];
#pragma unroll
        for (int j = 0; j < 12; ++j) f[j] = acc[g + j / 3 * 4 + j % 3];
#pragma unroll
        for (int j = 0; j < 12; j += 4)
            *(float4*)(hrow + tcol(SUMS_COL(c + g) + j)) = make_float4(f[j], f[j + 1], f[j + 2], f[j + 3]);
    }
#elif !SEPC
#pragma unroll
    for (int i = 0; i < PXH; i += 4)
        *(float4*)(hrow + tcol(c + i)) = make_float4(acc[i], acc[i + 1], acc[i + 2], acc[i + 3]);
#endif
}

// Where a staged row's first window word lies past a 16-byte boundary, in samples, when the
// block's row is whole 16-byte copies (raw_rows): the same for every block.
#define SEP_SPQ (16 / SB)  // samples per 16-byte copy
#define SEP_LEAD (((-(HWL * SPW)) % SEP_SPQ + SEP_SPQ) % SEP_SPQ)

// SEPV: an item's staged window words are read by 16-byte shared loads of the whole units
// they touch, not word by word. Items start a whole number of units apart and the staged rows
// are whole units, so the item's first word lies SEP_LEAD / SPW words into its first unit for
// every item. Word loads of items 16 bytes or more apart fall on 8 of the 32 banks: ncu, H200,
// 8K gray gaussian:7, 4 wavefronts each, a quarter of the kernel's shared-memory wavefronts.
// The host picks the staged rows' stride so that each 8 threads of a 16-byte load hit
// distinct bank groups (FastSpec::staged_units).
#if SEPV && !(SEPA && SEP_BX > 0 && (SEP_BX * PX * SB) % 16 == 0 && (PXH * SB) % 16 == 0)
#error "SEPV: staged rows of a compiled-in block, items whole 16-byte units"
#endif

// The window words of an item whose words start at word w of a raw shared row (SEPA).
__device__ __forceinline__ void shared_words(const unsigned* w, unsigned words[1][NWRP(PXH)]) {
#if SEPV
    constexpr int W0 = SEP_LEAD / SPW, NU = (W0 + NWRP(PXH) + 3) / 4;
    const uint4* u = (const uint4*)(w - W0);
    unsigned t[4 * NU];
#pragma unroll
    for (int k = 0; k < NU; ++k) {
        const uint4 q = u[k];
        t[4 * k] = q.x;
        t[4 * k + 1] = q.y;
        t[4 * k + 2] = q.z;
        t[4 * k + 3] = q.w;
    }
#pragma unroll
    for (int k = 0; k < NWRP(PXH); ++k) words[0][k] = t[W0 + k];
#else
#pragma unroll
    for (int k = 0; k < NWRP(PXH); ++k) words[0][k] = w[k];
#endif
}

// One 16-byte copy from global to shared memory, asynchronous where the device has cp.async
// (sm_80 on): it holds no register while in flight. async_wait waits for a thread's copies.
__device__ __forceinline__ void async_copy16(void* dst, const void* src) {
#if __CUDA_ARCH__ >= 800
    const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(d), "l"(src) : "memory");
#else
    *(uint4*)dst = __ldg((const uint4*)src);
#endif
}
__device__ __forceinline__ void async_wait() {
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_all;\n" ::: "memory");
#endif
}

// SEPA: whether this block's row pass reads its windows from a raw copy of its input rows in
// shared memory, and if so that copy made. A block whose windows all lie inside the plane,
// on 16-byte aligned rows, copies its th input rows' bytes from its first window word
// (rounded down to 16 bytes) in 16-byte asynchronous copies spread over its threads (with
// the block compiled in, whole rows a round where that takes as many rounds: the threads past
// the last whole row idle), ts words a shared row (the host's FastSpec::tile: whole 16-byte
// units, FastSpec::staged_units apart), and returns the word of its first window word in the
// row (w0). The copies are in flight together and hold no registers (in
// two groups, the row pass starting on the first while the second came, they were slower), and
// the row pass then maps no row through the border rule; other blocks (the plane's edges)
// read global memory as window_words does. The last copy may end up to 15 bytes past the
// last window word: inside the row's stride or the host's CONVFLOW_DEVICE_SLACK.
__device__ __forceinline__ bool raw_rows(const PlaneParams& p, unsigned* raw, int ts, int e0, int bw, int y0, int th, int& w0) {
#if SEPA
    constexpr int SPQ = SEP_SPQ;
    const int ws0 = e0 - HWL * SPW, a0 = ws0 & ~(SPQ - 1);
    const unsigned long long a = p.src | (unsigned long long)(unsigned)p.src_stride;
    if ((a & 15) != 0 || a0 < 0 || e0 - AX * CH < 0 || e0 + bw + (KW - 1 - AX) * CH > p.width * CH ||
        y0 - AY < 0 || y0 - AY + th > p.height)
        return false;
    const u8* base = (const u8*)row_of<sample_t>(p.src, y0 - AY, p.src_stride) + (size_t)a0 * SB;
    const int tid = threadIdx.y * SEP_BDX + threadIdx.x;
#if SEP_BX > 0 && (SEP_BX * PX * SB) % 16 == 0
    // A block fixed at compile time whose row width is whole 16-byte copies: every block's
    // first window word lies LEAD samples past a 16-byte boundary, so the copies' count and
    // split are constants, each copy's row and column one division by a constant, and the loop
    // unrolled (the last round guarded).
    constexpr int LEAD = SEP_LEAD, NT = SEP_BX * SEP_BY;
    constexpr int NQ = (LEAD + (HWL + HWR) * SPW + SEP_BX * PX + SPQ - 1) / SPQ;
    constexpr int NC = (SEP_BY * PY + KH - 1) * NQ;
    w0 = LEAD / SPW;
    const long long stride = p.src_stride;
    // Where as many rounds do, each round takes RR whole rows (thread tid: copy tid % NQ of
    // row tid / NQ, then RR rows further each round), so a thread's next copy is its last one's
    // two addresses plus constants' worth (one division, not one a copy).
    constexpr int RR = NT / NQ, NR = SEP_BY * PY + KH - 1;
    if constexpr (RR > 0 && (NR + RR - 1) / RR == (NC + NT - 1) / NT) {
        const int r0 = tid / NQ, q = tid - r0 * NQ;
        const u8* src = base + r0 * stride + 16 * q;
        unsigned* dst = raw + r0 * ts + 4 * q;
        const long long step = RR * stride;
        if (tid < RR * NQ) {
#pragma unroll
            for (int j = 0; j < (NR + RR - 1) / RR; ++j) {
                if ((j + 1) * RR <= NR || r0 + j * RR < NR) async_copy16(dst + j * RR * ts, src);
                src += step;
            }
        }
    } else {
#pragma unroll
        for (int j = 0; j < (NC + NT - 1) / NT; ++j) {
            const unsigned i = tid + j * NT;
            if ((j + 1) * NT <= NC || i < NC) {
                const int r = i / NQ, q = i - r * NQ;
                async_copy16(raw + r * ts + 4 * q, base + r * stride + 16 * q);
            }
        }
    }
#else
    const int nthreads = SEP_BDX * SEP_BDY;
    w0 = (ws0 - a0) / SPW;
    const int nq = (ws0 - a0 + (HWL + HWR) * SPW + bw + SPQ - 1) / SPQ;
    // Copy i = tid, tid + nthreads, … of the th x nq, row by row: copy q of row r. (r, q) and
    // the copy's two addresses are stepped from one copy to the next, not recomputed, and the
    // quotients tid / nq and nthreads / nq come from one reciprocal (small_quot). (Integer
    // divisions and 64-bit addresses computed for every copy: ncu, 4K gray gaussian:7, the
    // prologue with the divisions and this loop took 9.5 of the kernel's 33 warp instructions
    // an output sample.)
    const float rq = __fdividef(1.0f, (float)nq);
    const int dr = small_quot(nthreads, rq), dq = nthreads - dr * nq;
    int r = small_quot(tid, rq), q = tid - r * nq;
    const long long stride = p.src_stride;
    const u8* src = base + r * stride + 16 * q;
    unsigned* dst = raw + r * ts + 4 * q;
    const long long step = dr * stride + 16 * dq, wrap = stride - 16 * nq;
    const int dstep = dr * ts + 4 * dq, dwrap = ts - 4 * nq;
    while (r < th) {
        async_copy16(dst, src);
        q += dq;
        r += dr;
        src += step;
        dst += dstep;
        if (q >= nq) {
            q -= nq;
            ++r;
            src += wrap;
            dst += dwrap;
        }
    }
#endif
    async_wait();
    return true;
#else
    return false;
#endif
}
#endif  // SEPG

// Floats between fast_sep's rows of horizontal sums for a block row of bw samples: sums_row of
// its sums' columns, but with SEPK in blocks 4 threads wide of 4-pixel threads the fewest
// float4s u from there with PY * u = 4 (mod 8). A quarter warp's 16-byte loads there span two
// rows of threads PY rows of sums apart, whose 3-float4 columns start at bank groups
// {0, 3, 6, 1} + j of their rows: the second row's are disjoint from those only 4 groups
// further on (the host's FastSpec::sep_sums_row computes the same, and a unit test counts the
// groups). In blocks 8 wide and more a quarter warp is one row of threads: 8 distinct groups
// as it is.
__device__ __forceinline__ int sep_sums_row(int bw) {
#if SEPK && PX == 16 && PY % 8 != 0
    if (SEP_BDX == 4) {
        int u = SUMS_COL(bw) / 4;
        while (PY * u % 8 != 4) ++u;
        return 4 * u;
    }
#endif
    return sums_row(SUMS_COL(bw));
}

// A thread's PX horizontal sums of the shared row t from logical column col, in the order of
// its output samples: with SEPC (each group of 4 pixels stored channel after channel, row_item)
// put back in pixel order; with SEPK alpha's, which no output uses, 0.
__device__ __forceinline__ void sums_segment(const float* t, int col, float v[PX]) {
#if SEPK
    float u[PX / 4 * 3];
    load_segment<PX / 4 * 3>(t, SUMS_COL(col), u);
#pragma unroll
    for (int i = 0; i < PX; ++i) {
        const int g = i / 16, px = i / 4 % 4, k = i % 4;  // group, its pixel, channel
        v[i] = k == 3 ? 0.0f : u[SEPC ? (g * 3 + k) * 4 + px : g * 12 + px * 3 + k];
    }
#elif SEPC
    float u[PX];
    load_segment<PX>(t, col, u);
#pragma unroll
    for (int i = 0; i < PX; ++i) v[i] = u[(i / CH / 4 * CH + i % CH) * 4 + i / CH % 4];
#else
    load_segment<PX>(t, col, v);
#endif
}

// The column pass of a thread's PY x PX outputs from the rows of horizontal sums from t (rows
// hsw floats apart), sums from column col. With CROLL the rows that feed every output row
// (PY - 1 .. KH - 1) run in a loop that is not unrolled, with the column factor's weights
// indexed at run time; the others, and without CROLL all, unrolled. Either way each output
// sees its rows in increasing ky.
__device__ __forceinline__ void column_pass(const float* t, int hsw, int col, float acc[PY][PX]) {
#if CROLL
#pragma unroll
    for (int r = 0; r < PY - 1; ++r) {
        float v[PX];
        sums_segment(t + r * hsw, col, v);
        feed_rows(r, v, acc);
    }
#pragma unroll 1
    for (int r = PY - 1; r < KH; ++r) {
        float v[PX];
        sums_segment(t + r * hsw, col, v);
#pragma unroll
        for (int py = 0; py < PY; ++py) {
            const float wy = c_w[r - py];
#pragma unroll
            for (int i = 0; i < PX; ++i)
                if (FILTERED(i)) acc[py][i] = fmaf(wy, v[i], acc[py][i]);
        }
    }
#pragma unroll
    for (int r = KH; r < PY + KH - 1; ++r) {
        float v[PX];
        sums_segment(t + r * hsw, col, v);
        feed_rows(r, v, acc);
    }
#else
#pragma unroll
    for (int r = 0; r < PY + KH - 1; ++r) {
        float v[PX];
        sums_segment(t + r * hsw, col, v);
        feed_rows(r, v, acc);
    }
#endif
}

// Separable, fused: horizontal results for blockDim.y*PY + KH - 1 rows go to shared memory
// (after the input tile, or with SEPG computed from global memory or, SEPA, from a raw copy
// of the block's input rows); each thread then runs the vertical pass for PY rows x PX
// samples.
FAST_ENTRY(TILED_BOUNDS) fast_sep(FAST_PLANES_PARAM, int ts_param) {
    extern __shared__ float smem[];
    FAST_PLANE
#if SEP_TS > 0
    // The staged rows' stride the host launches this block with (FastSpec::tile), compiled in.
    constexpr int ts = SEP_TS;
    (void)ts_param;
#else
    const int ts = ts_param;
#endif
    const int bw = SEP_BDX * PX;
    const int rows = SEP_BDY * PY, th = rows + KH - 1;
    const int hsw = sep_sums_row(bw);
    const int e0 = bx * bw, y0 = by * rows;
    const int ex = threadIdx.x * PX;
#if SEPG
    // The row pass reads each window from global memory as the register kernel does
    // (window_words: whole words, the row ends and borders built sample by sample), so no
    // input tile: shared memory holds only the horizontal sums, and with SEPA a raw copy of
    // the block's input rows after them (raw_rows). Its work items are PXH consecutive sums
    // of one row (a multiple of PX; the host keeps bw a multiple of PXH): the window's halo
    // is loaded and converted once per item, so wider items convert fewer samples per sum. An
    // item's sums feed only its own columns of the vertical pass, so items past the row end
    // have nothing to compute.
    float* hs = smem;  // th rows of SUMS_COL(bw) columns, hsw floats apart
    unsigned* raw = (unsigned*)(smem + th * hsw);
    int w0 = 0;
    const bool staged = raw_rows(p, raw, ts, e0, bw, y0, th, w0);
    if (staged) __syncthreads();
#if CH == 1
    // One channel: thread (x, y) takes the item of column x / M of rows y * M + x % M, then
    // every blockDim.y * M-th row after it (M threads of a block row share an item column),
    // so no item needs a division: H100, held clock, 4K gray / gray16 gaussian:7-25 separable
    // 3-8 % faster than the loop below, 1080p 4-7 %. The same loop made 3-4 channels' items
    // 1.2-2.6x slower (4K RGB gaussian:7 63.2 against 48.4 us, 1080p RGBA 15 76.2 against
    // 28.9), so they keep the loop below (docs/PERFORMANCE.md, "twenty-third round").
    constexpr int M = PXH / PX;  // the host keeps blockDim.x a multiple of M
    const int c = threadIdx.x / M * PXH;
    const int r0 = threadIdx.y * M + threadIdx.x % M, dr = SEP_BDY * M;
    if (staged) {
        for (int r = r0; r < th; r += dr) {
            unsigned words[1][NWRP(PXH)];
            shared_words(raw + r * ts + w0 + c / SPW, words);
            row_item(words[0], hs + r * hsw, c);
        }
    } else {
        for (int r = r0; r < th; r += dr) {
            if (e0 + c >= p.width * CH) break;
            unsigned words[1][NWRP(PXH)];
            window_words<1, PXH>(p, e0 + c, y0 + r, words);
            row_item(words[0], hs + r * hsw, c);
        }
    }
#else
    const int nh = bw / PXH, items = th * nh;
    const int tid = threadIdx.y * SEP_BDX + threadIdx.x, nthreads = SEP_BDX * SEP_BDY;
    if (staged) {
        for (int it = tid; it < items; it += nthreads) {
            const int r = it / nh, c = (it - r * nh) * PXH;
            unsigned words[1][NWRP(PXH)];
            shared_words(raw + r * ts + w0 + c / SPW, words);
            row_item(words[0], hs + r * hsw, c);
        }
    } else {
        for (int it = tid; it < items; it += nthreads) {
            const int r = it / nh, c = (it - r * nh) * PXH;
            if (e0 + c >= p.width * CH) continue;
            unsigned words[1][NWRP(PXH)];
            window_words<1, PXH>(p, e0 + c, y0 + r, words);
            row_item(words[0], hs + r * hsw, c);
        }
    }
#endif
#else
    const int tw = bw + (KW - 1) * CH;
    float* tile = smem;
    float* hs = smem + ts * th;  // th rows of bw columns, hsw floats apart
    load_tile(p, tile, tw, ts, th, e0 - AX * CH, y0 - AY);
    __syncthreads();
    for (int r = threadIdx.y; r < th; r += SEP_BDY) {
        float acc[PX];
#pragma unroll
        for (int i = 0; i < PX; ++i) acc[i] = 0.0f;
        row_taps(tile + r * ts, ex, c_w + KH, acc);
#pragma unroll
        for (int i = 0; i < PX; i += 4)
            *(float4*)(hs + r * hsw + tcol(ex + i)) = make_float4(acc[i], acc[i + 1], acc[i + 2], acc[i + 3]);
    }
#endif
    __syncthreads();
    const int e = e0 + ex, ybase = threadIdx.y * PY;
    if (e >= p.width * CH || y0 + ybase >= p.height) return;
    float acc[PY][PX];
#pragma unroll
    for (int py = 0; py < PY; ++py)
#pragma unroll
        for (int i = 0; i < PX; ++i) acc[py][i] = 0.0f;
    column_pass(hs + ybase * hsw, hsw, ex, acc);
    store_rows(p, e, y0 + ybase, acc);
}
#endif  // SEPARABLE && !REG
