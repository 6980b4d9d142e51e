/* W1 sum(x + y*z) and W2 mean(3*x**2 + y): one fused pass over the inputs, 2 OpenMP threads.
 *
 * Each thread sums fixed blocks with a vector (simd) f32 accumulator and adds the block sums
 * into a double, so the result is as accurate as NumPy's pairwise sum at the same speed.
 */
#include <stdint.h>

#define BLOCK 8192

float w1_sum_xyz(const float *restrict x, const float *restrict y, const float *restrict z,
                 int64_t n) {
    double total = 0.0;
    #pragma omp parallel for reduction(+:total) schedule(static)
    for (int64_t b = 0; b < n; b += BLOCK) {
        int64_t e = b + BLOCK < n ? b + BLOCK : n;
        float s = 0.0f;
        #pragma omp simd reduction(+:s)
        for (int64_t i = b; i < e; i++)
            s += x[i] + y[i] * z[i];
        total += s;
    }
    return (float)total;
}

float w2_mean_3x2_y(const float *restrict x, const float *restrict y, int64_t n) {
    double total = 0.0;
    #pragma omp parallel for reduction(+:total) schedule(static)
    for (int64_t b = 0; b < n; b += BLOCK) {
        int64_t e = b + BLOCK < n ? b + BLOCK : n;
        float s = 0.0f;
        #pragma omp simd reduction(+:s)
        for (int64_t i = b; i < e; i++)
            s += 3.0f * x[i] * x[i] + y[i];
        total += s;
    }
    return (float)(total / (double)n);
}
