/* The GEMM of a prompt's pass on AMX's tiles (Intel Sapphire Rapids and later), where the build and the OS allow.
 *
 * The integer part of each sub-block, 16 weight rows by 16 tokens, is one tile product (tdpbsud: the unpacked
 * weights' signed bytes against the panel's unsigned ones, whose 16-token groups of four bytes are the B tile's
 * layout as they stand). A product of whole numbers is exact in any order, so each (row, token) gets the very
 * integers the AVX-512 GEMM and the decode kernels sum, and the float steps after it are theirs, in their order:
 * the same bits (the batch-invariance tests run this path where it is on).
 * benchmarks/gemm_tiles.py (ll_gemm_rows, one thread, 2,048 x 2,048 by 512 tokens, Xeon AMX), the tiles against the
 * AVX-512 GEMM: Q4_0 7.2 / 10.4 ms, Q4_K 5.5 / 10.6, Q5_K 10.6 / 14.2, Q6_K 6.7 / 10.3; the tiles' own work is 7-31%
 * of their int8 ceiling (8.0 TOPS on one thread in that run): the rest of the time is the float steps, the tiles'
 * loads and stores, and unpacking.
 * It is off where the kernel refuses the tiles' state (arch_prctl) and with LATENCYLAB_AMX=0; rows beyond the last
 * whole 16 go to the AVX-512 GEMM.
 */
#define _GNU_SOURCE /* syscall() */
#include "gemm.h"

#if LL_AVX512_DOTS && defined(__AMX_TILE__) && defined(__AMX_INT8__)

#include <immintrin.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA 18
#define TILE_ROWS 16 /* weight rows a tile product takes, and tokens (a panel group) */

static int amx_on;

/* The process asks the kernel for the tiles' state once, as the library loads; without it the first tile
 * instruction is a SIGILL. */
__attribute__((constructor)) static void amx_start(void) {
    const char *wanted = getenv("LATENCYLAB_AMX");
    if (wanted && strcmp(wanted, "0") == 0) return;
    amx_on = syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
}

int32_t ll_use_amx(int32_t on) {
    if (on == 0) amx_on = 0;
    else if (on > 0 && !amx_on) amx_on = syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
    return amx_on;
}

/* The tiles by number (the intrinsics take a literal: they name the register in their assembly): the weights' A,
 * two B tiles of tokens taken in turn, and a C tile for each of CHUNK groups of 16 tokens. */
#define CHUNK 4

typedef struct {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} __attribute__((packed)) tile_config;

/* The tiles for sub-blocks of `sub` elements: A (tile 1) 16 weight rows x sub bytes (each row's unpacked block,
 * sizeof(unpacked) apart); B (2, 3) sub / 4 groups x 16 tokens x 4 bytes (the panel as it stands); C (4-7) 16 rows x
 * 16 tokens of int32. Per thread. */
static void configure(int sub) {
    tile_config config;
    memset(&config, 0, sizeof config);
    config.palette = 1;
    config.rows[1] = TILE_ROWS, config.colsb[1] = (uint16_t)sub;
    for (int t = 2; t <= 3; t++) config.rows[t] = (uint8_t)(sub / 4), config.colsb[t] = LL_GEMM_LANES * 4;
    for (int t = 4; t < 4 + CHUNK; t++) config.rows[t] = TILE_ROWS, config.colsb[t] = LL_GEMM_LANES * 4;
    _tile_loadconfig(&config);
}

/* One sub-block's products for CHUNK groups of tokens into parts[j] (16 rows x 16 tokens each): every tile stored
 * before any is read back, as a read right after its store waited for it (a quarter of the time, in perf). */
#define PRODUCT(j, C, B)                                                                                          \
    if (j < count) {                                                                                              \
        _tile_zero(C);                                                                                            \
        _tile_loadd(B, p + (size_t)j * group_stride, 64);                                                         \
        _tile_dpbsud(C, 1, B);                                                                                    \
    }
#define STORE(j, C) if (j < count) _tile_stored(C, parts[j], LL_GEMM_LANES * sizeof(int32_t))

/* What a block's float steps read of a group of 16 tokens, loaded once for its 16 rows: the activations' d, and
 * Q8_1's m x s (the minimum 1) or the k-quants' sub-block sums as int16 pairs (2). */
typedef struct {
    __m512 da;
    __m512i extra[4];
} group_activations;

static inline __attribute__((always_inline)) group_activations group_loads(const char *p, const int block,
                                                                           const int minimum) {
    group_activations g = {.da = _mm512_load_ps((const float *)(p + block * LL_GEMM_LANES))};
    const char *extra = p + block * LL_GEMM_LANES + 4 * LL_GEMM_LANES;
    for (int q = 0; q < (minimum == 2 ? 4 : minimum); q++)
        g.extra[q] = _mm512_load_si512((const void *)(extra + 64 * q));
    return g;
}

/* One block's float steps for row u over a group of 16 tokens, as gemm_block's (dots_avx512.c) in its order: the
 * sum takes d x da x (isum - correction); the minimum Q8_1's m x s (1) or the k-quants' dmin x da x their sums (2). */
static inline __attribute__((always_inline)) void float_steps(const unpacked *u, __m512i isum,
                                                               const group_activations *g, float *sums,
                                                               float *minimums, const int minimum) {
    const __m512i exact = _mm512_sub_epi32(isum, _mm512_set1_epi32(u->correction));
    _mm512_store_ps(sums, _mm512_fmadd_ps(_mm512_mul_ps(_mm512_set1_ps(u->d), g->da), _mm512_cvtepi32_ps(exact),
                                          _mm512_load_ps(sums)));
    if (minimum == 1)
        _mm512_store_ps(minimums, _mm512_fmadd_ps(_mm512_set1_ps(u->m), _mm512_castsi512_ps(g->extra[0]),
                                                  _mm512_load_ps(minimums)));
    if (minimum == 2) {
        __m512i m = _mm512_setzero_si512();
        for (int q = 0; q < 4; q++) m = _mm512_dpwssd_epi32(m, g->extra[q], _mm512_set1_epi32(u->min_pairs[q]));
        _mm512_store_ps(minimums, _mm512_fmadd_ps(_mm512_mul_ps(_mm512_set1_ps(u->m), g->da), _mm512_cvtepi32_ps(m),
                                                  _mm512_load_ps(minimums)));
    }
}

/* Rows first .. first + 15 of out, token by token, the 16 rows side by side: a line of out at a time. */
static inline __attribute__((always_inline)) void write_rows(const float (*sums)[TILE_ROWS][LL_GEMM_LANES],
                                                              const float (*minimums)[TILE_ROWS][LL_GEMM_LANES],
                                                              int tokens, float *out, size_t out_stride, int first,
                                                              int accumulate, const int minimum) {
    for (int token = 0; token < tokens; token++) {
        const int group = token / LL_GEMM_LANES, lane = token % LL_GEMM_LANES;
        float *target = out + (size_t)token * out_stride + first;
        for (int r = 0; r < TILE_ROWS; r++) {
            const float sum = sums[group][r][lane], low = minimums[group][r][lane];
            const float value = minimum == 2 ? sum - low : minimum == 1 ? sum + low : sum;
            target[r] = accumulate ? target[r] + value : value;
        }
    }
}

/* Each type's GEMM on the tiles: 16 weight rows at a time, each block unpacked once (unpack4 four times) for every
 * group of 16 tokens; per sub-block one tile product, then gemm_block's integer scaling and float steps
 * (dots_avx512.c), row by row with the tokens in the lanes, as there. */
#define AMX_ENTRY(NAME, BLOCK, SUB, SCALED, MINIMUM, ACTIVATION)                                                  \
    void ll_gemm_amx_##NAME(int n, const void *w, size_t w_stride, int rows, const void *panel, int tokens,       \
                            float *out, size_t out_stride, int accumulate) {                                      \
        enum { SUBS = BLOCK / SUB };                                                                              \
        const int whole = amx_on ? rows / TILE_ROWS * TILE_ROWS : 0;                                              \
        if (whole < rows)                                                                                         \
            ll_gemm_##NAME(n, (const char *)w + (size_t)whole * w_stride, w_stride, rows - whole, panel, tokens,  \
                           out + whole, out_stride, accumulate);                                                  \
        if (!whole) return;                                                                                       \
        const int bytes = panel_block_bytes(ACTIVATION);                                                          \
        const size_t group_stride = (size_t)(n / BLOCK) * bytes;                                                  \
        const int groups = (tokens + LL_GEMM_LANES - 1) / LL_GEMM_LANES;                                          \
        const size_t floats = (size_t)groups * TILE_ROWS * LL_GEMM_LANES;                                         \
        float *buffer = aligned_alloc(64, 2 * floats * sizeof(float));                                            \
        unpacked *u = aligned_alloc(64, TILE_ROWS * sizeof(unpacked));                                            \
        int32_t(*all)[SUBS][TILE_ROWS][LL_GEMM_LANES] =                                                           \
            aligned_alloc(64, CHUNK * sizeof(int32_t[SUBS][TILE_ROWS][LL_GEMM_LANES]));                           \
        if (!buffer || !u || !all) { /* the caller's scratch came first: 64 KB for 512 tokens */                  \
            free(buffer), free(u), free(all);                                                                     \
            ll_gemm_##NAME(n, w, w_stride, whole, panel, tokens, out, out_stride, accumulate);                    \
            return;                                                                                               \
        }                                                                                                         \
        float(*sums)[TILE_ROWS][LL_GEMM_LANES] = (float(*)[TILE_ROWS][LL_GEMM_LANES])buffer;                      \
        float(*minimums)[TILE_ROWS][LL_GEMM_LANES] = (float(*)[TILE_ROWS][LL_GEMM_LANES])(buffer + floats);       \
        configure(SUB);                                                                                           \
        for (int first = 0; first < whole; first += TILE_ROWS) {                                                  \
            memset(buffer, 0, 2 * floats * sizeof(float));                                                        \
            for (int b = 0; b < n / BLOCK; b++) {                                                                 \
                for (int r0 = 0; r0 < TILE_ROWS; r0 += 4) unpack4_##NAME(w, w_stride, first + r0, b, u + r0);     \
                const char *block = (const char *)panel + (size_t)b * bytes;                                      \
                for (int chunk = 0; chunk < groups; chunk += CHUNK) {                                             \
                    const int count = groups - chunk < CHUNK ? groups - chunk : CHUNK;                            \
                    for (int s = 0; s < SUBS; s++) {                                                              \
                        const char *p = block + (size_t)chunk * group_stride + 64 * (SUB / 4) * s;                \
                        int32_t(*parts[CHUNK])[LL_GEMM_LANES];                                                    \
                        for (int j = 0; j < CHUNK; j++) parts[j] = all[j][s];                                     \
                        _tile_loadd(1, u[0].q + SUB * s, sizeof(unpacked));                                       \
                        PRODUCT(0, 4, 2) PRODUCT(1, 5, 3)                                                         \
                        PRODUCT(2, 6, 2) PRODUCT(3, 7, 3)                                                         \
                        STORE(0, 4); STORE(1, 5);                                                                 \
                        STORE(2, 6); STORE(3, 7);                                                                 \
                    }                                                                                             \
                    for (int j = 0; j < count; j++) {                                                             \
                        const int group = chunk + j;                                                              \
                        const char *p = block + (size_t)group * group_stride;                                     \
                        const group_activations g = group_loads(p, BLOCK, MINIMUM);                               \
                        for (int r = 0; r < TILE_ROWS; r++) {                                                     \
                            __m512i isum = _mm512_load_si512((const void *)all[j][0][r]);                         \
                            if (SCALED) {                                                                         \
                                isum = _mm512_mullo_epi32(isum, _mm512_set1_epi32(u[r].scale[0]));                \
                                for (int s = 1; s < SUBS; s++)                                                    \
                                    isum = _mm512_add_epi32(                                                      \
                                        isum, _mm512_mullo_epi32(_mm512_load_si512((const void *)all[j][s][r]),   \
                                                                 _mm512_set1_epi32(u[r].scale[s])));              \
                            }                                                                                     \
                            float_steps(&u[r], isum, &g, sums[group][r], minimums[group][r], MINIMUM);            \
                        }                                                                                         \
                    }                                                                                             \
                }                                                                                                 \
            }                                                                                                     \
            write_rows((const float(*)[TILE_ROWS][LL_GEMM_LANES])sums,                                            \
                       (const float(*)[TILE_ROWS][LL_GEMM_LANES])minimums, tokens, out, out_stride, first,        \
                       accumulate, MINIMUM);                                                                      \
        }                                                                                                         \
        _tile_release();                                                                                          \
        free(buffer), free(u), free(all);                                                                         \
    }

/* The k-quants without a multiply per sub-block: each scale is split into DIGITS digits of SHIFT bits, and the
 * weights times each digit still fit a signed byte (Q4_K: 15 x 7; Q5_K: 31 x 3; Q6_K: 32 x 2, its signed scale's top
 * digit keeping the sign), so one tile product per digit runs the whole 256-element block with the scales inside it:
 * sum over s of scale_s x part_s is sum over digits of 2^(SHIFT x place) x (the weights times that digit) .
 * activations, the same whole number. The multiply a sub-block (AMX_ENTRY's) left the k-quants' GEMM about as slow as
 * the AVX-512 one (1.06x). */
#define K_CHUNK 64 /* elements a tile product takes */

/* digits[d][r][k]: row r's weight k times digit d of its sub-block's scale (sub elements a scale), the most
 * significant first; that one keeps the scale's sign (Q6_K's are signed), the others are 0 .. 2^shift - 1. A row's
 * digits are taken from all its scales at once: digit by digit from each scale, broadcast per chunk, they took 0.6 ms
 * of Q6_K's 7.2 (gemm_tiles.py's shape). The scales past a type's last sub-block are loaded but never picked. */
static inline void scaled_digits(const unpacked *u, int sub, int digits, int shift, int8_t (*out)[TILE_ROWS][QK_K]) {
    const __m512i mask = _mm512_set1_epi32((1 << shift) - 1);
    for (int r = 0; r < TILE_ROWS; r++) {
        /* digit d of every sub-block's scale, once a row: int16 lanes 0..15, one a sub-block */
        const __m512i scales = _mm512_loadu_si512((const void *)u[r].scale);
        __m512i spread[4];
        for (int d = 0; d < digits; d++) {
            const __m512i digit = _mm512_sra_epi32(scales, _mm_cvtsi32_si128(shift * (digits - 1 - d)));
            spread[d] = _mm512_castsi256_si512(_mm512_cvtepi32_epi16(d ? _mm512_and_si512(digit, mask) : digit));
        }
        for (int c = 0; c < QK_K / 32; c++) {
            const __m512i q = _mm512_cvtepi8_epi16(_mm256_load_si256((const __m256i *)(u[r].q + 32 * c)));
            /* each element's sub-block: the chunk's one (sub 32), or its two halves' (sub 16) */
            const __m512i which = sub == 32 ? _mm512_set1_epi16((short)c)
                                            : _mm512_inserti64x4(_mm512_set1_epi16((short)(2 * c)),
                                                                 _mm256_set1_epi16((short)(2 * c + 1)), 1);
            for (int d = 0; d < digits; d++) {
                const __m512i digit = _mm512_permutexvar_epi16(which, spread[d]);
                _mm256_store_si256((__m256i *)(out[d][r] + 32 * c), _mm512_cvtepi16_epi8(_mm512_mullo_epi16(q, digit)));
            }
        }
    }
}

#define DIGIT_PRODUCT(C, A, d)                                                                                    \
    _tile_loadd(A, digits[d][0] + K_CHUNK * k, QK_K);                                                             \
    _tile_dpbsud(C, A, 2);
#define DIGIT_STORE(C, d) _tile_stored(C, parts[d], LL_GEMM_LANES * sizeof(int32_t))

/* Building the digits is paid per block whatever the tokens: with fewer than 2 x DIGITS - 1 groups of 16 tokens
 * the AVX-512 GEMM was faster (ll_gemm_rows, 2,048 x 2,048, one thread: Q4_K from about 48 tokens, Q5_K 80, Q6_K
 * 96-112). */
#define AMX_DIGITS_ENTRY(NAME, SUB, DIGITS, SHIFT, MINIMUM)                                                       \
    void ll_gemm_amx_##NAME(int n, const void *w, size_t w_stride, int rows, const void *panel, int tokens,       \
                            float *out, size_t out_stride, int accumulate) {                                      \
        const int many = (tokens + LL_GEMM_LANES - 1) / LL_GEMM_LANES >= 2 * DIGITS - 1;                          \
        const int whole = amx_on && many ? rows / TILE_ROWS * TILE_ROWS : 0;                                      \
        if (whole < rows)                                                                                         \
            ll_gemm_##NAME(n, (const char *)w + (size_t)whole * w_stride, w_stride, rows - whole, panel, tokens,  \
                           out + whole, out_stride, accumulate);                                                  \
        if (!whole) return;                                                                                       \
        const int bytes = panel_block_bytes(LL_Q8_K);                                                             \
        const size_t group_stride = (size_t)(n / QK_K) * bytes;                                                   \
        const int groups = (tokens + LL_GEMM_LANES - 1) / LL_GEMM_LANES;                                          \
        const size_t floats = (size_t)groups * TILE_ROWS * LL_GEMM_LANES;                                         \
        float *buffer = aligned_alloc(64, 2 * floats * sizeof(float));                                            \
        unpacked *u = aligned_alloc(64, TILE_ROWS * sizeof(unpacked));                                            \
        int8_t(*digits)[TILE_ROWS][QK_K] = aligned_alloc(64, DIGITS * sizeof(int8_t[TILE_ROWS][QK_K]));           \
        int32_t(*parts)[TILE_ROWS][LL_GEMM_LANES] =                                                               \
            aligned_alloc(64, DIGITS * sizeof(int32_t[TILE_ROWS][LL_GEMM_LANES]));                                \
        if (!buffer || !u || !digits || !parts) {                                                                 \
            free(buffer), free(u), free(digits), free(parts);                                                     \
            ll_gemm_##NAME(n, w, w_stride, whole, panel, tokens, out, out_stride, accumulate);                    \
            return;                                                                                               \
        }                                                                                                         \
        float(*sums)[TILE_ROWS][LL_GEMM_LANES] = (float(*)[TILE_ROWS][LL_GEMM_LANES])buffer;                      \
        float(*minimums)[TILE_ROWS][LL_GEMM_LANES] = (float(*)[TILE_ROWS][LL_GEMM_LANES])(buffer + floats);       \
        configure(K_CHUNK);                                                                                       \
        for (int first = 0; first < whole; first += TILE_ROWS) {                                                  \
            memset(buffer, 0, 2 * floats * sizeof(float));                                                        \
            for (int b = 0; b < n / QK_K; b++) {                                                                  \
                for (int r0 = 0; r0 < TILE_ROWS; r0 += 4) unpack4_##NAME(w, w_stride, first + r0, b, u + r0);     \
                scaled_digits(u, SUB, DIGITS, SHIFT, digits);                                                     \
                const char *block = (const char *)panel + (size_t)b * bytes;                                      \
                for (int group = 0; group < groups; group++) {                                                    \
                    const char *p = block + (size_t)group * group_stride;                                         \
                    _tile_zero(4);                                                                                \
                    _tile_zero(5);                                                                                \
                    if (DIGITS > 2) _tile_zero(6);                                                                \
                    if (DIGITS > 3) _tile_zero(7);                                                                \
                    for (int k = 0; k < QK_K / K_CHUNK; k++) {                                                    \
                        _tile_loadd(2, p + 64 * (K_CHUNK / 4) * k, 64);                                           \
                        DIGIT_PRODUCT(4, 1, 0)                                                                    \
                        DIGIT_PRODUCT(5, 3, 1)                                                                    \
                        if (DIGITS > 2) { DIGIT_PRODUCT(6, 1, 2) }                                                \
                        if (DIGITS > 3) { DIGIT_PRODUCT(7, 3, 3) }                                                \
                    }                                                                                             \
                    DIGIT_STORE(4, 0);                                                                            \
                    DIGIT_STORE(5, 1);                                                                            \
                    if (DIGITS > 2) DIGIT_STORE(6, 2);                                                            \
                    if (DIGITS > 3) DIGIT_STORE(7, 3);                                                            \
                    const group_activations g = group_loads(p, QK_K, MINIMUM);                                    \
                    for (int r = 0; r < TILE_ROWS; r++) {                                                         \
                        __m512i isum = _mm512_load_si512((const void *)parts[0][r]);                              \
                        for (int d = 1; d < DIGITS; d++)                                                          \
                            isum = _mm512_add_epi32(_mm512_slli_epi32(isum, SHIFT),                               \
                                                    _mm512_load_si512((const void *)parts[d][r]));                \
                        float_steps(&u[r], isum, &g, sums[group][r], minimums[group][r], MINIMUM);                \
                    }                                                                                             \
                }                                                                                                 \
            }                                                                                                     \
            write_rows((const float(*)[TILE_ROWS][LL_GEMM_LANES])sums,                                            \
                       (const float(*)[TILE_ROWS][LL_GEMM_LANES])minimums, tokens, out, out_stride, first,        \
                       accumulate, MINIMUM);                                                                      \
        }                                                                                                         \
        _tile_release();                                                                                          \
        free(buffer), free(u), free(digits), free(parts);                                                         \
    }

AMX_ENTRY(q4_0, QK, QK, 0, 0, LL_Q8_0)
AMX_ENTRY(q4_1, QK, QK, 0, 1, LL_Q8_1)
AMX_ENTRY(q5_0, QK, QK, 0, 0, LL_Q8_0)
AMX_ENTRY(q5_1, QK, QK, 0, 1, LL_Q8_1)
AMX_ENTRY(q8_0, QK, QK, 0, 0, LL_Q8_0)
AMX_DIGITS_ENTRY(q4_K, 32, 2, 3, 2)
AMX_DIGITS_ENTRY(q5_K, 32, 3, 2, 2)
AMX_DIGITS_ENTRY(q6_K, 16, 4, 2, 0)
AMX_ENTRY(q4_0x16, QK, QK, 0, 0, LL_Q8_0)
AMX_ENTRY(q4_1x16, QK, QK, 0, 1, LL_Q8_1)
AMX_ENTRY(q8_0x16, QK, QK, 0, 0, LL_Q8_0)
AMX_ENTRY(q5_0x16, QK, QK, 0, 0, LL_Q8_0)
AMX_ENTRY(q5_1x16, QK, QK, 0, 1, LL_Q8_1)
AMX_DIGITS_ENTRY(q4_Kx16, 32, 2, 3, 2)
AMX_DIGITS_ENTRY(q5_Kx16, 32, 3, 2, 2)
AMX_DIGITS_ENTRY(q6_Kx16, 16, 4, 2, 0)
AMX_DIGITS_ENTRY(q3_Kx16, 16, 2, 3, 0)  /* values -4..3 times a digit: -4..3 of the signed scale's top, 0..7 */

/* The tiles' int8 ceiling, as peak.c's for vpdpbusd: four independent tile products a round (16 x 16 x 64 each)
 * from tiles loaded once, on every thread. Returns the products a round does (all threads), 0 with AMX off. */
uint64_t ll_amx_peak(int64_t rounds, int32_t threads) {
    if (!amx_on) return 0;
#pragma omp parallel num_threads(threads)
    {
        static const uint8_t zeros[TILE_ROWS * 64] __attribute__((aligned(64)));
        int32_t sink[TILE_ROWS][LL_GEMM_LANES] __attribute__((aligned(64)));
        configure(K_CHUNK);
        _tile_loadd(1, zeros, 64);
        _tile_loadd(2, zeros, 64);
        _tile_loadd(3, zeros, 64);
        _tile_zero(4);
        _tile_zero(5);
        _tile_zero(6);
        _tile_zero(7);
        for (int64_t r = 0; r < rounds; r++) {
            _tile_dpbsud(4, 1, 2);
            _tile_dpbsud(5, 1, 3);
            _tile_dpbsud(6, 3, 2);
            _tile_dpbsud(7, 2, 3);
        }
        _tile_stored(4, sink, 64);
        _tile_release();
        __asm__ volatile("" : : "r"(sink) : "memory");
    }
    return (uint64_t)threads * 4 * TILE_ROWS * TILE_ROWS * K_CHUNK;
}

#else

int32_t ll_use_amx(int32_t on) {
    (void)on;
    return 0;
}

uint64_t ll_amx_peak(int64_t rounds, int32_t threads) {
    (void)rounds, (void)threads;
    return 0;
}

#endif
