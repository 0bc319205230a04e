/* Quantised rows: activation formats, dequantisation and dot products of a weight row with an activation row. */
#ifndef LL_QUANTS_H
#define LL_QUANTS_H

#include <stddef.h>

#include "blocks.h"

/* The activation format a weight type's dot product reads (as llama.cpp pairs them), or -1. */
int activation_type(int weight_type);
size_t row_bytes(int type, int n);
int block_elements(int type);
void quantize_activation(int type, const float *x, void *out, int n);
void quantize_q8_0(const float *x, void *out, int n);
void quantize_q8_1(const float *x, void *out, int n);
void quantize_q8_K(const float *x, void *out, int n);
int dequantize_row(int type, const void *row, float *y, int n);

/* sum_i w[i] * a[i] over n elements; a is in activation_type(type)'s format. */
float dot_reference(int type, int n, const void *w, const void *a);

/* Whether dots_avx512.c has the quant types' kernels in this build (then dots.c leaves out its AVX2 ones). */
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512DQ__) && \
    defined(__AVX512VNNI__)
#define LL_AVX512_DOTS 1
#else
#define LL_AVX512_DOTS 0
#endif

/* R (1..4) weight rows w_stride bytes apart against C (1..DOT_ROWS) activation rows a_stride apart:
 * out[i * C + j] = w_i . a_j. */
#define DOT_ROWS 4
typedef void (*dot_tile_fn)(int n, const void *w, size_t w_stride, const void *a, size_t a_stride, int R, int C,
                            float *out);
dot_tile_fn dot_tile_for(int type);
/* The instruction set the kernels were built for, e.g. "avx2". */
const char *kernel_isa(void);

#endif
