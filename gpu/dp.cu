// Min-plus layer step of the layered-DAG DP engine (one launch per layer; launched by gpu/dp.py).
//
//   next[t, w] = min over slots k of target t:  values[src[k, w], w] + cost[k, w]
//
// Layout (see solvopt/dp/compiled.py): values/next are (n_max, n) with the scenario index w
// contiguous; ptr is (n_max + 1); src/cost are (K, src_width) / (K, cost_width) where the width
// is 1 (shared by every scenario) or n (per scenario); in variant mode (choice != nullptr) the
// width is the number of variants D and scenario w reads column choice[w]. slots (n_max, n) receives the chosen slot
// relative to ptr[t] (-1 when unreachable) when track != 0. Forbidden transitions carry the
// finite sentinel; results >= sentinel / 2 are clamped back to the sentinel. Ties go to the
// lowest slot, as in the NumPy reference.
//
// Two schedules:
//   minplus_scenarios_*: one thread per (target, scenario); a warp reads 32 consecutive
//                        scenarios, so every load is coalesced. For many scenarios.
//   minplus_warp_*:      one warp per (target, scenario); the lanes split the predecessors and
//                        a shuffle reduction takes the (value, slot) minimum. For few scenarios
//                        and large in-degrees (e.g. a single CVRP split).

// The column of src/cost that scenario w reads: its variant, itself, or the shared column 0.
__device__ __forceinline__ int column(const int* choice, int width, int w) {
    return choice != nullptr ? choice[w] : (width > 1 ? w : 0);
}

template <typename Real>
__device__ __forceinline__ void relax(Real x, int j, Real& best, int& arg) {
    if (x < best || (x == best && j < arg)) { best = x; arg = j; }
}

template <typename Real, typename Index>
__device__ __forceinline__ void store(Real best, int arg, Real sentinel, Real* next, Index* slots,
                                      long long at, int track) {
    if (best >= sentinel / 2) { best = sentinel; arg = -1; }
    next[at] = best;
    if (track) slots[at] = (Index)arg;
}

template <typename Real, typename Index>
__device__ void scenarios_step(const Real* values, Real* next, Index* slots, const int* ptr, const int* src,
                               const Real* cost, const int* choice, int n, int n_targets, int src_width,
                               int cost_width, Real sentinel, int track) {
    const int w = blockIdx.x * blockDim.x + threadIdx.x;
    const int t = blockIdx.y;
    if (w >= n) return;
    const long long at = (long long)t * n + w;
    Real best = sentinel;
    int arg = -1;
    if (t < n_targets) {
        const int lo = ptr[t], hi = ptr[t + 1];
        const int sw = column(choice, src_width, w);
        const int cw = column(choice, cost_width, w);
        for (int k = lo; k < hi; ++k) {
            const int s = src[(long long)k * src_width + sw];
            const Real x = values[(long long)s * n + w] + cost[(long long)k * cost_width + cw];
            if (x < best) { best = x; arg = k - lo; }
        }
    }
    store(best, arg, sentinel, next, slots, at, track);
}

template <typename Real, typename Index>
__device__ void warp_step(const Real* values, Real* next, Index* slots, const int* ptr, const int* src,
                          const Real* cost, const int* choice, int n, int n_max, int n_targets, int src_width,
                          int cost_width, Real sentinel, int track) {
    const long long warp = ((long long)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const int lane = threadIdx.x % 32;
    if (warp >= (long long)n_max * n) return;      // whole warps exit together
    const int t = (int)(warp / n);
    const int w = (int)(warp % n);
    Real best = sentinel;
    int arg = 0x7fffffff;
    if (t < n_targets) {
        const int lo = ptr[t], hi = ptr[t + 1];
        const int sw = column(choice, src_width, w);
        const int cw = column(choice, cost_width, w);
        for (int k = lo + lane; k < hi; k += 32) {
            const int s = src[(long long)k * src_width + sw];
            relax(values[(long long)s * n + w] + cost[(long long)k * cost_width + cw], k - lo, best, arg);
        }
    }
    for (int offset = 16; offset > 0; offset >>= 1) {
        const Real other = __shfl_down_sync(0xffffffffu, best, offset);
        const int other_arg = __shfl_down_sync(0xffffffffu, arg, offset);
        relax(other, other_arg, best, arg);
    }
    if (lane == 0) {
        if (arg == 0x7fffffff) arg = -1;
        store(best, arg, sentinel, next, slots, (long long)t * n + w, track);
    }
}

// choice: the layer's (n,) variant indices, or a null pointer (has_choice == 0).
#define MINPLUS_ENTRY(SUFFIX, REAL, INDEX)                                                                   \
extern "C" __global__ void minplus_scenarios_##SUFFIX(                                                       \
        const REAL* values, REAL* next, INDEX* slots, const int* ptr, const int* src, const REAL* cost,     \
        const int* choice, int has_choice, int n, int n_targets, int src_width, int cost_width,             \
        REAL sentinel, int track) {                                                                          \
    scenarios_step<REAL, INDEX>(values, next, slots, ptr, src, cost, has_choice ? choice : nullptr, n,      \
                                n_targets, src_width, cost_width, sentinel, track);                          \
}                                                                                                            \
extern "C" __global__ void minplus_warp_##SUFFIX(                                                            \
        const REAL* values, REAL* next, INDEX* slots, const int* ptr, const int* src, const REAL* cost,     \
        const int* choice, int has_choice, int n, int n_max, int n_targets, int src_width, int cost_width,  \
        REAL sentinel, int track) {                                                                          \
    warp_step<REAL, INDEX>(values, next, slots, ptr, src, cost, has_choice ? choice : nullptr, n, n_max,    \
                           n_targets, src_width, cost_width, sentinel, track);                               \
}

MINPLUS_ENTRY(f64_i16, double, short)
MINPLUS_ENTRY(f64_i32, double, int)
MINPLUS_ENTRY(f32_i16, float, short)
MINPLUS_ENTRY(f32_i32, float, int)
