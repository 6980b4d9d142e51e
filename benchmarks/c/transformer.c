/* W6 transformer block forward (pre-layernorm), hand-fused around OpenBLAS sgemm.
 *
 *   h  = layernorm(x; g1, b1)
 *   q, k, v = h @ wq + bq, h @ wk + bk, h @ wv + bv         [T, D], T = batch * seq
 *   per (batch, head): o = softmax(q k^T / sqrt(hd)) v       written straight into [T, D]
 *   x1 = x + o @ wo + bo
 *   out = x1 + gelu(layernorm(x1; g2, b2) @ w1 + c1) @ w2 + c2
 *
 * Matrix products call the same OpenBLAS as xlapy's CPU backend (scipy-openblas32, its own
 * threads); the row-wise parts are fused OpenMP loops, and biases and residuals are folded
 * into the sgemm output (beta = 1). `ws` is a caller-owned workspace of
 * block_workspace_floats(...) floats.
 */
#include <stdint.h>
#include <math.h>
#include "fastmath.h"

enum { RowMajor = 101, NoTrans = 111, Trans = 112 };
void scipy_cblas_sgemm(int order, int transa, int transb, int m, int n, int k, float alpha,
                       const float *a, int lda, const float *b, int ldb, float beta, float *c,
                       int ldc);

static void gemm(int m, int n, int k, float alpha, const float *a, int lda, int transb,
                 const float *b, int ldb, float beta, float *c, int ldc) {
    scipy_cblas_sgemm(RowMajor, NoTrans, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

static void layernorm(const float *restrict x, const float *restrict g,
                      const float *restrict b, float *restrict out, int64_t rows, int64_t d) {
    #pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * d;
        float *o = out + r * d;
        float s = 0.0f, ss = 0.0f;
        #pragma omp simd reduction(+:s)
        for (int64_t j = 0; j < d; j++) s += xr[j];
        float mean = s / (float)d;
        #pragma omp simd reduction(+:ss)
        for (int64_t j = 0; j < d; j++) { float t = xr[j] - mean; ss += t * t; }
        float inv = 1.0f / sqrtf(ss / (float)d + 1e-5f);
        #pragma omp simd
        for (int64_t j = 0; j < d; j++) o[j] = (xr[j] - mean) * inv * g[j] + b[j];
    }
}

/* out[r, :] = (base ? base[r, :] : 0) + bias for every row (the sgemm then adds into it). */
static void fill_rows(const float *restrict base, const float *restrict bias,
                      float *restrict out, int64_t rows, int64_t d) {
    #pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; r++) {
        float *o = out + r * d;
        if (base) {
            const float *br = base + r * d;
            #pragma omp simd
            for (int64_t j = 0; j < d; j++) o[j] = br[j] + bias[j];
        } else {
            #pragma omp simd
            for (int64_t j = 0; j < d; j++) o[j] = bias[j];
        }
    }
}

static void softmax_inplace(float *restrict p, int64_t rows, int64_t cols) {
    #pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; r++) {
        float *row = p + r * cols;
        float m = -INFINITY, s = 0.0f;
        #pragma omp simd reduction(max:m)
        for (int64_t j = 0; j < cols; j++) m = row[j] > m ? row[j] : m;
        #pragma omp simd reduction(+:s)
        for (int64_t j = 0; j < cols; j++) { float e = bench_expf(row[j] - m); row[j] = e; s += e; }
        float inv = 1.0f / s;
        #pragma omp simd
        for (int64_t j = 0; j < cols; j++) row[j] *= inv;
    }
}

static void bias_gelu(float *restrict a, const float *restrict bias, int64_t rows, int64_t f) {
    #pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; r++) {
        float *row = a + r * f;
        #pragma omp simd
        for (int64_t j = 0; j < f; j++) row[j] = bench_gelu(row[j] + bias[j]);
    }
}

int64_t block_workspace_floats(int64_t batch, int64_t seq, int64_t d, int64_t f) {
    int64_t t = batch * seq;
    return 6 * t * d + t * f + seq * seq;
}

void block_forward(const float *x, const float *g1, const float *b1, const float *wq,
                   const float *bq, const float *wk, const float *bk, const float *wv,
                   const float *bv, const float *wo, const float *bo, const float *g2,
                   const float *b2, const float *w1, const float *c1, const float *w2,
                   const float *c2, float *out, float *ws, int64_t batch, int64_t seq,
                   int64_t d, int64_t heads, int64_t f) {
    int64_t t = batch * seq, hd = d / heads;
    float *h = ws, *q = h + t * d, *k = q + t * d, *v = k + t * d, *o = v + t * d;
    float *x1 = o + t * d, *a = x1 + t * d, *p = a + t * f;

    layernorm(x, g1, b1, h, t, d);
    fill_rows(NULL, bq, q, t, d);
    fill_rows(NULL, bk, k, t, d);
    fill_rows(NULL, bv, v, t, d);
    gemm(t, d, d, 1.0f, h, d, NoTrans, wq, d, 1.0f, q, d);
    gemm(t, d, d, 1.0f, h, d, NoTrans, wk, d, 1.0f, k, d);
    gemm(t, d, d, 1.0f, h, d, NoTrans, wv, d, 1.0f, v, d);

    float scale = 1.0f / sqrtf((float)hd);
    for (int64_t b = 0; b < batch; b++) {
        for (int64_t hh = 0; hh < heads; hh++) {
            int64_t off = b * seq * d + hh * hd;
            gemm(seq, seq, hd, scale, q + off, d, Trans, k + off, d, 0.0f, p, seq);
            softmax_inplace(p, seq, seq);
            gemm(seq, hd, seq, 1.0f, p, seq, NoTrans, v + off, d, 0.0f, o + off, d);
        }
    }

    fill_rows(x, bo, x1, t, d);
    gemm(t, d, d, 1.0f, o, d, NoTrans, wo, d, 1.0f, x1, d);
    layernorm(x1, g2, b2, h, t, d);
    gemm(t, f, d, 1.0f, h, d, NoTrans, w1, f, 0.0f, a, f);
    bias_gelu(a, c1, t, f);
    fill_rows(x1, c2, out, t, d);
    gemm(t, d, f, 1.0f, a, f, NoTrans, w2, d, 1.0f, out, d);
}
