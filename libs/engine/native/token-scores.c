/* The fused language-model head: see token-scores.h. */
#include "token-scores.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Rows per block: large enough that the head's product runs at full speed, small enough that the block's
 * logits (rows × vocab floats: 19 MB at 32 × 151,936) stay a modest scratch buffer. */
#define BLOCK_ROWS 32

/* One scratch buffer, grown on demand and kept: the head runs on every pass. */
static float *scratch = NULL;
static size_t scratch_floats = 0;

static float *scratch_for(size_t floats) {
  if (floats <= scratch_floats) return scratch;
  free(scratch);
  scratch = NULL;
  scratch_floats = 0;
  void *p = NULL;
  if (posix_memalign(&p, 64, floats * sizeof(float)) != 0) return NULL;
  scratch = p;
  scratch_floats = floats;
  return scratch;
}

/* Row statistics in double: a float sum over 150k terms would lose about four digits. */
static void row_stats(const float *z, int64_t vocab, double *max_out, double *sum_out, double *dot_out) {
  float max = z[0];
  for (int64_t v = 1; v < vocab; v++) max = z[v] > max ? z[v] : max;
  double sum = 0, dot = 0;
  for (int64_t v = 0; v < vocab; v++) {
    double e = exp((double)z[v] - max);
    sum += e;
    dot += e * z[v];
  }
  *max_out = max;
  *sum_out = sum;
  *dot_out = dot;
}

int ot_token_scores(const float *h, int64_t n, int64_t d, const void *W, ot_dtype wtype, int64_t vocab, const int32_t *targets,
                    float *logp, float *lse, float *entropy) {
  float *z = scratch_for((size_t)BLOCK_ROWS * (size_t)vocab);
  if (!z) return -1;
  for (int64_t r0 = 0; r0 < n; r0 += BLOCK_ROWS) {
    int64_t rows = n - r0 < BLOCK_ROWS ? n - r0 : BLOCK_ROWS;
    ot_gemm(0, 1, rows, vocab, d, 1.0f, h + r0 * d, d, W, wtype, d, 0.0f, z, vocab);
    for (int64_t i = 0; i < rows; i++) {
      const float *zr = z + i * vocab;
      double max, sum, dot;
      row_stats(zr, vocab, &max, &sum, &dot);
      double l = max + log(sum);
      lse[r0 + i] = (float)l;
      logp[r0 + i] = (float)((double)zr[targets[r0 + i]] - l);
      /* H = lse - E_p[z] */
      if (entropy) entropy[r0 + i] = (float)(l - dot / sum);
    }
  }
  return 0;
}

int ot_token_scores_grad(const float *h, int64_t n, int64_t d, const void *W, ot_dtype wtype, int64_t vocab, const int32_t *targets,
                         const float *lse, const float *entropy, const float *dlogp, const float *dent, float *dh, float *dW) {
  /* Scratch: the block's logits, then the compacted hidden rows it was computed from. */
  float *z = scratch_for((size_t)BLOCK_ROWS * (size_t)(vocab + d));
  if (!z) return -1;
  float *hb = z + (size_t)BLOCK_ROWS * (size_t)vocab;
  int64_t active[BLOCK_ROWS];
  memset(dh, 0, (size_t)n * (size_t)d * sizeof(float));
  int64_t next = 0;
  while (next < n) {
    /* Gather up to BLOCK_ROWS rows that carry a coefficient: in RL the prompt's rows carry none. */
    int64_t rows = 0;
    for (; next < n && rows < BLOCK_ROWS; next++) {
      if (dlogp[next] != 0.0f || (dent && dent[next] != 0.0f)) {
        active[rows] = next;
        memcpy(hb + rows * d, h + next * d, (size_t)d * sizeof(float));
        rows++;
      }
    }
    if (rows == 0) break;
    ot_gemm(0, 1, rows, vocab, d, 1.0f, hb, d, W, wtype, d, 0.0f, z, vocab);
    for (int64_t i = 0; i < rows; i++) {
      int64_t r = active[i];
      float *zr = z + i * vocab;
      const float a = dlogp[r];
      const float e = dent ? dent[r] : 0.0f;
      const float l = lse[r];
      const float hr = entropy ? entropy[r] : 0.0f;
      /* dlogp_t/dz_v = δ_vt − p_v;  dH/dz_v = −p_v (log p_v + H). */
      if (e == 0.0f) {
        for (int64_t v = 0; v < vocab; v++) zr[v] = -a * expf(zr[v] - l);
      } else {
        for (int64_t v = 0; v < vocab; v++) {
          float lp = zr[v] - l, p = expf(lp);
          zr[v] = -a * p - e * p * (lp + hr);
        }
      }
      zr[targets[r]] += a;
    }
    /* dh rows = dz · W; dW += dzᵀ · h. */
    ot_gemm(0, 0, rows, d, vocab, 1.0f, z, vocab, W, wtype, d, 0.0f, hb, d);
    for (int64_t i = 0; i < rows; i++) memcpy(dh + active[i] * d, hb + i * d, (size_t)d * sizeof(float));
    if (dW) {
      /* hb now holds dh; the forward rows are needed again for dW. */
      for (int64_t i = 0; i < rows; i++) memcpy(hb + i * d, h + active[i] * d, (size_t)d * sizeof(float));
      ot_gemm(1, 0, vocab, d, rows, 1.0f, z, vocab, hb, OT_F32, d, 1.0f, dW, d);
    }
  }
  return 0;
}
