// fast.cu's exact integer kernel fast_int (INT with REG), inlined into fast.cu where it
// includes this file (src/backend/cuda/registry.rs): it uses fast.cu's window loads
// (reg_thread, zero_acc, window_words), macros (CH, KW, PX, NWR, …) and output stores.
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

__device__ __forceinline__ void int_accumulate(const unsigned words[RIN][NWR], int acc[PY][PX]) {
#pragma unroll
    for (int r = 0; r < RIN; ++r) {
        unsigned cw[CH][DCW];
#pragma unroll
        for (int c = 0; c < CH; ++c)
#pragma unroll
            for (int m = 0; m < DCW; ++m) cw[c][m] = channel_word<NWR, DWP>(words[r], c, m);
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
                            if (FILTERED(c))
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
                        if (FILTERED(i)) acc[py][i] = dp4a_us(words[r][q + t], c_wp[(ky * 4 + b) * IWIN + t], acc[py][i]);
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
    if (ABS) t = abs(t);
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

extern "C" __global__ void __launch_bounds__(128, REG_MINB) fast_int(FAST_PLANES_PARAM) {
    FAST_PLANE
    int e, y0;
    unsigned words[RIN][NWR];
    if (!reg_thread(p, bx, by, e, y0, words)) return;
    int acc[PY][PX];
    zero_acc(acc);
    int_accumulate(words, acc);
#pragma unroll
    for (int py = 0; py < PY; ++py) {
        if (y0 + py >= p.height) continue;
        unsigned out[PX];
        keep_from_words(words[AY + py], out);
#pragma unroll
        for (int i = 0; i < PX; ++i)
            if (FILTERED(i)) out[i] = finish_int(acc[py][i], p);
        store_samples(p, e, y0 + py, out);
    }
}
#endif  // INT
