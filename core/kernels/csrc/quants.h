/* Quantised rows: the per-type table (facts, and the functions that dequantise, quantise and multiply rows). */
#ifndef LL_QUANTS_H
#define LL_QUANTS_H

#include <stddef.h>

#include "api.h"
#include "blocks.h"

/* R (1..4) weight rows w_stride bytes apart against C (1..DOT_ROWS) activation rows a_stride apart:
 * out[i * C + j] = w_i . a_j. */
#define DOT_ROWS 4
typedef void (*dot_tile_fn)(int n, const void *w, size_t w_stride, const void *a, size_t a_stride, int R, int C,
                            float *out);

/* Whether dots_avx512.c has the quant types' kernels in this build (then dots_avx2.c leaves out its AVX2 ones). */
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512DQ__) && \
    defined(__AVX512VNNI__)
#define LL_AVX512_DOTS 1
#else
#define LL_AVX512_DOTS 0
#endif

/* The GEMM of a prompt's pass puts this many tokens in the lanes of a register; 0: this build has no GEMM, and
 * every pass runs the tiles. */
#if LL_AVX512_DOTS
#define LL_GEMM_LANES 16
#elif defined(__AVX2__) && defined(__FMA__)
#define LL_GEMM_LANES 8
#else
#define LL_GEMM_LANES 0
#endif

/* Whether this build has the GEMM on AMX's tiles (gemm_amx.c): the CPU has them, and the build targets it. */
#if LL_AVX512_DOTS && defined(__AMX_TILE__) && defined(__AMX_INT8__)
#define LL_AMX_GEMM 1
#else
#define LL_AMX_GEMM 0
#endif

/* rows weight rows (w_stride bytes apart) against `tokens` activations laid out as ll_panel_build's panel:
 * out[t * out_stride + r] = w_r . a_t, or += with accumulate. Each result is the canonical dot (quants.c). */
typedef void (*gemm_fn)(int n, const void *w, size_t w_stride, int rows, const void *panel, int tokens, float *out,
                        size_t out_stride, int accumulate);

/* A type's packed layout, where this build has one (quants.c's table): its rows regrouped PACK_ROWS at a time so that
 * one register holds the same four elements of every row of a group, and a decode step's sums are each row's in its
 * own lane, with no reduction across lanes. pack_fn lays out `rows` (a multiple of PACK_ROWS) of n elements;
 * packed_tiles_fn runs a group against C (1..DOT_ROWS) activation rows: out[i * C + j] = w_i . a_j, the canonical
 * dot; a packed matrix's GEMM is a gemm_fn whose w is the packed rows, group after group, w_stride the row bytes. */
#define PACK_ROWS 16
/* A group's block in the packed layouts (packed.c): as many bytes as its rows' blocks, regrouped. Q4_0 and Q8_0:
 * the 16 rows' scales (float16), then the quants, register k's lane r holding row r's bytes qs[4k..4k+3] (Q4_0: four
 * registers, low nibbles elements 4k..4k+3, high nibbles 16+4k..16+4k+3; Q8_0: eight). Q4_1: Q4_0's, with the
 * rows' minimums (float16) between the scales and the quants. Q5_0 and Q5_1: Q4_0's and Q4_1's, with a register of
 * fifth bits before the quants (lane r: row r's qh, bit e element e's). Q4_K, per super-block: the
 * rows' d, their dmin, three registers of packed 6-bit scales and minimums (register w's lane r: row r's
 * scales[4w..4w+3]), then 32 registers of quants (register w's lane r: row r's qs[4w..4w+3], low nibbles of
 * sub-block 2(w / 8), high nibbles of the next). Q5_K: Q4_K's layout with eight registers of fifth bits between
 * the scales and the quants (register w's lane r: row r's qh[4w..4w+3]). Q6_K, per super-block: the rows' d, four
 * registers of int8 scales (register w's lane r: row r's scales[4w..4w+3]), then per half h and word w < 8 three
 * registers, lane r holding row r's ql[64h + 4w..], ql[64h + 32 + 4w..] and qh[32h + 4w..]: the four quarters of four
 * elements, whole. */
enum {
    Q4_0X16_BLOCK = 32 + 4 * 64,
    Q4_1X16_BLOCK = 32 + 32 + 4 * 64,
    Q5_0X16_BLOCK = 32 + 5 * 64,
    Q5_1X16_BLOCK = 32 + 32 + 5 * 64,
    Q8_0X16_BLOCK = 32 + 8 * 64,
    Q4_KX16_BLOCK = 64 + 3 * 64 + 32 * 64,
    Q5_KX16_BLOCK = 64 + 3 * 64 + 8 * 64 + 32 * 64,
    Q6_KX16_BLOCK = 32 + 4 * 64 + 48 * 64,
    Q3_KX16_BLOCK = 32 + 3 * 64 + 8 * 64 + 16 * 64,
};
/* Q3_K's packed block: the rows' d, three registers of their packed 6-bit scales (register w's lane r: row r's
 * scales[4w..4w+3]), then per word w < 8 a register of third bits (lane r: row r's hmask[4w..4w+3]) and one of the
 * first half's low bits (lane r: qs[4w..4w+3]), then the second half's eight registers of low bits (lane r:
 * qs[32 + 4w..]): the order the kernels read them in, one stream. A lane's word of low bits shifted by 2j holds, in
 * its four bytes, four neighbouring elements of the half's 32-element chunk j; its word of third bits shifted by
 * 4c + j (half c) the same four elements' third bits. (With the third bits in a block of their own, AMD's prefetchers
 * did not follow the two streams: one thread read 6.4 GB/s from DRAM, against 24 for Q6_K.) */
#define Q3X16_SCALES 32
#define Q3X16_THIRD(w) (32 + 3 * 64 + 128 * (w))
#define Q3X16_LOW(c, w) ((c) ? 32 + 3 * 64 + 128 * 8 + 64 * (w) : Q3X16_THIRD(w) + 64)
/* Where Q4_K's and Q5_K's packed blocks hold their fifth bits (Q5_K only) and their quants: after the d, dmin and
 * scale registers, the fifth bits' eight registers (Q5_K), then the quants'. */
enum { K4X16_FIFTH_BITS = 64 + 3 * 64 };
#define K4X16_QUANTS(five) ((five) ? K4X16_FIFTH_BITS + 8 * 64 : K4X16_FIFTH_BITS)

/* How far ahead of the block it multiplies (bytes) a packed kernel asks for its group's stream in the second-level
 * cache; 0: not at all. The AVX2 Q5_K kernel has a distance of its own. packed.c chooses both per CPU when the
 * library loads (ll_choose_prefetch); ll_set_prefetch sets both to one distance (benchmarks). */
extern int ll_prefetch_ahead, ll_prefetch_avx2_q5_K;
static inline __attribute__((always_inline)) void prefetch_by(const void *block, size_t bytes, int distance) {
    if (!distance) return;
    const char *ahead = (const char *)block + distance;
    for (size_t line = 0; line < bytes; line += 64) __builtin_prefetch(ahead + line, 0, 2);  /* 2: prefetcht1 */
}
static inline __attribute__((always_inline)) void prefetch_ahead(const void *block, size_t bytes) {
    prefetch_by(block, bytes, ll_prefetch_ahead);
}

typedef void (*pack_fn)(const void *rows, int count, int n, void *out);
typedef void (*packed_tiles_fn)(int n, const void *group, const void *a, size_t a_stride, int C, float *out);

/* One entry per GGML type id the kernels know, as ggml's type_traits: the facts of the type's rows and the
 * functions that read and write them. Callers resolve an entry (and its pointers) once per matrix or row, never
 * per block. */
typedef struct {
    const char *name;        /* GGML's name ("Q4_K"); NULL for an id without an entry */
    int32_t block_elements;  /* elements per block (1 for the float types) */
    int32_t block_bytes;
    int32_t activation;      /* the type a weight type's dots read its activations in; -1: not a weight type */
    void (*dequantize)(const void *row, float *y, int n);        /* NULL: the activation-only types */
    void (*quantize)(const float *x, void *out, int n);          /* the activation types: float32 into the type */
    float (*dot_reference)(int n, const void *w, const void *a); /* scalar: what every SIMD kernel is tested against */
    dot_tile_fn tiles;       /* this build's tile kernel (AVX-512, AVX2 or scalar); NULL: not a weight type */
    gemm_fn gemm;            /* this build's GEMM; NULL where it has none (float types, builds without lanes) */
    pack_fn pack;            /* this build's packed layout (all three, or all NULL) */
    packed_tiles_fn packed_tiles;
    gemm_fn packed_gemm;
    /* A type without file-layout kernels of its own whose values a wider type holds exactly: ll_set_tensor copies
     * its rows into that type (`wide`), and the products run there until ll_pack lays the type's own rows out in
     * its packed layout, where it has one (then they are the type's again, in fewer bytes). NULL for every other
     * type. */
    void (*widen)(const void *blocks, size_t count, void *out);
    int32_t wide;
} ll_type_traits;

#define LL_TYPE_LIMIT 31  /* type ids [0, LL_TYPE_LIMIT): BF16 (30) is the last */

/* The type's entry, or NULL for an id without one. */
const ll_type_traits *ll_type(int type);
/* Bytes of a row of n elements (a whole number of blocks), 0 for an unknown type. */
size_t ll_row_bytes(int type, int n);

/* The tile kernels (dots_scalar.c, dots_avx2.c or dots_avx512.c), one definition per build: what the table points to. */
#define LL_TILE_KERNELS(X) X(q4_0) X(q4_1) X(q5_0) X(q5_1) X(q8_0) X(q4_K) X(q5_K) X(q6_K) X(f32) X(f16) X(bf16)
#define LL_DECLARE_TILES(NAME) void ll_tiles_##NAME(int n, const void *w, size_t w_stride, const void *a, \
                                                     size_t a_stride, int R, int C, float *out);
LL_TILE_KERNELS(LL_DECLARE_TILES)
#undef LL_DECLARE_TILES
#define LL_GEMM_KERNELS(X) X(q4_0) X(q4_1) X(q5_0) X(q5_1) X(q8_0) X(q4_K) X(q5_K) X(q6_K)
#define LL_DECLARE_GEMM(NAME) void ll_gemm_##NAME(int n, const void *w, size_t w_stride, int rows, const void *panel, \
                                                  int tokens, float *out, size_t out_stride, int accumulate);
LL_GEMM_KERNELS(LL_DECLARE_GEMM)
#undef LL_DECLARE_GEMM

/* packed.c: the layouts, the same on every instruction set. */
void ll_pack_q4_0x16(const void *rows, int count, int n, void *out);
void ll_pack_q4_1x16(const void *rows, int count, int n, void *out);
void ll_pack_q8_0x16(const void *rows, int count, int n, void *out);
void ll_pack_q5_0x16(const void *rows, int count, int n, void *out);
void ll_pack_q5_1x16(const void *rows, int count, int n, void *out);
void ll_pack_q4_Kx16(const void *rows, int count, int n, void *out);
void ll_pack_q5_Kx16(const void *rows, int count, int n, void *out);
void ll_pack_q6_Kx16(const void *rows, int count, int n, void *out);
void ll_pack_q3_Kx16(const void *rows, int count, int n, void *out);
#if LL_GEMM_LANES  /* AVX2's kernels (dots_avx2.c) and AVX-512's (dots_avx512.c) */
void ll_packed_tiles_q4_0x16(int n, const void *group, const void *a, size_t a_stride, int C, float *out);
void ll_gemm_q4_0x16(int n, const void *w, size_t w_stride, int rows, const void *panel, int tokens, float *out,
                     size_t out_stride, int accumulate);
void ll_packed_tiles_q4_1x16(int n, const void *group, const void *a, size_t a_stride, int C, float *out);
void ll_gemm_q4_1x16(int n, const void *w, size_t w_stride, int rows, const void *panel, int tokens, float *out,
                     size_t out_stride, int accumulate);
void ll_packed_tiles_q4_Kx16(int n, const void *group, const void *a, size_t a_stride, int C, float *out);
void ll_gemm_q4_Kx16(int n, const void *w, size_t w_stride, int rows, const void *panel, int tokens, float *out,
                     size_t out_stride, int accumulate);
void ll_packed_tiles_q5_Kx16(int n, const void *group, const void *a, size_t a_stride, int C, float *out);
void ll_gemm_q5_Kx16(int n, const void *w, size_t w_stride, int rows, const void *panel, int tokens, float *out,
                     size_t out_stride, int accumulate);
void ll_packed_tiles_q6_Kx16(int n, const void *group, const void *a, size_t a_stride, int C, float *out);
void ll_gemm_q6_Kx16(int n, const void *w, size_t w_stride, int rows, const void *panel, int tokens, float *out,
                     size_t out_stride, int accumulate);
void ll_packed_tiles_q8_0x16(int n, const void *group, const void *a, size_t a_stride, int C, float *out);
void ll_gemm_q8_0x16(int n, const void *w, size_t w_stride, int rows, const void *panel, int tokens, float *out,
                     size_t out_stride, int accumulate);
void ll_packed_tiles_q5_0x16(int n, const void *group, const void *a, size_t a_stride, int C, float *out);
void ll_gemm_q5_0x16(int n, const void *w, size_t w_stride, int rows, const void *panel, int tokens, float *out,
                     size_t out_stride, int accumulate);
void ll_packed_tiles_q5_1x16(int n, const void *group, const void *a, size_t a_stride, int C, float *out);
void ll_gemm_q5_1x16(int n, const void *w, size_t w_stride, int rows, const void *panel, int tokens, float *out,
                     size_t out_stride, int accumulate);
void ll_packed_tiles_q3_Kx16(int n, const void *group, const void *a, size_t a_stride, int C, float *out);
void ll_gemm_q3_Kx16(int n, const void *w, size_t w_stride, int rows, const void *panel, int tokens, float *out,
                     size_t out_stride, int accumulate);
#endif

#if LL_AMX_GEMM  /* gemm_amx.c: each type's GEMM on the tiles, the AVX-512 one above where they are off */
#define LL_DECLARE_AMX_GEMM(NAME) void ll_gemm_amx_##NAME(int n, const void *w, size_t w_stride, int rows, \
                                                          const void *panel, int tokens, float *out,        \
                                                          size_t out_stride, int accumulate);
LL_GEMM_KERNELS(LL_DECLARE_AMX_GEMM)
LL_DECLARE_AMX_GEMM(q4_0x16)
LL_DECLARE_AMX_GEMM(q4_1x16)
LL_DECLARE_AMX_GEMM(q8_0x16)
LL_DECLARE_AMX_GEMM(q5_0x16)
LL_DECLARE_AMX_GEMM(q5_1x16)
LL_DECLARE_AMX_GEMM(q4_Kx16)
LL_DECLARE_AMX_GEMM(q5_Kx16)
LL_DECLARE_AMX_GEMM(q6_Kx16)
LL_DECLARE_AMX_GEMM(q3_Kx16)
#undef LL_DECLARE_AMX_GEMM
#define LL_GEMM(NAME) ll_gemm_amx_##NAME
#else
#define LL_GEMM(NAME) ll_gemm_##NAME
#endif
/* Whether a prompt's GEMM runs on AMX's tiles: on 1 asks for them (the OS must grant their state), 0 turns them
 * off, -1 only asks; returns whether they are on. 0 where this build has none. */
LL_API int32_t ll_use_amx(int32_t on);
/* The tiles' int8 ceiling (gemm_amx.c): runs `rounds` rounds on each of `threads` threads and returns the products a
 * round does, all threads together; 0 where the tiles are off or absent. */
LL_API uint64_t ll_amx_peak(int64_t rounds, int32_t threads);

/* The GEMM's activation panel: `tokens` rows of an activation type (Q8_0, Q8_1 or Q8_K, row_stride bytes apart)
 * of n elements, laid out LL_GEMM_LANES tokens to a register; ll_panel_bytes is its size. */
size_t ll_panel_bytes(int32_t activation, int32_t n, int32_t tokens);
void ll_panel_build(int32_t activation, int32_t n, const void *rows, size_t row_stride, int32_t tokens, void *panel);
/* Test hook: rows x tokens through the type's GEMM from activation rows in its activation type, out[t * rows + r];
 * -1 where the build or the type has no GEMM. */
LL_API int32_t ll_gemm_rows(int32_t type, int32_t n, const void *w, size_t w_stride, int32_t rows, const void *a,
                            size_t a_stride, int32_t tokens, float *out);

/* For Python and the tests: the table's facts in a struct ctypes mirrors (TypeInfo in core/kernels/library.py). */
typedef struct {
    const char *name;
    int32_t id, block_elements, block_bytes, activation;
    int32_t runs_as;  /* the type its products run in: its own id, or the wider type it is widened to */
    int32_t packs;    /* whether this build packs its matrices (then in its own layout, its own bytes) */
} ll_type_info;

LL_API int32_t ll_type_count(void);  /* ids are [0, count); some have no entry */
LL_API int32_t ll_type_facts(int32_t type, ll_type_info *out);  /* 0, or -1 for an id without an entry */
LL_API size_t ll_sizeof_type_info(void);
/* Test hooks, each through the table: a row quantised into an activation type, a row dequantised, the scalar
 * reference dot, and one tile kernel call as the matrix products make it. */
LL_API int32_t ll_quantize_activation(int32_t type, const float *x, void *out, int32_t n);
LL_API int32_t ll_dequantize_row(int32_t type, const void *row, float *y, int32_t n);
LL_API float ll_dot_reference(int32_t type, int32_t n, const void *w, const void *a);
/* count blocks of a widened type (Q3_K) copied into its wide type, as ll_set_tensor copies them; -1 for a type the
 * table does not widen. */
LL_API int32_t ll_widen(int32_t type, const void *blocks, size_t count, void *out);
LL_API int32_t ll_dot_tile(int32_t type, int32_t n, const void *w, size_t w_stride, const void *a, size_t a_stride,
                           int32_t rows, int32_t count, float *out);
/* Test hook: `rows` weight rows (a multiple of PACK_ROWS) packed, then their products with `count` activation rows
 * through the packed tiles, out[r * count + j]; -1 where this build has no packed layout for the type. */
LL_API int32_t ll_packed_dot(int32_t type, int32_t n, const void *w, int32_t rows, const void *a, size_t a_stride,
                             int32_t count, float *out);
/* The instruction set the kernels were built for, e.g. "avx2". */
LL_API const char *ll_kernel_isa(void);



#endif
