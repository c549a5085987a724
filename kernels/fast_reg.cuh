// Part of fast.cu, inlined at its end and compiled under its defines (see fast.cu's header):
// the register kernels (REG), which hold their windows in registers and use no shared memory:
// fast_reg on f32 weights here, fast_int on exact integer ones in fast_int.cuh (INT).

#if REG
// A register kernel thread's first output sample e and first row y0 in block (bx, by) of its
// plane, and the words of its window; false for a thread past the plane, which has nothing to
// do.
__device__ __forceinline__ bool reg_thread(const PlaneParams& p, int bx, int by, int& e, int& y0, unsigned words[RIN][NWR]) {
    e = (bx * blockDim.x + threadIdx.x) * PX;
    y0 = (by * blockDim.y + threadIdx.y) * PY;
    if (e >= p.width * CH || y0 >= p.height) return false;
    window_words<RIN>(p, e, y0, words);
    return true;
}

// A register kernel thread's PY x PX sums (f32 or exact integers), zeroed.
template <class T>
__device__ __forceinline__ void zero_acc(T acc[PY][PX]) {
#pragma unroll
    for (int py = 0; py < PY; ++py)
#pragma unroll
        for (int i = 0; i < PX; ++i) acc[py][i] = T(0);
}

#if !INT
// REG_MINB blocks of 128 threads per multiprocessor at least: caps the registers so that the
// loads of enough warps are in flight.
FAST_ENTRY(__launch_bounds__(128, REG_MINB)) fast_reg(FAST_PLANES_PARAM) {
    FAST_PLANE
    int e, y0;
    unsigned words[RIN][NWR];
    if (!reg_thread(p, bx, by, e, y0, words)) return;
    float acc[PY][PX];
    zero_acc(acc);
#pragma unroll
    for (int r = 0; r < RIN; ++r) {
        float v[SEG];
#pragma unroll
        for (int j = 0; j < SEG; ++j) v[j] = word_value(words[r][(j + OFF) / SPW], (j + OFF) % SPW);
        reg_accumulate(r, v, acc);
    }
#pragma unroll
    for (int py = 0; py < PY; ++py) {
        if (y0 + py >= p.height) continue;
        unsigned out[PX];
        keep_from_words(words[AY + py], out);
        finish_acc(p, acc[py], out);
        store_samples(p, e, y0 + py, out);
    }
}
#endif  // !INT

#include "fast_int.cuh"
#endif  // REG
