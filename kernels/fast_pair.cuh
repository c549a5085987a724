// One launch over the two planes of a frame whose planes take two different `fast`
// specializations (NV12's luma and interleaved chroma, P010's): fast.cu compiled twice, once in
// namespace fast_a for plane 0 and once in fast_b for plane 1 (the host's ModuleKey::FastPair
// builds the source), and this kernel, whose blocks are plane 0's, numbered row by row, then
// plane 1's. Each block waits in fast_follow (a programmatic dependent launch, fast.cu) and then
// runs its plane's entry point, which is the very code of that specialization's own kernel. Both
// planes' blocks take the launch's one block shape (the host pairs only specializations that
// chose the same) and its dynamic shared memory (the larger of the two).
//
// Defines supplied by the host: PAIR_A and PAIR_B (the entry point of each: fast_full,
// fast_sep, fast_reg or fast_int), PAIR_A_TILED and PAIR_B_TILED (1: the entry point takes
// the tile stride, as the tiled kernels do), PAIR_TB and PAIR_MINB (the launch bounds: threads
// a block and resident blocks per multiprocessor at least; none when PAIR_MINB is 0).

// The launch's planes (FastPair in src/backend/cuda/abi.rs, its size checked below): plane 1's
// blocks are first_b .. gridDim.x - 1; gx[k] blocks to a row of plane k; ts[k] its tile stride.
struct FastPair {
    PlaneParams p[2];
    int first_b;
    int gx[2];
    int ts[2];
};
static_assert(sizeof(FastPair) == CONVFLOW_FAST_PAIR_SIZE, "FastPair size differs from Rust's");

#if PAIR_A_TILED
#define PAIR_A_ARGS(s, bx, by) (s).p[0], bx, by, (s).ts[0]
#else
#define PAIR_A_ARGS(s, bx, by) (s).p[0], bx, by
#endif
#if PAIR_B_TILED
#define PAIR_B_ARGS(s, bx, by) (s).p[1], bx, by, (s).ts[1]
#else
#define PAIR_B_ARGS(s, bx, by) (s).p[1], bx, by
#endif
#if PAIR_MINB > 0
#define PAIR_BOUNDS __launch_bounds__(PAIR_TB, PAIR_MINB)
#else
#define PAIR_BOUNDS
#endif

extern "C" __global__ void PAIR_BOUNDS fast_pair(const __grid_constant__ FastPair s) {
    fast_a::fast_follow();
    const int b = blockIdx.x;
    if (b < s.first_b) {
        const int by = b / s.gx[0];
        fast_a::PAIR_A(PAIR_A_ARGS(s, b - by * s.gx[0], by));
    } else {
        const int c = b - s.first_b, by = c / s.gx[1];
        fast_b::PAIR_B(PAIR_B_ARGS(s, c - by * s.gx[1], by));
    }
}
