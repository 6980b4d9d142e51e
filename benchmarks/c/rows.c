/* W3 row softmax and row layernorm on a row-major [rows, cols] f32 matrix.
 *
 * Rows are split across 2 OpenMP threads; each row (4 KB at 1024 columns) stays in L1 while
 * its passes run, so main memory is read once and written once.
 */
#include <stdint.h>
#include <math.h>
#include "fastmath.h"

void softmax_rows(const float *restrict x, float *restrict out, int64_t rows, int64_t cols) {
    #pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *o = out + r * cols;
        float m = -INFINITY;
        #pragma omp simd reduction(max:m)
        for (int64_t j = 0; j < cols; j++)
            m = xr[j] > m ? xr[j] : m;
        float s = 0.0f;
        #pragma omp simd reduction(+:s)
        for (int64_t j = 0; j < cols; j++) {
            float e = bench_expf(xr[j] - m);
            o[j] = e;
            s += e;
        }
        /* e / sum(e), as the workload (and XLA) define it: a multiply by 1/s would be
           faster but rounds differently */
        #pragma omp simd
        for (int64_t j = 0; j < cols; j++)
            o[j] /= s;
    }
}

void layernorm_rows(const float *restrict x, const float *restrict gamma,
                    const float *restrict beta, float *restrict out, int64_t rows,
                    int64_t cols, float eps) {
    #pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *o = out + r * cols;
        float s = 0.0f;
        #pragma omp simd reduction(+:s)
        for (int64_t j = 0; j < cols; j++)
            s += xr[j];
        float mean = s / (float)cols;
        float ss = 0.0f;
        #pragma omp simd reduction(+:ss)
        for (int64_t j = 0; j < cols; j++) {
            float d = xr[j] - mean;
            ss += d * d;
        }
        float inv = 1.0f / sqrtf(ss / (float)cols + eps);
        #pragma omp simd
        for (int64_t j = 0; j < cols; j++)
            o[j] = (xr[j] - mean) * inv * gamma[j] + beta[j];
    }
}
