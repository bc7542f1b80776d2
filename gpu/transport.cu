// Transport distance kernels on the GPU: one thread per row (grid-stride), the CUDA twins of
// solvopt/transport/kernels_numpy.py (signatures and arithmetic documented there; launched by
// gpu/transport.py). A distance is the per-axis terms accumulated in axis order (diff*diff,
// |diff| or max |diff| by metric 0 euclidean, 1 cityblock, 2 chebyshev) then one sqrt for
// euclidean; products and sums are rounded on their own (__dmul_rn, __dadd_rn: no fused
// multiply-add), so distances agree with the CPU kernels to the bit and a comparison
// d < radius[i] decides the same bunch everywhere. Points are row-major float64 (rows, dim).

__device__ __forceinline__ double tr_dist(const double* __restrict__ x, long long i, const double* __restrict__ y,
                                          long long j, int dim, int metric) {
    double acc = 0.0;
    const double* a = x + i * dim;
    const double* b = y + j * dim;
    for (int axis = 0; axis < dim; ++axis) {
        const double diff = __dsub_rn(a[axis], b[axis]);
        if (metric == 0) {
            acc = __dadd_rn(acc, __dmul_rn(diff, diff));
        } else if (metric == 1) {
            acc = __dadd_rn(acc, fabs(diff));
        } else {
            acc = fmax(acc, fabs(diff));
        }
    }
    return metric == 0 ? sqrt(acc) : acc;
}

extern "C" __global__ void tr_distances(const double* __restrict__ x, long long nx, const double* __restrict__ y,
                                        long long ny, int dim, int metric, double* __restrict__ out) {
    const long long total = nx * ny;
    for (long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x; t < total;
         t += (long long)gridDim.x * blockDim.x) {
        out[t] = tr_dist(x, t / ny, y, t % ny, dim, metric);
    }
}

extern "C" __global__ void tr_pair_distances(const double* __restrict__ x, const double* __restrict__ y,
                                             const long long* __restrict__ i, const long long* __restrict__ j,
                                             long long count, int dim, int metric, double* __restrict__ out) {
    for (long long k = blockIdx.x * (long long)blockDim.x + threadIdx.x; k < count;
         k += (long long)gridDim.x * blockDim.x) {
        out[k] = tr_dist(x, i[k], y, j[k], dim, metric);
    }
}

extern "C" __global__ void tr_nearest(const double* __restrict__ x, long long nx, const double* __restrict__ c,
                                      long long nc, int dim, int metric, long long* __restrict__ index,
                                      double* __restrict__ dist) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < nx;
         i += (long long)gridDim.x * blockDim.x) {
        double best = 1.0 / 0.0;
        long long arg = 0;
        for (long long k = 0; k < nc; ++k) {
            const double d = tr_dist(x, i, c, k, dim, metric);
            if (d < best) { best = d; arg = k; }
        }
        index[i] = arg;
        dist[i] = best;
    }
}

extern "C" __global__ void tr_bunch_counts(const double* __restrict__ x, long long nx, const double* __restrict__ y,
                                           long long ny, int dim, int metric, const double* __restrict__ radius,
                                           long long* __restrict__ counts) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < nx;
         i += (long long)gridDim.x * blockDim.x) {
        long long count = 0;
        const double r = radius[i];
        for (long long j = 0; j < ny; ++j) count += tr_dist(x, i, y, j, dim, metric) < r;
        counts[i] = count;
    }
}

extern "C" __global__ void tr_bunch_fill(const double* __restrict__ x, long long nx, const double* __restrict__ y,
                                         long long ny, int dim, int metric, const double* __restrict__ radius,
                                         const long long* __restrict__ indptr, long long* __restrict__ cols,
                                         double* __restrict__ dist) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < nx;
         i += (long long)gridDim.x * blockDim.x) {
        long long at = indptr[i];
        const double r = radius[i];
        for (long long j = 0; j < ny; ++j) {
            const double d = tr_dist(x, i, y, j, dim, metric);
            if (d < r) { cols[at] = j; dist[at] = d; ++at; }
        }
    }
}
