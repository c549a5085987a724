// Part of fast.cu, inlined at its end and compiled under its defines (see fast.cu's header):
// the exact byte products of fast_int and fast_sep's integer row pass (dp4a_us), and the
// register windows of fast_reg, fast_int and fast_sep's row pass from global memory: which
// words of which input rows a thread holds (HWL, HWR, NWR, RIN), how they are loaded
// (reg_words, gather_words, gather_words_flat, perm_words, window_words), regrouped per channel
// (channel_word), converted and fed to the output rows (reg_accumulate), and the unfiltered
// channels taken from them (keep_from_words).

#if INT || SEPI
// Four unsigned bytes of a times four signed bytes of b, added to c: exact in 32 bits.
__device__ __forceinline__ int dp4a_us(unsigned a, int b, int c) {
    int d;
    asm("dp4a.u32.s32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    return d;
}
#endif

#if REG || SEPG
// Register kernel for small kernels: no shared memory and no barriers. Each thread owns PX
// consecutive samples (16 bytes) of PY consecutive output rows. For each of the PY + KH - 1
// input rows it reads the row segment it needs (the 16 bytes under its outputs in one load,
// the halo words beside them in 4-byte loads that neighbours' loads bring into L1), converts it
// once, and feeds every output row that uses it: row r serves output row py with kernel row
// ky = r - py, so each output still sees its rows in increasing ky (contract order). All rows'
// loads are issued before the first is used (window_words): one memory latency per thread.
#define HWL ((AX * CH + SPW - 1) / SPW)            // halo words left of the outputs
#define HWR (((KW - 1 - AX) * CH + SPW - 1) / SPW)  // and right of them
#define CWP(P) ((P) / SPW)                          // words under P outputs
#define CW CWP(PX)                                  // … under the thread's PX outputs
#define OFF (HWL * SPW - AX * CH)                   // first needed sample within the words
#define NWRP(P) (HWL + CWP(P) + HWR)                // words per row segment of P outputs
#define NWR NWRP(PX)
#define RIN (PY + KH - 1)                           // input rows per thread

#if DEIL
// Word m of channel c of a window row w (NW words, the first HWL left of the outputs, as
// window_words loads them) of NP window pixels: lane l holds the channel's sample of window
// pixel 4m + l (lanes past the window repeat its last pixel; their weights are 0). The lanes'
// bytes lie in 1-4 consecutive words of the row; every index and selector here is a
// compile-time constant once the callers' loops are unrolled, so this is 1-3 byte_perm. Used
// where the taps of a channel, CH bytes apart, would leave most dp4a lanes with zero weights
// (fast_int's and fast_sep's integer row pass's, DEIL).
template <int NW, int NP>
__device__ __forceinline__ unsigned channel_word(const unsigned w[NW], int c, int m) {
    int s[4];
#pragma unroll
    for (int l = 0; l < 4; ++l) s[l] = OFF + min(4 * m + l, NP - 1) * CH + c;
    const int a = s[0] / 4, last = s[3] / 4;
    // Lanes in words a and a + 1 (selector nibbles 0-7 of that pair); the others are
    // placeholders replaced below.
    unsigned sel = 0;
#pragma unroll
    for (int l = 0; l < 4; ++l) sel |= (unsigned)(s[l] / 4 <= a + 1 ? s[l] - 4 * a : 0) << (4 * l);
    const unsigned lo = __byte_perm(w[a], w[min(a + 1, NW - 1)], sel);
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
#endif

// Feeds input row r of the thread's window (SEG values) into every output row that reads it.
__device__ __forceinline__ void reg_accumulate(int r, const float v[SEG], float acc[PY][PX]) {
#if SEPARABLE
    float h[PX];
#pragma unroll
    for (int i = 0; i < PX; ++i) {
        h[i] = 0.0f;
#pragma unroll
        for (int kx = 0; kx < KW; ++kx)
            if (FILTERED(i)) h[i] = fmaf(c_w[KH + kx], v[i + kx * CH], h[i]);
    }
    feed_rows(r, h, acc);
#else
    feed_rows(r, v, acc);
#endif
}

// The words of the window of R rows under P outputs (PX unless said) from sample e of row y0,
// when its row segments lie inside the rows (MODE 2: the words under the outputs in aligned
// 16-byte loads; 1: 4-byte loads), with no branch between rows, so that their latencies
// overlap; a row outside the plane is read from a row inside it and, for the zero border,
// zeroed (a zero word is the value 0).
template <int R, int MODE, int P = PX>
__device__ __forceinline__ void reg_words(const PlaneParams& p, int e, int y0, unsigned words[R][NWRP(P)]) {
#pragma unroll
    for (int r = 0; r < R; ++r) {
        const int sy = map_index<BORDER>(y0 - AY + r, p.height);
        const unsigned* w = (const unsigned*)(row_of<sample_t>(p.src, max(sy, 0), p.src_stride) + e);
#pragma unroll
        for (int k = 0; k < HWL; ++k) words[r][k] = __ldg(w - HWL + k);
        if (MODE == 2) {
#pragma unroll
            for (int k = 0; k < CWP(P); k += 4) {
                const uint4 q = __ldg((const uint4*)(w + k));
                words[r][HWL + k] = q.x;
                words[r][HWL + k + 1] = q.y;
                words[r][HWL + k + 2] = q.z;
                words[r][HWL + k + 3] = q.w;
            }
        } else {
#pragma unroll
            for (int k = 0; k < CWP(P); ++k) words[r][HWL + k] = __ldg(w + k);
        }
#pragma unroll
        for (int k = 0; k < HWR; ++k) words[r][HWL + CWP(P) + k] = __ldg(w + CWP(P) + k);
        if (BORDER == BORDER_ZERO && sy < 0) {
#pragma unroll
            for (int k = 0; k < NWRP(P); ++k) words[r][k] = 0;
        }
    }
}

// The same words for threads whose window crosses a row end, or on planes not 4-byte aligned:
// a word lying wholly inside the row is loaded as it is (when `aligned`), any other is built
// sample by sample through the border rule (samples of the zero border are 0, as are samples
// outside the window and those past the last one the row's last output reads: they feed only
// outputs past the row end, which are not stored). A row-end thread thus builds only the words
// past the end one by one, and of a thread owning the row's last few samples only the window
// of those. (Built in full, such a thread held its warp 3–5 times as long: 1921 samples a
// row, one past a whole thread's, took 1080p gray and RGB 3x3 40 % longer than 1920.)
template <int R, int P = PX>
__device__ __forceinline__ void gather_words(const PlaneParams& p, int e, int y0, bool aligned, unsigned words[R][NWRP(P)]) {
    const int n = p.width * CH, s = e - AX * CH, last = n + (KW - 1 - AX) * CH;
#pragma unroll
    for (int r = 0; r < R; ++r) {
        const int sy = map_index<BORDER>(y0 - AY + r, p.height);
        const sample_t* row = row_of<sample_t>(p.src, max(sy, 0), p.src_stride);
#pragma unroll
        for (int k = 0; k < NWRP(P); ++k) {
            const int j0 = SPW * k - OFF;  // window sample of the word's first lane
            if (aligned && sy >= 0 && s + j0 >= 0 && s + j0 + SPW <= n) {
                words[r][k] = __ldg((const unsigned*)(row + s + j0));
                continue;
            }
            unsigned w = 0;
#pragma unroll
            for (int l = 0; l < SPW; ++l) {
                const int j = j0 + l;
                if (j >= 0 && j < SEGP(P) && s + j < last) {
                    const int q = source_sample(s + j, p.width);
                    if (q >= 0 && sy >= 0) w |= (unsigned)row[q] << (8 * SB * l);
                }
            }
            words[r][k] = w;
        }
    }
}

#if REG && SB == 2 && CH == 3
// The same words for the register kernels of 16-bit RGB (fast_reg, fast_int) in every lane
// their outputs read, without a branch (lanes outside the window, which gather_words' whole
// words may fill from the row, are 0 here; no output reads them, fast_int weights them 0):
// the source column of each lane is found once (the border maps columns alike in every row;
// -1 where the lane is 0), then each row's samples are loaded unconditionally, all at once (a
// -1 lane reads column 0, a zero border's row outside the plane reads row 0: in bounds), the
// zero lanes and rows cleared, and packed. gather_words finds every lane's column again in
// each row, through a division by 3 and the border rule, lane by lane behind a branch; the
// warps holding row-end threads then finished last on launches of a wave or two (rgb48
// log:5, 720p / 1080p / 4K: 15.1 / 22.6 / 54.4 against 11.0 / 17.1 / 49.3 us; H200,
// docs/PERFORMANCE.md, "fifty-sixth round"). Measured and not taken elsewhere: 8-bit samples
// (32 lanes a row of RGBA 5x5 spill, 0.62-1.07x), one channel (0.73-1.36x, the 3x3 kernels
// mostly slower: P010 0.73-0.92x) and RGBA64 (5x5 on 4K / 8K 0.74 / 0.65x).
template <int R, int P = PX>
__device__ __forceinline__ void gather_words_flat(const PlaneParams& p, int e, int y0, unsigned words[R][NWRP(P)]) {
    const int n = p.width * CH, s = e - AX * CH, last = n + (KW - 1 - AX) * CH;
    constexpr int L = NWRP(P) * SPW;
    int col[L];
#pragma unroll
    for (int q = 0; q < L; ++q) {
        const int j = q - OFF;  // window sample of lane q
        col[q] = -1;
        if (j >= 0 && j < SEGP(P) && s + j < last) col[q] = source_sample(s + j, p.width);
    }
#pragma unroll
    for (int r = 0; r < R; ++r) {
        const int sy = map_index<BORDER>(y0 - AY + r, p.height);
        const sample_t* row = row_of<sample_t>(p.src, max(sy, 0), p.src_stride);
        unsigned v[L];
#pragma unroll
        for (int q = 0; q < L; ++q) v[q] = row[max(col[q], 0)];
#pragma unroll
        for (int q = 0; q < L; ++q)
            if (col[q] < 0 || sy < 0) v[q] = 0;
#pragma unroll
        for (int k = 0; k < NWRP(P); ++k) words[r][k] = pack_word(v + k * SPW);
    }
}
#endif

// Which builder the threads whose window crosses a row end use (window_words): perm_words where
// a word holds one pixel's samples or part of one (RGBA, RGBA64, P010's chroma), in every
// kernel that loads its window words; for other layouts, in the register kernels from 5 taps
// wide (rgb48's there: gather_words_flat), and for one 16-bit channel under the clamp border at
// every width (measured at 3, 5 and 7 taps; 1, 2 and 4 follow, correct but not timed),
// fast_int's on one full-range plane a launch (gray16; gray10 / gray12 and P016's luma take it
// too, not timed). Measured on H200 against gather_words (docs/PERFORMANCE.md, "fifty-seventh
// round", "fifty-eighth round"): RGBA log:5 720p 15.2 -> 8.1 us, RGBA64 log:5 17.5 -> 10.9,
// P010 log:5 1.52x, 8-bit RGB log:5 1.12x, gray16 log:3 1080p 6.2 -> 5.1 us, yuv420p10 log:3
// 720p 1.18x; 3x3 kernels of 8-bit one channel and NV12 were 0.79-0.97x (their gather_words
// loads all but one or two words whole), fast_int's 3x3 on yuv420p10's three planes a launch
// and on P010's luma 0.85 and 0.94x at 720p (fast_reg's P010 luma keeps it at 0.95x there: it
// gains 1.08x at 1080p, where fast_int's gained 1.01x; why those launches lose at 720p and
// gray16's gains is not known), and fast_sep's row pass from global memory 0.69-0.90x outside
// the whole-word layouts, so those keep gather_words. 8-bit RGB's reflect border keeps it too:
// a model of perm_words over widths, borders and thread starts found most of its row-end
// threads' words spanning three row words (the fallback), so its plan would be pure overhead.
#define EDGE_ONE16 \
    (REG && SB == 2 && CH == 1 && BORDER == BORDER_CLAMP && (!INT || (PLANES == 1 && SHIFT == 0)))
#define EDGE_PERM \
    ((CH * SB) % 4 == 0 || EDGE_ONE16 || \
     (REG && KW >= 5 && !(SB == 2 && CH == 3) && !(SB == 1 && CH == 3 && BORDER == BORDER_REFLECT)))
// Under the clamp border, where a pixel's samples divide a word (one channel, NV12's chroma),
// every lane of a row-end window word lies in one row word (the row's first or last pixel
// lies in the word the lanes inside the row come from): perm_words loads one, not two
// (5 and 7 taps: one 16-bit channel up to 1.18x, one 8-bit channel and NV12 up to 1.13x;
// nothing slower than 0.99x).
#define PERM_ONE (BORDER == BORDER_CLAMP && 4 % (CH * SB) == 0)

#if EDGE_PERM
// The same words as gather_words in every lane an output reads, from whole aligned words of
// each row: for each word of the window, the (at most two) row words its lanes come from and
// a byte_perm selector that picks them are worked out once per thread through the border rule
// (the border maps columns alike in every row), then each row costs one or two loads and a
// byte_perm a word, with no branch. Where a word holds one pixel's samples or part of one
// (CH * SB a multiple of 4), or under PERM_ONE, that is a single load. A lane of the zero
// border outside the row takes byte 0 of a second word that is 0. Returns false, having
// loaded nothing, where some word's lanes lie in more row words than that (8-bit RGB's wrap on
// narrow rows, one 8-bit channel's wrap on rows narrower than a window can; 8-bit RGB's
// reflect mostly would, and does not come here); the caller then uses gather_words. Needs a
// 4-byte-aligned plane. gather_words maps every lane of every row again behind a branch a lane; the warps holding
// row-end threads then finished last on launches of a wave or two.
template <int R, int P = PX>
__device__ __forceinline__ bool perm_words(const PlaneParams& p, int e, int y0, unsigned words[R][NWRP(P)]) {
    constexpr int NW = NWRP(P);
    constexpr bool WHOLE = (CH * SB) % 4 == 0;  // every word one pixel's (or half of one's)
    int o0[NW], o1[NW];
    unsigned sel[NW];
    bool ok = true;
#pragma unroll
    for (int k = 0; k < NW; ++k) {
        const int t = e + SPW * (k - HWL);  // row sample of the word's lane 0
        if (WHOLE) {
            const int q = source_sample(t, p.width);
            o0[k] = q >= 0 ? q * SB / 4 : -1;
            o1[k] = -1;
            sel[k] = 0x3210;
            continue;
        }
        int a = -1, b = -1;
        bool zl = false;
        unsigned s = 0;
#pragma unroll
        for (int l = 0; l < SPW; ++l) {
            const int q = source_sample(t + l, p.width);
            unsigned nib = 4;  // a zero lane: byte 0 of the second word, 0 then
            if (q < 0) {
                zl = true;
            } else {
                const int byte = q * SB;
                const int wi = byte >> 2;
                unsigned base = 0;
                if (a < 0 || wi == a) a = wi;
                else if (b < 0 || wi == b) { b = wi; base = 4; }
                else ok = false;
                nib = base + (byte & 3);
            }
#pragma unroll
            for (int i = 0; i < SB; ++i) s |= (nib + (q < 0 ? 0 : i)) << (4 * (l * SB + i));
        }
        if (zl && b >= 0) ok = false;
        if (PERM_ONE && b >= 0) ok = false;
        o0[k] = a;
        o1[k] = BORDER == BORDER_ZERO ? b : (b < 0 ? a : b);
        sel[k] = s;
    }
    if (!ok) return false;
#pragma unroll
    for (int r = 0; r < R; ++r) {
        const int sy = map_index<BORDER>(y0 - AY + r, p.height);
        const unsigned* row = (const unsigned*)row_of<sample_t>(p.src, max(sy, 0), p.src_stride);
#pragma unroll
        for (int k = 0; k < NW; ++k) {
            unsigned lo = __ldg(row + max(o0[k], 0));
            if (BORDER == BORDER_ZERO && o0[k] < 0) lo = 0;
            if (WHOLE) {
                words[r][k] = lo;
            } else if (PERM_ONE) {
                words[r][k] = __byte_perm(lo, 0, sel[k]);
            } else {
                unsigned hi = __ldg(row + max(o1[k], 0));
                if (BORDER == BORDER_ZERO && o1[k] < 0) hi = 0;
                words[r][k] = __byte_perm(lo, hi, sel[k]);
            }
        }
        if (BORDER == BORDER_ZERO && sy < 0) {
#pragma unroll
            for (int k = 0; k < NW; ++k) words[r][k] = 0;
        }
    }
    return true;
}
#endif

// The window words of R rows under P outputs (PX unless said), by the fastest load its position
// and the plane's alignment allow. Whole words beyond the last needed sample stay within the
// row's stride or the device slack (CONVFLOW_DEVICE_SLACK) after the plane.
template <int R, int P = PX>
__device__ __forceinline__ void window_words(const PlaneParams& p, int e, int y0, unsigned words[R][NWRP(P)]) {
    const int n = p.width * CH;
    const bool inside = e - AX * CH >= 0 && e + P + (KW - 1 - AX) * CH <= n;
    const unsigned long long a = p.src | (unsigned long long)(unsigned)p.src_stride;
    if (inside && (a & 15) == 0 && (P * SB) % 16 == 0)
        reg_words<R, 2, P>(p, e, y0, words);
    else if (inside && (a & 3) == 0)
        reg_words<R, 1, P>(p, e, y0, words);
    else {
#if EDGE_PERM
        if ((a & 3) == 0 && perm_words<R, P>(p, e, y0, words)) return;
        gather_words<R, P>(p, e, y0, (a & 3) == 0, words);
#elif REG && SB == 2 && CH == 3
        gather_words_flat<R, P>(p, e, y0, words);
#else
        gather_words<R, P>(p, e, y0, (a & 3) == 0, words);
#endif
    }
}

// The source's stored samples of the unfiltered channels (CMASK) among a thread's PX outputs,
// into out, from the words of its window row that lies on the output row (its centre words:
// output i is lane i % SPW of word HWL + i / SPW).
__device__ __forceinline__ void keep_from_words(const unsigned w[NWR], unsigned out[PX]) {
#if !ALL_FILTERED
#pragma unroll
    for (int i = 0; i < PX; ++i)
        if (!FILTERED(i)) out[i] = (w[HWL + i / SPW] >> (8 * SB * (i % SPW))) & (SB == 1 ? 0xFFu : 0xFFFFu);
#endif
}
#endif  // REG || SEPG
