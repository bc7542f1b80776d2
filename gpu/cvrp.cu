// Stochastic CVRP split on the GPU: one thread per demand scenario (grid-stride over a chunk).
//
// The kernels have the signature of solvopt/cvrp/kernels_numpy.py (scenario_costs; launched by
// gpu/cvrp.py) and evaluate its recursion, operation for operation:
//   value[0] = entry[0];  best = min over p < i with load(p+1..i) <= Q of value[p]
//   (the one-customer route p = i-1 by the policy: penalty lam * (q - Q) extra, or the
//   scenario is infeasible);  value[i] = best + (entry[i] + exit[i]);  J(n) = best + exit[n].
// The penalty product is rounded on its own (__dmul_rn, no fused multiply-add), so the costs
// match the CPU kernels to the bit. value[] and the prefix loads live in a per-thread scratch
// laid out [p * nthreads + thread] so that a warp's accesses coalesce; entry/exit and the tour
// sit in shared memory when they fit. out[s] = J(n) of scenario first + s, +inf when infeasible;
// the launcher reduces out on the device into the chunk's statistics.
//
// Demands come from a matrix (split_matrix) or are sampled in the kernel (split_fused) with
// the stream of solvopt/cvrp/sampling.py: Philox4x32-10 (our own, no cuRAND), key = (k0, k1),
// counter = (w lo, w hi, customer / 2, 0), 64-bit word o0:o1 (even customer) or o2:o3 (odd),
// u = (word >> 11) * 2^-53, Poisson by inversion through a guide table. Same key, same
// demands as the CPU kernels.

#define SPLIT_BIG 1e300
#define SPLIT_BLOCK 128

typedef unsigned int u32;
typedef unsigned long long u64;

__device__ __forceinline__ void philox4x32_10(u32 c[4], u32 k0, u32 k1) {
#pragma unroll
    for (int r = 0; r < 10; ++r) {
        const u32 hi0 = __umulhi(0xD2511F53u, c[0]);
        const u32 lo0 = 0xD2511F53u * c[0];
        const u32 hi1 = __umulhi(0xCD9E8D57u, c[2]);
        const u32 lo1 = 0xCD9E8D57u * c[2];
        const u32 n0 = hi1 ^ c[1] ^ k0;
        const u32 n2 = hi0 ^ c[3] ^ k1;
        c[0] = n0; c[1] = lo1; c[2] = n2; c[3] = lo0;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
}

// Poisson demand of customer c (0-based, instance order) in scenario w.
__device__ __forceinline__ int sample_demand(long long w, int c, u32 k0, u32 k1,
                                             const double* __restrict__ cdf, const long long* __restrict__ cdf_start,
                                             const int* __restrict__ guide, const long long* __restrict__ guide_start) {
    u32 ctr[4] = {(u32)((u64)w & 0xFFFFFFFFull), (u32)((u64)w >> 32), (u32)(c >> 1), 0u};
    philox4x32_10(ctr, k0, k1);
    const u64 word = (c & 1) ? (((u64)ctr[2] << 32) | ctr[3]) : (((u64)ctr[0] << 32) | ctr[1]);
    const double u = (double)(word >> 11) * 1.1102230246251565e-16;   // 2^-53
    const long long base = cdf_start[c];
    const long long g = guide_start[c];
    const long long m = guide_start[c + 1] - g;
    int k = guide[g + (long long)(u * (double)m)];
    while (cdf[base + k] <= u) ++k;
    return k;
}

template <bool FUSED>
__device__ void split_scenarios(const int* __restrict__ demands, int ncust, long long first, long long count,
                                u32 k0, u32 k1, const double* __restrict__ cdf, const long long* __restrict__ cdf_start,
                                const int* __restrict__ guide, const long long* __restrict__ guide_start,
                                const long long* __restrict__ tour0_g, int n, const double* __restrict__ entry_g,
                                const double* __restrict__ exit_g, int cap, double lam, int penalise,
                                double* __restrict__ value, int* __restrict__ prefix, double* __restrict__ out,
                                int use_shared) {
    extern __shared__ double smem[];
    const double* entry = entry_g;
    const double* exit_ = exit_g;
    const long long* tour0 = tour0_g;
    if (use_shared) {
        double* s_entry = smem;
        double* s_exit = smem + n;
        long long* s_tour = (long long*)(smem + 2 * n + 1);
        for (int k = threadIdx.x; k < n; k += blockDim.x) {
            s_entry[k] = entry_g[k];
            s_tour[k] = tour0_g[k];
        }
        for (int k = threadIdx.x; k <= n; k += blockDim.x) s_exit[k] = exit_g[k];
        __syncthreads();
        entry = s_entry;
        exit_ = s_exit;
        tour0 = s_tour;
    }
    const double inf = __longlong_as_double(0x7FF0000000000000LL);
    const long long nthreads = (long long)gridDim.x * blockDim.x;
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    for (long long s = t; s < count; s += nthreads) {
        const long long w = first + s;
        bool bad = false;
        double prev = entry[0];          // value[i - 1]
        int load = 0;
        double last = 0.0;
        value[t] = prev;
        prefix[t] = 0;
        for (int i = 1; i <= n; ++i) {
            const int c = (int)tour0[i - 1];
            const int q = FUSED ? sample_demand(w, c, k0, k1, cdf, cdf_start, guide, guide_start)
                                : demands[s * ncust + c];
            load += q;
            prefix[(long long)i * nthreads + t] = load;
            const int thr = load - cap;
            double best;
            if (penalise) {
                best = __dadd_rn(prev, __dmul_rn(lam, (double)max(q - cap, 0)));
            } else if (q > cap) {
                bad = true;
                best = SPLIT_BIG;
            } else {
                best = prev;
            }
            for (int p = i - 2; p >= 0; --p) {
                if (prefix[(long long)p * nthreads + t] < thr) break;
                best = fmin(best, value[(long long)p * nthreads + t]);
            }
            const double ex = exit_[i];
            if (i < n) {
                prev = best + (entry[i] + ex);
                value[(long long)i * nthreads + t] = prev;
            } else {
                last = best + ex;
            }
        }
        out[s] = bad ? inf : last;
    }
}

extern "C" __global__ void __launch_bounds__(SPLIT_BLOCK)
split_matrix(const int* __restrict__ demands, int ncust, long long count,
             const long long* __restrict__ tour0, int n, const double* __restrict__ entry,
             const double* __restrict__ exit_, int cap, double lam, int penalise,
             double* __restrict__ value, int* __restrict__ prefix, double* __restrict__ out, int use_shared) {
    split_scenarios<false>(demands, ncust, 0, count, 0u, 0u, nullptr, nullptr, nullptr, nullptr, tour0, n, entry,
                           exit_, cap, lam, penalise, value, prefix, out, use_shared);
}

extern "C" __global__ void __launch_bounds__(SPLIT_BLOCK)
split_fused(long long first, long long count, unsigned int k0, unsigned int k1,
            const double* __restrict__ cdf, const long long* __restrict__ cdf_start,
            const int* __restrict__ guide, const long long* __restrict__ guide_start,
            const long long* __restrict__ tour0, int n, const double* __restrict__ entry,
            const double* __restrict__ exit_, int cap, double lam, int penalise,
            double* __restrict__ value, int* __restrict__ prefix, double* __restrict__ out, int use_shared) {
    split_scenarios<true>(nullptr, 0, first, count, k0, k1, cdf, cdf_start, guide, guide_start, tour0, n, entry,
                          exit_, cap, lam, penalise, value, prefix, out, use_shared);
}
