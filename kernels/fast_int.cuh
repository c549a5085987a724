// fast.cu's exact integer kernel fast_int (INT with REG), inlined where fast_reg.cuh includes
// this file (src/backend/cuda/registry.rs): it uses fast_reg.cuh's reg_thread and zero_acc,
// fast_words.cuh's window loads and macros (NWR, …), fast.cu's (CH, KW, PX, …) and its output
// stores.
#if INT
// The exact integer path (src/filter/exact.rs): 8-bit or 16-bit samples, integer weights n
// over the divisor IDIV, offset numerator IOFF; the host builds it only where filter::exact
// proves that round_half_even((sum n*s + IOFF) / IDIV) is the f32 contract's output for every
// input (every stored word, for 16-bit). A thread's windows are the register kernel's words;
// output i's taps in input row r are the samples OFF + i + kx*CH, spread over IWIN words at
// most, and one dot product consumes a word against the weights packed for that sample
// offset: c_wp[(ky * SPW + b) * IWIN + t] holds in byte lane l < SPW the weight of tap kx where
// SPW*t + l - b = kx*TSTR (0 elsewhere), b the window's offset in its first word. 8-bit: one
// __dp4a (four unsigned bytes times four signed 8-bit weights, exact in 32 bits); 16-bit: one
// dp2a.lo (the word's two unsigned 16-bit samples times the weight word's low two signed
// bytes). A word that holds none of an output's taps is skipped at compile time. No
// conversion: the samples are used as loaded (TSTR = CH; MSB-aligned 16-bit words shifted down
// first), or, with DEIL, 8-bit samples regrouped per channel by byte_perm first (TSTR = 1).
#if SB != 1 && (DEIL || SEPARABLE)
#error "16-bit integer kernels take full plans with interleaved windows"
#endif
// Bytes between a kernel row's taps in the words the dot products read: CH in the plane's
// words, 1 in deinterleaved channel words.
#if DEIL
#define TSTR 1
#else
#define TSTR CH
#endif
#define IWIN ((SPW - 1 + (KW - 1) * TSTR + 1 + SPW - 1) / SPW)

// Whether word t of a window whose first tap is sample b of its first word holds a tap of a
// kernel row (a compile-time constant once the callers' loops are unrolled).
__device__ __forceinline__ constexpr bool holds_tap(int b, int t) {
    for (int kx = 0; kx < KW; ++kx)
        if ((b + kx * TSTR) / SPW == t) return true;
    return false;
}

// The dot product of one window word against a packed weight word, added to c.
__device__ __forceinline__ int dot_us(unsigned a, int b, int c) {
#if SB == 1
    return dp4a_us(a, b, c);
#else
    int d;
    asm("dp2a.lo.u32.s32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    return d;
#endif
}

// A window word as the dot products read it: 16-bit MSB-aligned samples (SHIFT) shifted down
// in both lanes; others as loaded.
__device__ __forceinline__ unsigned int_word(unsigned w) {
#if SB == 2 && SHIFT != 0
    return (w >> SHIFT) & (0x10001u * (0xFFFFu >> SHIFT));
#else
    return w;
#endif
}
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
__constant__ int c_wp[KH * SPW * IWIN];
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
    for (int r = 0; r < RIN; ++r) {
        unsigned w[NWR];
#pragma unroll
        for (int k = 0; k < NWR; ++k) w[k] = int_word(words[r][k]);
#pragma unroll
        for (int py = 0; py < PY; ++py) {
            const int ky = r - py;
            if (ky >= 0 && ky < KH) {
#pragma unroll
                for (int i = 0; i < PX; ++i) {
                    const int b = (i + OFF) % SPW, q = (i + OFF) / SPW;
#pragma unroll
                    for (int t = 0; t < IWIN; ++t)
                        if (FILTERED(i) && holds_tap(b, t)) acc[py][i] = dot_us(w[q + t], c_wp[(ky * SPW + b) * IWIN + t], acc[py][i]);
                }
            }
        }
    }
}
#endif  // DEIL, SEPARABLE

// filter::IntegerForm::finish: (sum + IOFF) / IDIV, |.| with --abs, rounded half to even,
// saturated to 0..maxval. IDIV and IOFF are compile-time constants, and filter::exact gives forms
// only with odd or power-of-two divisors: for an odd one (2t + IDIV) / (2 IDIV) is a multiply
// and shift, and there are no ties; for 2^s, (t + 2^(s-1) - 1 + bit s of t) >> s rounds ties to
// even. Sums stay below 2^29 in magnitude (filter::exact), so nothing overflows 32 bits.
#if IDIV % 2 == 0 && (IDIV & (IDIV - 1)) != 0
#error "integer forms have odd or power-of-two divisors"
#endif
// INT_FFIN: a power-of-two divisor up to 2^(CONVFLOW_INT_FFIN_SUM_BITS - 8 SB) (16384 for 8-bit
// samples, 64 for 16-bit), no --abs, and the host's proof that the output rule's clamp never
// acts (SAT_FREE, Plan::saturation_free: every value v of the contract in [-0.5, maxval + 0.5)).
// A divisor 2^s > 1 comes from filter::exact's exact proof, where v is t / IDIV itself; IDIV = 1
// may come from the bounded one, where |v - t| < 1/2, so v in [-0.5, maxval + 0.5) leaves t in
// 0..maxval. Either way t / IDIV lies in [-0.5, 2^(8 SB) - 0.5), so |t| < 2^22. Then t is placed in
// the mantissa of 1.5 * 2^23 by one integer add (exact: the float 1.5 * 2^23 + t), and one fused
// multiply-add by 1 / IDIV (a power of two: exact) with 1.5 * 2^23 * (1 - 1 / IDIV) (an integer
// below 2^24: exact) leaves t / IDIV + 1.5 * 2^23 rounded once, half to even, as finish_bits
// does: the output in the word's low bits (t / IDIV >= -0.5 rounds to 0), two instructions
// where the integer rounding and clamp take six. The host sets SAT_FREE on integer
// specializations only where all of this holds (src/backend/cuda/fast/run.rs).
#define INT_FFIN (SAT_FREE && !ABS && IDIV <= (1u << (CONVFLOW_INT_FFIN_SUM_BITS - 8 * SB)) && (IDIV & (IDIV - 1)) == 0)
__device__ __forceinline__ unsigned finish_int(int sum, const PlaneParams& p) {
#if INT_FFIN
    const float f = __int_as_float(0x4B400000 + IOFF + sum);
    return __float_as_uint(__fmaf_rn(f, 1.0f / IDIV, 12582912.0f - 12582912.0f / IDIV));
#else
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
    return min(q, SB == 1 ? 255u : (unsigned)p.maxval);
#endif
}

FAST_ENTRY(__launch_bounds__(128, REG_MINB)) fast_int(FAST_PLANES_PARAM) {
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
            if (FILTERED(i)) out[i] = finish_int(acc[py][i], p) << SHIFT;
        store_samples(p, e, y0 + py, out);
    }
}
#endif  // INT
