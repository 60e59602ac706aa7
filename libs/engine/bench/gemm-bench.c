/*
 * ot_gemm (f32 and bf16 B) against OpenBLAS's cblas_sgemm (f32 B), side by side, on the engine's
 * product shapes. Build and run through gemm.bench.sh, which compiles with the production flags.
 *
 *   gemm-bench [--threads 1,2] [--reps 7] [--json FILE] [--kernel avx2] [--shape m,n,k,NT ...]
 *
 * OpenBLAS is opened with dlopen (no headers needed); without it the OpenBLAS column is left empty.
 * Each repetition runs the three implementations back to back in rotating order, so drifting load or
 * clock affects them alike; a repetition repeats a product until it has run ≥ 20 ms (small shapes) and
 * the median over repetitions is reported. The load average is recorded at start and end.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../native/gemm.h"

#define OPENBLAS "/usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblas.so.0"

typedef void (*sgemm_fn)(int order, int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda, const float *b, int ldb,
                         float beta, float *c, int ldc);
static sgemm_fn cblas_sgemm;
static void (*openblas_set_num_threads)(int);
static char *(*openblas_get_config)(void);

typedef struct {
  int m, n, k, ta, tb;
  const char *what;
} shape_t;

static const shape_t default_shapes[] = {
    {1024, 4864, 896, 0, 1, "MLP up, forward"},
    {1024, 896, 4864, 0, 1, "MLP down, forward"},
    {1024, 896, 4864, 0, 0, "MLP up, input gradient"},
    {1024, 4864, 896, 0, 0, "MLP down, input gradient"},
    {896, 4864, 1024, 1, 0, "weight gradient"},
    {256, 151936, 896, 0, 1, "LM head"},
    {256, 256, 64, 0, 1, "attention scores"},
    {256, 64, 256, 0, 0, "attention values"},
    {1, 4864, 896, 0, 1, "decode"},
    {8, 4864, 896, 0, 1, "decode, 8 rows"},
    {32, 4864, 896, 0, 1, "decode, 32 rows"},
    {1, 151936, 896, 0, 1, "decode LM head"},
};

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static void loadavg(double out[3]) {
  FILE *f = fopen("/proc/loadavg", "r");
  out[0] = out[1] = out[2] = -1;
  if (f) {
    if (fscanf(f, "%lf %lf %lf", &out[0], &out[1], &out[2]) != 3) out[0] = -1;
    fclose(f);
  }
}

static void cpu_model(char *buf, size_t size) {
  snprintf(buf, size, "unknown");
  FILE *f = fopen("/proc/cpuinfo", "r");
  char line[512];
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, "model name", 10) && strchr(line, ':')) {
      snprintf(buf, size, "%s", strchr(line, ':') + 2);
      buf[strcspn(buf, "\n")] = 0;
      break;
    }
  if (f) fclose(f);
}

static uint16_t to_bf16(float f) { /* round to nearest even */
  uint32_t u;
  memcpy(&u, &f, 4);
  return (uint16_t)((u + 0x7fff + (u >> 16 & 1)) >> 16);
}

typedef struct {
  const shape_t *s;
  const float *A, *B;
  const uint16_t *Bh;
  float *C;
} operands_t;

/* impl 0: ours f32, 1: ours bf16, 2: OpenBLAS */
static void run(const operands_t *o, int impl) {
  const shape_t *s = o->s;
  int lda = s->ta ? s->m : s->k, ldb = s->tb ? s->k : s->n;
  if (impl == 2)
    cblas_sgemm(101, s->ta ? 112 : 111, s->tb ? 112 : 111, s->m, s->n, s->k, 1.f, o->A, lda, o->B, ldb, 0.f, o->C, s->n);
  else
    ot_gemm(s->ta, s->tb, s->m, s->n, s->k, 1.f, o->A, lda, impl ? (const void *)o->Bh : o->B, impl ? OT_BF16 : OT_F32, ldb, 0.f, o->C, s->n);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* GFLOP/s per implementation (median); -1 where it did not run. */
static void measure(const shape_t *s, int reps, double gflops[3]) {
  const size_t a = (size_t)s->m * s->k, b = (size_t)s->k * s->n, c = (size_t)s->m * s->n;
  float *A = malloc(a * 4), *B = malloc(b * 4), *C = malloc(c * 4);
  uint16_t *Bh = malloc(b * 2);
  uint32_t r = 12345;
  for (size_t i = 0; i < a; i++) A[i] = (float)((r = r * 1664525 + 1013904223) >> 8) / 16777216.f - 0.5f;
  for (size_t i = 0; i < b; i++) Bh[i] = to_bf16(B[i] = (float)((r = r * 1664525 + 1013904223) >> 8) / 16777216.f - 0.5f);
  operands_t o = {s, A, B, Bh, C};
  const int impls = cblas_sgemm ? 3 : 2;
  int inner[3];
  double t[3][64];
  for (int i = 0; i < impls; i++) { /* warm up (page faults, packing buffers) and size the repetition */
    run(&o, i);
    double t0 = now();
    run(&o, i);
    double once = now() - t0;
    inner[i] = once >= 0.02 ? 1 : (int)(0.02 / (once > 1e-7 ? once : 1e-7)) + 1;
  }
  for (int rep = 0; rep < reps; rep++)
    for (int q = 0; q < impls; q++) {
      int i = (q + rep) % impls;
      double t0 = now();
      for (int j = 0; j < inner[i]; j++) run(&o, i);
      t[i][rep] = (now() - t0) / inner[i];
    }
  for (int i = 0; i < 3; i++) {
    gflops[i] = -1;
    if (i >= impls) continue;
    qsort(t[i], reps, sizeof(double), cmp_double);
    gflops[i] = 2.0 * s->m * s->n * s->k / t[i][reps / 2] * 1e-9;
  }
  free(A), free(B), free(C), free(Bh);
}

int main(int argc, char **argv) {
  int threads[8] = {1, 2}, nthreads = 2, reps = 7, nshapes = 0;
  const char *json = NULL;
  shape_t shapes[64];
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
      nthreads = 0;
      for (char *p = strtok(argv[++i], ","); p && nthreads < 8; p = strtok(NULL, ",")) threads[nthreads++] = atoi(p);
    } else if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
      reps = atoi(argv[++i]);
      reps = reps < 1 ? 1 : reps > 64 ? 64 : reps;
    } else if (!strcmp(argv[i], "--json") && i + 1 < argc) {
      json = argv[++i];
    } else if (!strcmp(argv[i], "--kernel") && i + 1 < argc) {
      if (ot_gemm_set_kernel(argv[++i])) return fprintf(stderr, "kernel %s: unknown or not supported here\n", argv[i]), 2;
    } else if (!strcmp(argv[i], "--shape") && i + 1 < argc && nshapes < 64) {
      shape_t *s = &shapes[nshapes];
      char t[3] = "NN";
      if (sscanf(argv[++i], "%d,%d,%d,%2s", &s->m, &s->n, &s->k, t) < 3) return fprintf(stderr, "bad --shape %s\n", argv[i]), 2;
      s->ta = t[0] == 'T', s->tb = t[1] == 'T', s->what = "";
      nshapes++;
    } else {
      fprintf(stderr, "usage: %s [--threads 1,2] [--reps 7] [--json FILE] [--kernel avx512|avx2|generic] [--shape m,n,k,NT ...]\n", argv[0]);
      return 2;
    }
  }
  if (!nshapes) {
    nshapes = sizeof default_shapes / sizeof default_shapes[0];
    memcpy(shapes, default_shapes, sizeof default_shapes);
  }

  setenv("OMP_WAIT_POLICY", "PASSIVE", 0); /* as the engine runs: no spinning OpenMP workers */
  void *h = dlopen(OPENBLAS, RTLD_NOW | RTLD_LOCAL);
  if (h) {
    cblas_sgemm = (sgemm_fn)dlsym(h, "cblas_sgemm");
    openblas_set_num_threads = (void (*)(int))dlsym(h, "openblas_set_num_threads");
    openblas_get_config = (char *(*)(void))dlsym(h, "openblas_get_config");
  }
  if (!cblas_sgemm || !openblas_set_num_threads) {
    cblas_sgemm = NULL;
    printf("OpenBLAS not found at %s: comparing nothing, ours only\n", OPENBLAS);
  }

  char cpu[256];
  cpu_model(cpu, sizeof cpu);
  double load0[3], load1[3];
  loadavg(load0);
  printf("cpu: %s\nkernel: %s\nopenblas: %s\nload average at start: %.2f %.2f %.2f\n\n", cpu, ot_gemm_kernel(),
         cblas_sgemm && openblas_get_config ? openblas_get_config() : "-", load0[0], load0[1], load0[2]);
  printf("%-22s %-2s %3s | %9s %9s %9s | %7s %7s\n", "m,n,k", "tr", "thr", "ours f32", "ours bf16", "OpenBLAS", "f32/OB", "bf16/f32");

  FILE *out = json ? fopen(json, "w") : NULL;
  if (json && !out) return perror(json), 1;
  if (out) fprintf(out, "{\n  \"cpu\": \"%s\",\n  \"kernel\": \"%s\",\n  \"openblas\": \"%s\",\n  \"reps\": %d,\n  \"unit\": \"GFLOP/s (median)\",\n  \"results\": [", cpu,
                   ot_gemm_kernel(), cblas_sgemm && openblas_get_config ? openblas_get_config() : "", reps);
  int first = 1;
  for (int ti = 0; ti < nthreads; ti++) {
    ot_set_threads(threads[ti]);
    if (cblas_sgemm) openblas_set_num_threads(threads[ti]);
    for (int si = 0; si < nshapes; si++) {
      const shape_t *s = &shapes[si];
      double g[3];
      measure(s, reps, g);
      char dims[32], ob[16] = "-", ratio[16] = "-";
      snprintf(dims, sizeof dims, "%d,%d,%d", s->m, s->n, s->k);
      if (g[2] > 0) snprintf(ob, sizeof ob, "%.1f", g[2]), snprintf(ratio, sizeof ratio, "%.2f", g[0] / g[2]);
      printf("%-22s %c%c %3d | %9.1f %9.1f %9s | %7s %7.2f   %s\n", dims, s->ta ? 'T' : 'N', s->tb ? 'T' : 'N', threads[ti], g[0], g[1], ob, ratio, g[1] / g[0], s->what);
      fflush(stdout);
      if (out) {
        fprintf(out, "%s\n    {\"m\": %d, \"n\": %d, \"k\": %d, \"trans\": \"%c%c\", \"what\": \"%s\", \"threads\": %d, \"ours_f32\": %.2f, \"ours_bf16\": %.2f, \"openblas_f32\": ", first ? "" : ",",
                s->m, s->n, s->k, s->ta ? 'T' : 'N', s->tb ? 'T' : 'N', s->what, threads[ti], g[0], g[1]);
        if (g[2] > 0) fprintf(out, "%.2f}", g[2]);
        else fprintf(out, "null}");
        first = 0;
      }
    }
  }
  loadavg(load1);
  printf("\nload average at end: %.2f %.2f %.2f\n", load1[0], load1[1], load1[2]);
  if (out) {
    fprintf(out, "\n  ],\n  \"threads\": [");
    for (int ti = 0; ti < nthreads; ti++) fprintf(out, "%s%d", ti ? ", " : "", threads[ti]);
    fprintf(out, "],\n  \"loadavg_start\": [%.2f, %.2f, %.2f],\n  \"loadavg_end\": [%.2f, %.2f, %.2f]\n}\n", load0[0], load0[1], load0[2], load1[0], load1[1], load1[2]);
    fclose(out);
  }
  return 0;
}
