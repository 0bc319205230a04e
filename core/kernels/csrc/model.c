/* A decoder-only transformer over a GGUF's own quant blocks: one parallel region per call, phases split by barriers.
 *
 * Rows of work are handed out from a shared counter, not split up front: when the window's painting takes a
 * core from one thread for a moment, the other takes the rows that thread would have done.
 */
#include "model_internal.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

static _Thread_local char last_error[256];

const char *ll_last_error(void) { return last_error; }

int ll_fail(const char *message) {
    snprintf(last_error, sizeof last_error, "%s", message);
    return -1;
}

#define fail ll_fail

#ifndef CHUNKS_PER_THREAD
#define CHUNKS_PER_THREAD 2  /* jobs per thread and matrix: one thread can take over part of a stalled one's */
#endif
#define MIN_CHUNK 16             /* weight rows per job at least */
#ifndef PREFILL_ROWS
#define PREFILL_ROWS 4    /* weight rows per kernel call in a prompt's pass, against 4 tokens (2 and 3 were slower) */
#endif
/* Weight rows per kernel call for a single token. The AVX2 kernels: one (more were slower). The AVX-512 ones: two
 * for the legacy 4- and 5-bit types, which then share each activation block's loads and offset sums (10-15%
 * faster a row, measured one kernel at a time); one for Q8_0 and the k-quants, which two rows made slower. */
static int decode_rows(int type) {
#ifdef DECODE_ROWS
    (void)type;
    return DECODE_ROWS;
#else
    if (!LL_AVX512_DOTS) return 1;
    return type == LL_Q4_0 || type == LL_Q4_1 || type == LL_Q5_0 || type == LL_Q5_1 ? 2 : 1;
#endif
}
#define TOKEN_TILE 32    /* activation rows per job: a tile stays in L1 while the chunk's rows pass over it */
#ifndef GEMM_MIN_TOKENS
#define GEMM_MIN_TOKENS 16  /* a pass of this many rows or more runs its products on the GEMM */
#endif

/* The enums' names, which Python reads (ll_role_name and the others) instead of keeping its own numbering; each
 * name is designated by its value, so it stays with it when an enum changes. */
static const char *const role_names[ROLE_COUNT] = {
    [ROLE_TOKEN_EMBD] = "token_embd", [ROLE_OUTPUT] = "output", [ROLE_OUTPUT_NORM] = "output_norm",
    [ROLE_ATTN_NORM] = "attn_norm", [ROLE_ATTN_Q] = "attn_q", [ROLE_ATTN_K] = "attn_k", [ROLE_ATTN_V] = "attn_v",
    [ROLE_ATTN_QKV] = "attn_qkv", [ROLE_ATTN_OUT] = "attn_output", [ROLE_ATTN_Q_NORM] = "attn_q_norm",
    [ROLE_ATTN_K_NORM] = "attn_k_norm", [ROLE_ATTN_Q_BIAS] = "attn_q_bias", [ROLE_ATTN_K_BIAS] = "attn_k_bias",
    [ROLE_ATTN_V_BIAS] = "attn_v_bias", [ROLE_ATTN_POST_NORM] = "attn_post_norm", [ROLE_FFN_NORM] = "ffn_norm",
    [ROLE_FFN_GATE] = "ffn_gate", [ROLE_FFN_UP] = "ffn_up", [ROLE_FFN_GATE_UP] = "ffn_gate_up",
    [ROLE_FFN_DOWN] = "ffn_down", [ROLE_FFN_POST_NORM] = "ffn_post_norm",
    [ROLE_ROPE_FREQ_FACTORS] = "rope_freq_factors",
};
static const char *const activation_names[ACT_COUNT] = {[ACT_SILU] = "silu", [ACT_GELU_TANH] = "gelu_tanh"};
static const char *const rope_style_names[ROPE_COUNT] = {[ROPE_ADJACENT] = "adjacent", [ROPE_HALVES] = "halves"};

const char *ll_role_name(int32_t role) { return role >= 0 && role < ROLE_COUNT ? role_names[role] : NULL; }
const char *ll_activation_name(int32_t activation) {
    return activation >= 0 && activation < ACT_COUNT ? activation_names[activation] : NULL;
}
const char *ll_rope_style_name(int32_t style) {
    return style >= 0 && style < ROPE_COUNT ? rope_style_names[style] : NULL;
}
size_t ll_sizeof_config(void) { return sizeof(ll_config); }

/* Sizes a configuration implies, in 64 bits: none may pass INT32_MAX, which the passes index with. */
static int fits(int64_t value) { return value > 0 && value <= INT32_MAX; }

ll_model *ll_model_new(const ll_config *config) {
    const ll_config *c = config;
    if (c->layers <= 0 || c->width <= 0 || c->heads <= 0 || c->kv_heads <= 0 || c->head_dim <= 0 || c->ffn <= 0 ||
        c->vocab <= 0 || c->heads % c->kv_heads || c->rope_dims < 0 || c->rope_dims > c->head_dim || c->rope_dims % 2) {
        fail("inconsistent model configuration");
        return NULL;
    }
    if (c->layers > LL_MAX_LAYERS || c->head_dim > LL_MAX_HEAD_DIM ||
        !fits((int64_t)(c->heads + 2 * (int64_t)c->kv_heads) * c->head_dim) || !fits(2 * (int64_t)c->ffn) ||
        !fits((int64_t)c->layers * c->kv_heads * c->head_dim)) {
        fail("the model's configuration is larger than the kernels support");
        return NULL;
    }
    if (!ll_activation_name(c->activation) || !ll_rope_style_name(c->rope_style)) {
        fail("unknown activation or rotary style");
        return NULL;
    }
    ll_model *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->c = *config;
    m->layer = calloc((size_t)config->layers, sizeof *m->layer);
    if (!m->layer) { free(m); return NULL; }
    m->max_in = config->width;
    if (config->heads * config->head_dim > m->max_in) m->max_in = config->heads * config->head_dim;
    if (config->ffn > m->max_in) m->max_in = config->ffn;
    m->projected_width = (config->heads + 2 * config->kv_heads) * config->head_dim;
    return m;
}

void ll_model_free(ll_model *m) {
    if (!m) return;
    free(m->keys);
    free(m->values);
    free(m->arena);
    free(m->layer);
    free(m);
}

/* The [rows, cols] a matrix role must have, or the length a vector role must have (rows 0): from the
 * configuration alone, so a tensor that disagrees with it never reaches a pass. */
static int expected_shape(const ll_model *m, int role, int *rows, int *cols) {
    const ll_config *c = &m->c;
    const int q = c->heads * c->head_dim, kv = c->kv_heads * c->head_dim;
    *rows = 0;
    switch (role) {
    case ROLE_TOKEN_EMBD: case ROLE_OUTPUT: *rows = c->vocab; *cols = c->width; return 0;
    case ROLE_ATTN_Q: *rows = q; *cols = c->width; return 0;
    case ROLE_ATTN_K: case ROLE_ATTN_V: *rows = kv; *cols = c->width; return 0;
    case ROLE_ATTN_QKV: *rows = q + 2 * kv; *cols = c->width; return 0;
    case ROLE_ATTN_OUT: *rows = c->width; *cols = q; return 0;
    case ROLE_FFN_GATE: case ROLE_FFN_UP: *rows = c->ffn; *cols = c->width; return 0;
    case ROLE_FFN_GATE_UP: *rows = 2 * c->ffn; *cols = c->width; return 0;
    case ROLE_FFN_DOWN: *rows = c->width; *cols = c->ffn; return 0;
    case ROLE_OUTPUT_NORM: case ROLE_ATTN_NORM: case ROLE_FFN_NORM: case ROLE_ATTN_POST_NORM: case ROLE_FFN_POST_NORM:
        *cols = c->width; return 0;
    case ROLE_ATTN_Q_NORM: case ROLE_ATTN_K_NORM: *cols = c->head_dim; return 0;
    case ROLE_ATTN_Q_BIAS: *cols = q; return 0;
    case ROLE_ATTN_K_BIAS: case ROLE_ATTN_V_BIAS: *cols = kv; return 0;
    case ROLE_ROPE_FREQ_FACTORS: *cols = c->rope_dims / 2; return 0;
    default: return fail("unknown tensor role");
    }
}

static int set_weight(ll_weight *w, const void *data, size_t bytes, int type, int rows, int cols) {
    const ll_type_traits *t = ll_type(type);
    if (!t || !t->tiles) return fail("no kernel for this tensor type");
    if (cols % t->block_elements) return fail("a row is not a whole number of blocks");
    w->dot = t->tiles;
    w->kind = kind_of(t->activation);
    const size_t stride = ll_row_bytes(type, cols);
    if (bytes != (size_t)rows * stride) return fail("a tensor's buffer is not the size its shape and type imply");
    w->data = data;
    w->type = type;
    w->rows = rows;
    w->cols = cols;
    w->row_bytes = stride;
    return 0;
}

int ll_set_tensor(ll_model *m, int32_t index, int32_t role, const void *data, size_t bytes, int32_t type,
                  int32_t rows, int32_t cols) {
    int want_rows, want_cols;
    if (!data) return fail("a tensor without data");
    if (expected_shape(m, role, &want_rows, &want_cols)) return -1;
    if (want_rows == 0) {  /* a vector of float32 values */
        if (type != LL_F32 || rows != 1 || cols != want_cols || bytes != (size_t)want_cols * sizeof(float))
            return fail("a vector's length or type does not fit the model's configuration");
    } else if (rows != want_rows || cols != want_cols) {
        return fail("a matrix's shape does not fit the model's configuration");
    }
    if (role == ROLE_TOKEN_EMBD) return set_weight(&m->token_embd, data, bytes, type, rows, cols);
    if (role == ROLE_OUTPUT) return set_weight(&m->output, data, bytes, type, rows, cols);
    if (role == ROLE_OUTPUT_NORM) { m->output_norm = data; return 0; }
    if (index < 0 || index >= m->c.layers) return fail("layer index out of range");
    ll_layer *l = &m->layer[index];
    switch (role) {
    case ROLE_ATTN_NORM: l->attn_norm = data; return 0;
    case ROLE_FFN_NORM: l->ffn_norm = data; return 0;
    case ROLE_ATTN_POST_NORM: l->attn_post_norm = data; return 0;
    case ROLE_FFN_POST_NORM: l->ffn_post_norm = data; return 0;
    case ROLE_ATTN_Q_NORM: l->q_norm = data; return 0;
    case ROLE_ATTN_K_NORM: l->k_norm = data; return 0;
    case ROLE_ATTN_Q_BIAS: l->q_bias = data; return 0;
    case ROLE_ATTN_K_BIAS: l->k_bias = data; return 0;
    case ROLE_ATTN_V_BIAS: l->v_bias = data; return 0;
    case ROLE_ROPE_FREQ_FACTORS: l->rope_freq_factors = data; return 0;
    case ROLE_ATTN_Q: l->attention_in_count = 3; return set_weight(&l->attention_in[0], data, bytes, type, rows, cols);
    case ROLE_ATTN_K: l->attention_in_count = 3; return set_weight(&l->attention_in[1], data, bytes, type, rows, cols);
    case ROLE_ATTN_V: l->attention_in_count = 3; return set_weight(&l->attention_in[2], data, bytes, type, rows, cols);
    case ROLE_ATTN_QKV: l->attention_in_count = 1; return set_weight(&l->attention_in[0], data, bytes, type, rows, cols);
    case ROLE_ATTN_OUT: return set_weight(&l->attention_out, data, bytes, type, rows, cols);
    case ROLE_FFN_GATE: l->ffn_in_count = 2; return set_weight(&l->ffn_in[0], data, bytes, type, rows, cols);
    case ROLE_FFN_UP: l->ffn_in_count = 2; return set_weight(&l->ffn_in[1], data, bytes, type, rows, cols);
    case ROLE_FFN_GATE_UP: l->ffn_in_count = 1; return set_weight(&l->ffn_in[0], data, bytes, type, rows, cols);
    case ROLE_FFN_DOWN: return set_weight(&l->ffn_down, data, bytes, type, rows, cols);
    default: return fail("unknown tensor role");
    }
}

int ll_set_window(ll_model *m, int32_t index, int32_t window) {
    if (index < 0 || index >= m->c.layers) return fail("layer index out of range");
    m->layer[index].window = window;
    return 0;
}

int ll_set_rope(ll_model *m, int32_t index, float base, float freq_scale) {
    if (index < 0 || index >= m->c.layers) return fail("layer index out of range");
    if (!(base > 0.0f) || !(freq_scale > 0.0f)) return fail("a rotary base and scale must be positive");
    m->layer[index].rope_base = base;
    m->layer[index].rope_freq_scale = freq_scale;
    return 0;
}

int ll_reserve(ll_model *m, int32_t sequences, int32_t positions, int32_t keep) {
    if (sequences < 1 || positions < 1) return fail("a cache needs at least one sequence and one position");
    if ((int64_t)sequences * positions > INT32_MAX) return fail("the KV cache asked for is larger than the kernels support");
    if (keep && sequences == m->sequences && positions <= m->capacity) return 0;
    const size_t per_position = (size_t)m->c.layers * m->c.kv_heads * m->c.head_dim;
    ll_half *keys = calloc((size_t)sequences * positions * per_position, sizeof(ll_half));
    ll_half *values = calloc((size_t)sequences * positions * per_position, sizeof(ll_half));
    if (!keys || !values) {
        free(keys);
        free(values);
        return fail("out of memory for the KV cache");
    }
    if (keep && sequences == m->sequences && m->keys) {
        /* Growing one cache: keep what it holds, position by position in the new layout. */
        const int old = m->capacity;
        ll_model grown = *m;
        grown.capacity = positions;
        for (int s = 0; s < sequences; s++)
            for (int l = 0; l < m->c.layers; l++)
                for (int h = 0; h < m->c.kv_heads; h++) {
                    memcpy(keys + kv_index(&grown, s, l, h, 0), m->keys + kv_index(m, s, l, h, 0),
                           (size_t)old * m->c.head_dim * sizeof(ll_half));
                    memcpy(values + kv_index(&grown, s, l, h, 0), m->values + kv_index(m, s, l, h, 0),
                           (size_t)old * m->c.head_dim * sizeof(ll_half));
                }
    }
    free(m->keys);
    free(m->values);
    m->keys = keys;
    m->values = values;
    m->sequences = sequences;
    m->capacity = positions;
    return 0;
}

int ll_kv_copy(ll_model *m, int32_t positions, ll_half *keys, ll_half *values, size_t halves, int32_t into_cache) {
    if (positions < 0 || positions > m->capacity || m->sequences < 1)
        return fail("the positions to copy are outside the reserved cache");
    const size_t row = (size_t)positions * m->c.head_dim;
    if (halves != (size_t)m->c.layers * m->c.kv_heads * row) return fail("a KV copy's buffer has the wrong size");
    /* Sequence 0, layer by layer and head by head: the buffer is packed at `positions`, the cache strided at its capacity. */
    for (int l = 0; l < m->c.layers; l++)
        for (int h = 0; h < m->c.kv_heads; h++) {
            const size_t packed = ((size_t)l * m->c.kv_heads + h) * row;
            ll_half *cached_keys = m->keys + kv_index(m, 0, l, h, 0), *cached_values = m->values + kv_index(m, 0, l, h, 0);
            if (into_cache) {
                memcpy(cached_keys, keys + packed, row * sizeof(ll_half));
                memcpy(cached_values, values + packed, row * sizeof(ll_half));
            } else {
                memcpy(keys + packed, cached_keys, row * sizeof(ll_half));
                memcpy(values + packed, cached_values, row * sizeof(ll_half));
            }
        }
    return 0;
}

static int ensure_scratch(ll_model *m, int rows, int threads) {
    if (rows <= m->arena_rows && threads <= m->arena_threads && m->capacity <= m->arena_capacity) return 0;
    if (rows < m->arena_rows) rows = m->arena_rows;
    if (threads < m->arena_threads) threads = m->arena_threads;
    const ll_config *c = &m->c;
    size_t stride[KINDS];
    for (int k = 0; k < KINDS; k++) {
        /* Q8_K needs whole 256-blocks: a width that is not one has no k-quant weight reading it. */
        const int n = kind_type[k] == LL_Q8_K ? (m->max_in + QK_K - 1) / QK_K * QK_K : m->max_in;
        stride[k] = (ll_row_bytes(kind_type[k], n) + 63) / 64 * 64;
    }
    /* The GEMM's activation panels, one per quantised activation type, for passes of GEMM_MIN_TOKENS or more. */
    size_t panel_bytes[KINDS] = {0};
    for (int k = 0; LL_GEMM_LANES && rows >= GEMM_MIN_TOKENS && k < KINDS - 1; k++) {
        const int n = kind_type[k] == LL_Q8_K ? (m->max_in + QK_K - 1) / QK_K * QK_K : m->max_in;
        panel_bytes[k] = (ll_panel_bytes(kind_type[k], n, rows) + 63) / 64 * 64;
    }
    const size_t floats = (size_t)rows * (c->width + m->projected_width + c->heads * c->head_dim + c->width +
                                          2 * (size_t)c->ffn) + (size_t)threads * (m->capacity + 16);
    size_t bytes = floats * sizeof(float) + 64 * 8;
    for (int k = 0; k < KINDS; k++) bytes += rows * stride[k] + panel_bytes[k];
    free(m->arena);
    m->arena = aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!m->arena) {
        m->arena_rows = m->arena_threads = m->arena_capacity = 0;
        return fail("out of memory for scratch buffers");
    }
    m->arena_rows = rows;
    m->arena_threads = threads;
    m->arena_capacity = m->capacity;
    char *p = m->arena;
#define TAKE(ptr, count) do { ptr = (void *)p; p += ((count) * sizeof(float) + 63) / 64 * 64; } while (0)
    TAKE(m->normed, (size_t)rows * c->width);
    TAKE(m->projected, (size_t)rows * m->projected_width);
    TAKE(m->attended, (size_t)rows * c->heads * c->head_dim);
    TAKE(m->sublayer, (size_t)rows * c->width);
    TAKE(m->ffn, (size_t)rows * 2 * c->ffn);
    TAKE(m->scores, (size_t)threads * (m->capacity + 16));
#undef TAKE
    for (int k = 0; k < KINDS; k++) {
        m->act[k] = p;
        m->act_stride[k] = stride[k];
        p += rows * stride[k];
        m->panel[k] = panel_bytes[k] ? p : NULL;
        p += panel_bytes[k];
    }
    return 0;
}

/* ---- small per-row operations ---- */

void ll_rms_norm(const float *x, const float *weight, float *out, int n, float eps) {
    double sum = 0.0;  /* in double, as llama.cpp sums */
    for (int i = 0; i < n; i++) sum += (double)x[i] * x[i];
    const float scale = 1.0f / sqrtf((float)(sum / n) + eps);
    for (int i = 0; i < n; i++) out[i] = x[i] * scale * weight[i];
}

static void rope(float *x, int heads, int head_dim, const float *cosines, const float *sines, int dims, int style) {
    const int half = dims / 2;
    for (int h = 0; h < heads; h++) {
        float *v = x + (size_t)h * head_dim;
        for (int i = 0; i < half; i++) {
            const int a = style == ROPE_ADJACENT ? 2 * i : i, b = style == ROPE_ADJACENT ? 2 * i + 1 : i + half;
            const float x0 = v[a], x1 = v[b];
            v[a] = x0 * cosines[i] - x1 * sines[i];
            v[b] = x0 * sines[i] + x1 * cosines[i];
        }
    }
}

/* GELU (tanh form) as llama.cpp computes it: its input rounded to float16 and its result looked up in a
 * float16 table (ggml_vec_geglu_f32), so the result is rounded to float16 too. */
static float gelu_tanh(float x) {
    if (x <= -10.0f) return 0.0f;
    if (x >= 10.0f) return x;
    const float h = half_to_float(float_to_half(x));
    return half_to_float(float_to_half(0.5f * h * (1.0f + tanhf(0.79788456080286535587989211986876f * h *
                                                                  (1.0f + 0.044715f * h * h)))));
}

/* e^x for a vector: x = n ln 2 + r with |r| <= ln 2 / 2 (ln 2 in two parts, so r keeps its bits), e^r by its
 * Taylor series to r^7 (error below 1e-8 relative, under float's last bit), times 2^n. Inputs are clamped to
 * where float's e^x is finite and normal; SiLU needs no more (its tail is exact either side). */
#if defined(__AVX512F__)
static inline __m512 exp_512(__m512 x) {
    x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-87.0f)), _mm512_set1_ps(88.0f));
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145751953125f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.428606765330187e-06f), r);
    __m512 p = _mm512_set1_ps(1.0f / 5040);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 720));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(p, n);
}
#endif
#if defined(__AVX2__) && defined(__FMA__)
static inline __m256 exp_256(__m256 x) {
    x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.0f)), _mm256_set1_ps(88.0f));
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693145751953125f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(1.428606765330187e-06f), r);
    __m256 p = _mm256_set1_ps(1.0f / 5040);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    /* 2^n: n + 127 into the exponent bits (n is within [-126, 127] after the clamp) */
    const __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(bits));
}
#endif

void ll_activate_row(const ll_model *m, const float *gate, const float *up, float *out) {
    const ll_config *c = &m->c;
    for (int d = 0; d < c->ffn; d++) {
        const float g = gate[d];
        out[d] = (c->activation == ACT_GELU_TANH ? gelu_tanh(g) : g / (1.0f + expf(-g))) * up[d];
    }
}

/* cap * tanh(x / cap), as llama.cpp's scale, tanh, scale. */
static inline float soft_cap(float x, float cap) { return cap * tanhf(x * (1.0f / cap)); }

/* scores[t] = q . keys[t] for t in [0, count): four keys at a time, each with its own accumulator, summed
 * across lanes together. */
static void dot_keys(const float *q, const ll_half *keys, int count, int n, float *scores) {
    int t = 0;
#if defined(__AVX2__) && defined(__FMA__)
    if (n % 8 == 0) {
        for (; t + 4 <= count; t += 4) {
            const ll_half *k = keys + (size_t)t * n;
            __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(),
                   a3 = _mm256_setzero_ps();
            for (int i = 0; i < n; i += 8) {
                const __m256 qv = _mm256_loadu_ps(q + i);
                a0 = _mm256_fmadd_ps(qv, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(k + i))), a0);
                a1 = _mm256_fmadd_ps(qv, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(k + n + i))), a1);
                a2 = _mm256_fmadd_ps(qv, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(k + 2 * n + i))), a2);
                a3 = _mm256_fmadd_ps(qv, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(k + 3 * n + i))), a3);
            }
            const __m256 pairs = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));
            _mm_storeu_ps(scores + t, _mm_add_ps(_mm256_castps256_ps128(pairs), _mm256_extractf128_ps(pairs, 1)));
        }
    }
#endif
    for (; t < count; t++) {
        const ll_half *k = keys + (size_t)t * n;
        float sum = 0.0f;
        for (int i = 0; i < n; i++) sum += q[i] * half_to_float(k[i]);
        scores[t] = sum;
    }
}

/* out = sum_t weights[t] * values[t] over [0, count), four values at a time. */
static void weigh_values(const float *weights, const ll_half *values, int count, int n, float *out) {
    memset(out, 0, (size_t)n * sizeof(float));
    int t = 0;
#if defined(__AVX2__) && defined(__FMA__)
    if (n % 8 == 0) {
        for (; t + 4 <= count; t += 4) {
            const ll_half *v = values + (size_t)t * n;
            const __m256 w0 = _mm256_set1_ps(weights[t]), w1 = _mm256_set1_ps(weights[t + 1]),
                         w2 = _mm256_set1_ps(weights[t + 2]), w3 = _mm256_set1_ps(weights[t + 3]);
            for (int i = 0; i < n; i += 8) {
                __m256 o = _mm256_loadu_ps(out + i);
                o = _mm256_fmadd_ps(w0, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(v + i))), o);
                o = _mm256_fmadd_ps(w1, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(v + n + i))), o);
                o = _mm256_fmadd_ps(w2, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(v + 2 * n + i))), o);
                o = _mm256_fmadd_ps(w3, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(v + 3 * n + i))), o);
                _mm256_storeu_ps(out + i, o);
            }
        }
    }
#endif
    for (; t < count; t++)
        for (int i = 0; i < n; i++) out[i] += weights[t] * half_to_float(values[(size_t)t * n + i]);
}

/* One query head of one row over its sequence's cached keys and values.
 *
 * The arithmetic is llama.cpp's own with a float16 cache (its default): the query is rounded to float16
 * for the products with the keys, the softmax is taken in float, and its weights are rounded to float16
 * before they weigh the values. This model family turns such last-bit differences into a changed top-1
 * token now and then, and llama.cpp is the reference these files are checked against.
 */
static void attend(const ll_model *m, int layer, int seq, int pos, int head, const float *query, float *out,
                   float *scores) {
    const ll_config *c = &m->c;
    const int kv_head = head / (c->heads / c->kv_heads), window = m->layer[layer].window;
    const int first = window > 0 && pos - window + 1 > 0 ? pos - window + 1 : 0;
    const ll_half *keys = m->keys + kv_index(m, seq, layer, kv_head, 0);
    const ll_half *values = m->values + kv_index(m, seq, layer, kv_head, 0);
    /* Families whose llama.cpp graph scales the queries (Gemma, Phi-3) round the scaled query; the others
     * scale the scores inside the softmax. */
    const float query_scale = c->scale_queries ? c->attention_scale : 1.0f;
    const float score_scale = c->scale_queries ? 1.0f : c->attention_scale;
    float rounded_query[512];
    for (int d = 0; d < c->head_dim; d++) rounded_query[d] = half_to_float(float_to_half(query[d] * query_scale));
    const int count = pos - first + 1;
    dot_keys(rounded_query, keys + (size_t)first * c->head_dim, count, c->head_dim, scores);
    float max = -INFINITY;
    for (int t = 0; t < count; t++) {
        float s = scores[t];
        if (c->attention_softcap > 0.0f) s = soft_cap(s, c->attention_softcap);
        s *= score_scale;
        scores[t] = s;
        if (s > max) max = s;
    }
    /* e^(s - max) many lanes at a time: libm's expf, one position at a time, was most of a long context's
     * attention. The sum stays sequential, in the order it always had. */
    int t = 0;
#if defined(__AVX512F__)
    for (; t + 16 <= count; t += 16)
        _mm512_storeu_ps(scores + t, exp_512(_mm512_sub_ps(_mm512_loadu_ps(scores + t), _mm512_set1_ps(max))));
#elif defined(__AVX2__) && defined(__FMA__)
    for (; t + 8 <= count; t += 8)
        _mm256_storeu_ps(scores + t, exp_256(_mm256_sub_ps(_mm256_loadu_ps(scores + t), _mm256_set1_ps(max))));
#endif
    for (; t < count; t++) scores[t] = expf(scores[t] - max);
    float total = 0.0f;
    for (t = 0; t < count; t++) total += scores[t];
    const float inverse = 1.0f / total;
    t = 0;
#if defined(__AVX512F__)
    for (; t + 16 <= count; t += 16)  /* times 1 / total, rounded to float16 (round to nearest even) and back */
        _mm512_storeu_ps(scores + t, _mm512_cvtph_ps(_mm512_cvtps_ph(
            _mm512_mul_ps(_mm512_loadu_ps(scores + t), _mm512_set1_ps(inverse)), _MM_FROUND_TO_NEAREST_INT)));
#elif defined(__AVX2__) && defined(__F16C__)
    for (; t + 8 <= count; t += 8)
        _mm256_storeu_ps(scores + t, _mm256_cvtph_ps(_mm256_cvtps_ph(
            _mm256_mul_ps(_mm256_loadu_ps(scores + t), _mm256_set1_ps(inverse)), _MM_FROUND_TO_NEAREST_INT)));
#endif
    for (; t < count; t++) scores[t] = half_to_float(float_to_half(scores[t] * inverse));
    weigh_values(scores, values + (size_t)first * c->head_dim, count, c->head_dim, out);
}

/* ---- the parallel pieces: every thread calls these; work is shared through m->counters ---- */

/* Weight rows read by the products since the library loaded, counting a row once per kernel call that reads it: how
 * the tests see that a long pass reads each weight once per many tokens, not once per token. */
static uint64_t row_reads;

static inline void count_reads(uint64_t rows) { __atomic_fetch_add(&row_reads, rows, __ATOMIC_RELAXED); }

uint64_t ll_weight_row_reads(void) { return __atomic_load_n(&row_reads, __ATOMIC_RELAXED); }

#define GEMM_READ_TOKENS (LL_GEMM_LANES ? 2 * LL_GEMM_LANES : 1)

/* Whether a pass of `count` rows runs its products on the GEMM (the weight's type has one, and this build has
 * lanes): both paths give the canonical dots, so the choice is speed alone. */
static int uses_gemm(const ll_model *m, const ll_weight *weight, int count) {
    return LL_GEMM_LANES && count >= GEMM_MIN_TOKENS && ll_type(weight->type)->gemm && m->panel[weight->kind];
}

/* The rows a thread takes in the per-row steps before a product: whole groups of LL_GEMM_LANES rows when the pass
 * runs on the GEMM, so the thread that normed (or activated) a group's rows also quantises them and lays out the
 * group's panel, with no barrier between; every threads-th row otherwise. */
static inline int row_group(int count) { return LL_GEMM_LANES && count >= GEMM_MIN_TOKENS ? LL_GEMM_LANES : 1; }
#define FOR_ROWS(i, count, tid, threads)                                                                         \
    for (int group_ = row_group(count), first_ = (tid) * group_; first_ < (count); first_ += (threads) * group_) \
        for (int i = first_; i < first_ + group_ && i < (count); i++)

/* Quantise rows [0, count) of x (width n) into every activation format `weights` read, and into the GEMM's panels
 * where the pass runs on it: then each thread takes whole groups of LL_GEMM_LANES rows, so it can lay out the
 * group it quantised without waiting for the other threads. */
static void quantize_rows(ll_model *m, const ll_weight *weights, int weight_count, const float *x, int x_stride,
                          int n, int count, int tid, int threads) {
    int wanted[KINDS] = {0}, panels[KINDS] = {0};
    for (int w = 0; w < weight_count; w++) {
        wanted[weights[w].kind] = 1;
        if (uses_gemm(m, &weights[w], count)) panels[weights[w].kind] = 1;
    }
    for (int k = 0; k < KINDS; k++) {
        if (!wanted[k]) continue;
        void (*const quantize)(const float *, void *, int) = ll_type(kind_type[k])->quantize;
        if (!panels[k]) {
            FOR_ROWS(i, count, tid, threads) quantize(x + (size_t)i * x_stride, m->act[k] + i * m->act_stride[k], n);
            continue;
        }
#if LL_GEMM_LANES
        const size_t group_bytes = ll_panel_bytes(kind_type[k], n, LL_GEMM_LANES);
        for (int first = tid * LL_GEMM_LANES; first < count; first += threads * LL_GEMM_LANES) {  /* as FOR_ROWS */
            const int rows = count - first < LL_GEMM_LANES ? count - first : LL_GEMM_LANES;
            for (int i = first; i < first + rows; i++)
                quantize(x + (size_t)i * x_stride, m->act[k] + i * m->act_stride[k], n);
            ll_panel_build(kind_type[k], n, m->act[k] + first * m->act_stride[k], m->act_stride[k], rows,
                           m->panel[k] + (size_t)(first / LL_GEMM_LANES) * group_bytes);
        }
#endif
    }
}

/* out[i][offset_w + r] (+)= W_w[r] . act_i for the weights side by side, rows [0, count); jobs from *counter. */
static void project(ll_model *m, const ll_weight *weights, int weight_count, int count, float *out, int out_stride,
                    int accumulate, int *counter, int threads) {
    const int tiles = (count + TOKEN_TILE - 1) / TOKEN_TILE;
    int chunks[3], chunk_rows[3], total = 0;
    for (int w = 0; w < weight_count; w++) {
        /* Long runs of rows per job: each thread then streams contiguous memory, which the prefetchers follow;
         * short interleaved chunks left a second thread's bandwidth unused (a decode step took 1.4x as long). */
        int rows = (weights[w].rows + threads * CHUNKS_PER_THREAD - 1) / (threads * CHUNKS_PER_THREAD);
        rows = rows < MIN_CHUNK ? MIN_CHUNK : (rows + 3) / 4 * 4;
        chunk_rows[w] = rows;
        chunks[w] = (weights[w].rows + rows - 1) / rows;
        total += chunks[w] * tiles;
    }
    for (;;) {
        int job = __atomic_fetch_add(counter, 1, __ATOMIC_RELAXED);
        if (job >= total) break;
        int w = 0, offset = 0;
        while (job >= chunks[w] * tiles) {
            job -= chunks[w] * tiles;
            offset += weights[w].rows;
            w++;
        }
        const ll_weight *weight = &weights[w];
        const int kind = weight->kind;
        const int row0 = (job / tiles) * chunk_rows[w], tile0 = (job % tiles) * TOKEN_TILE;
        const int row_end = row0 + chunk_rows[w] < weight->rows ? row0 + chunk_rows[w] : weight->rows;
        if (uses_gemm(m, weight, count)) {  /* one job: the chunk's rows against every token */
            if (tile0 == 0) {
                ll_type(weight->type)->gemm(weight->cols, (const char *)weight->data + (size_t)row0 * weight->row_bytes,
                                            weight->row_bytes, row_end - row0, m->panel[kind], count,
                                            out + offset + row0, out_stride, accumulate);
                /* the GEMM reads each row once per two registers of tokens */
                count_reads((uint64_t)(row_end - row0) * ((count + GEMM_READ_TOKENS - 1) / GEMM_READ_TOKENS));
            }
            continue;
        }
        const int tile_end = tile0 + TOKEN_TILE < count ? tile0 + TOKEN_TILE : count;
        count_reads((uint64_t)(row_end - row0) * ((tile_end - tile0 + DOT_ROWS - 1) / DOT_ROWS));
        const size_t stride = m->act_stride[kind];
        /* A single token (a decode step) runs decode_rows weight rows a call (1, or 2 for AVX-512's legacy
         * kernels) by 1 token; a prompt PREFILL_ROWS (4) rows by DOT_ROWS (4) tokens, fewer at the edges. */
        const int tile_rows = count == 1 ? decode_rows(weight->type) : PREFILL_ROWS;
        for (int r = row0; r < row_end; r += tile_rows) {
            const int rows = row_end - r < tile_rows ? row_end - r : tile_rows;
            const char *row = (const char *)weight->data + (size_t)r * weight->row_bytes;
            for (int i = tile0; i < tile_end; i += DOT_ROWS) {
                const int n = tile_end - i < DOT_ROWS ? tile_end - i : DOT_ROWS;
                float results[4 * DOT_ROWS];
                weight->dot(weight->cols, row, weight->row_bytes, m->act[kind] + i * stride, stride, rows, n, results);
                for (int k = 0; k < rows; k++)
                    for (int j = 0; j < n; j++) {
                        float *target = out + (size_t)(i + j) * out_stride + offset + r + k;
                        *target = accumulate ? *target + results[k * n + j] : results[k * n + j];
                    }
            }
        }
    }
}

static void add_bias(float *x, const float *bias, int n) {
    if (bias) for (int i = 0; i < n; i++) x[i] += bias[i];
}

void ll_prepare_row(ll_model *m, int layer, float *projected, int seq, int pos, float *cosines, float *sines) {
    const ll_config *c = &m->c;
    const ll_layer *l = &m->layer[layer];
    const int q_size = c->heads * c->head_dim, kv_size = c->kv_heads * c->head_dim;
    float *q = projected, *k = projected + q_size, *v = projected + q_size + kv_size;
    add_bias(q, l->q_bias, q_size);
    add_bias(k, l->k_bias, kv_size);
    add_bias(v, l->v_bias, kv_size);
    if (l->q_norm)
        for (int h = 0; h < c->heads; h++) ll_rms_norm(q + h * c->head_dim, l->q_norm, q + h * c->head_dim, c->head_dim, c->norm_eps);
    if (l->k_norm)
        for (int h = 0; h < c->kv_heads; h++) ll_rms_norm(k + h * c->head_dim, l->k_norm, k + h * c->head_dim, c->head_dim, c->norm_eps);
    /* The angles exactly as llama.cpp's rope cache makes them (theta multiplied up in float, divided by the
     * frequency factor, then scaled): this model family amplifies a last-bit difference here into a changed
     * top-1 token now and then, and llama.cpp is the reference these files are checked against. */
    const float theta_scale = powf(l->rope_base, -2.0f / c->rope_dims);
    float theta = (float)pos;
    for (int i = 0; i < c->rope_dims / 2; i++) {
        const float factor = l->rope_freq_factors ? l->rope_freq_factors[i] : 1.0f;
        const float angle = l->rope_freq_scale * (theta / factor);
        cosines[i] = cosf(angle);
        sines[i] = sinf(angle);
        theta *= theta_scale;
    }
    rope(q, c->heads, c->head_dim, cosines, sines, c->rope_dims, c->rope_style);
    rope(k, c->kv_heads, c->head_dim, cosines, sines, c->rope_dims, c->rope_style);
    for (int h = 0; h < c->kv_heads; h++) {
        ll_half *key = m->keys + kv_index(m, seq, layer, h, pos), *value = m->values + kv_index(m, seq, layer, h, pos);
        for (int d = 0; d < c->head_dim; d++) {
            key[d] = float_to_half(k[h * c->head_dim + d]);
            value[d] = float_to_half(v[h * c->head_dim + d]);
        }
    }
}

/* Thread 0 zeroes a later phase's job counter: before a barrier, as model_internal.h's rule says. */
static void reset(int *counter, int tid) {
    if (tid == 0) *counter = 0;
}

static void layer_pass(ll_model *m, int layer, float *hidden, int count, const int32_t *seq, const int32_t *pos,
                       int tid, int threads) {
    const ll_config *c = &m->c;
    const ll_layer *l = &m->layer[layer];
    const int q_size = c->heads * c->head_dim;
    int *qkv_jobs = &m->counters[JOBS_QKV], *attention_jobs = &m->counters[JOBS_ATTENTION],
        *out_jobs = &m->counters[JOBS_ATTENTION_OUT], *ffn_jobs = &m->counters[JOBS_FFN_IN],
        *down_jobs = &m->counters[JOBS_FFN_DOWN];
    float rotary[2][256];

    /* attention */
    reset(qkv_jobs, tid);
    FOR_ROWS(i, count, tid, threads)
        ll_rms_norm(hidden + (size_t)i * c->width, l->attn_norm, m->normed + (size_t)i * c->width, c->width, c->norm_eps);
    quantize_rows(m, l->attention_in, l->attention_in_count, m->normed, c->width, c->width, count, tid, threads);
#pragma omp barrier
    project(m, l->attention_in, l->attention_in_count, count, m->projected, m->projected_width, 0, qkv_jobs, threads);
    reset(attention_jobs, tid);
#pragma omp barrier
    for (int i = tid; i < count; i += threads)
        ll_prepare_row(m, layer, m->projected + (size_t)i * m->projected_width, seq[i], pos[i], rotary[0], rotary[1]);
#pragma omp barrier
    float *scores = m->scores + (size_t)tid * (m->capacity + 16);
    for (;;) {
        const int job = __atomic_fetch_add(attention_jobs, 1, __ATOMIC_RELAXED);
        if (job >= count * c->heads) break;
        const int i = job / c->heads, h = job % c->heads;
        attend(m, layer, seq[i], pos[i], h, m->projected + (size_t)i * m->projected_width + h * c->head_dim,
               m->attended + (size_t)i * q_size + h * c->head_dim, scores);
    }
    reset(out_jobs, tid);
#pragma omp barrier
    quantize_rows(m, &l->attention_out, 1, m->attended, q_size, q_size, count, tid, threads);
#pragma omp barrier
    /* Without a post-norm the projection adds straight into the residual stream. */
    const int post_attention = l->attn_post_norm != NULL;
    project(m, &l->attention_out, 1, count, post_attention ? m->sublayer : hidden, c->width, !post_attention, out_jobs, threads);
    reset(ffn_jobs, tid);
#pragma omp barrier

    /* feed-forward */
    FOR_ROWS(i, count, tid, threads) {
        float *x = hidden + (size_t)i * c->width;
        if (post_attention) {
            float *s = m->sublayer + (size_t)i * c->width;
            ll_rms_norm(s, l->attn_post_norm, s, c->width, c->norm_eps);
            for (int d = 0; d < c->width; d++) x[d] += s[d];
        }
        ll_rms_norm(x, l->ffn_norm, m->normed + (size_t)i * c->width, c->width, c->norm_eps);
    }
    quantize_rows(m, l->ffn_in, l->ffn_in_count, m->normed, c->width, c->width, count, tid, threads);
#pragma omp barrier
    project(m, l->ffn_in, l->ffn_in_count, count, m->ffn, 2 * c->ffn, 0, ffn_jobs, threads);
    reset(down_jobs, tid);
#pragma omp barrier
    FOR_ROWS(i, count, tid, threads) {
        float *gate = m->ffn + (size_t)i * 2 * c->ffn, *up = gate + c->ffn;
        ll_activate_row(m, gate, up, gate);
    }
    quantize_rows(m, &l->ffn_down, 1, m->ffn, 2 * c->ffn, c->ffn, count, tid, threads);
#pragma omp barrier
    const int post_ffn = l->ffn_post_norm != NULL;
    project(m, &l->ffn_down, 1, count, post_ffn ? m->sublayer : hidden, c->width, !post_ffn, down_jobs, threads);
#pragma omp barrier
    if (post_ffn) {
        for (int i = tid; i < count; i += threads) {
            float *x = hidden + (size_t)i * c->width, *s = m->sublayer + (size_t)i * c->width;
            ll_rms_norm(s, l->ffn_post_norm, s, c->width, c->norm_eps);
            for (int d = 0; d < c->width; d++) x[d] += s[d];
        }
#pragma omp barrier
    }
}

int ll_check_ready(const ll_model *m) {
    if (!m->token_embd.data || !m->output.data || !m->output_norm) return fail("the model is missing its embedding, head or final norm");
    for (int i = 0; i < m->c.layers; i++) {
        const ll_layer *l = &m->layer[i];
        if (!l->attn_norm || !l->ffn_norm || !l->attention_out.data || !l->ffn_down.data || !(l->rope_base > 0.0f) ||
            !l->attention_in_count || !l->ffn_in_count)
            return fail("a layer is missing a tensor");
        for (int w = 0; w < l->attention_in_count; w++) if (!l->attention_in[w].data) return fail("a layer is missing q, k or v");
        for (int w = 0; w < l->ffn_in_count; w++) if (!l->ffn_in[w].data) return fail("a layer is missing its gate or up");
    }
    if (m->c.rope_dims / 2 > 256 || m->c.head_dim > 512) return fail("heads wider than 512 are not supported");
    return 0;
}

int ll_embed(ll_model *m, const int32_t *tokens, int32_t count, float *hidden, size_t hidden_floats) {
    if (!m->token_embd.data) return fail("the model is missing its embedding");
    if (!ll_holds(hidden_floats, count, m->c.width)) return fail("the hidden buffer is smaller than count rows of width");
    void (*const dequantize)(const void *, float *, int) = ll_type(m->token_embd.type)->dequantize;
    for (int i = 0; i < count; i++) {
        if (tokens[i] < 0 || tokens[i] >= m->token_embd.rows) return fail("token id outside the vocabulary");
        float *row = hidden + (size_t)i * m->c.width;
        dequantize((const char *)m->token_embd.data + (size_t)tokens[i] * m->token_embd.row_bytes, row, m->c.width);
        if (m->c.embed_scale != 1.0f)
            for (int d = 0; d < m->c.width; d++) row[d] *= m->c.embed_scale;
    }
    return 0;
}

int ll_layers(ll_model *m, float *hidden, size_t hidden_floats, int32_t count, const int32_t *seq,
              const int32_t *pos, int32_t first, int32_t end, int32_t threads) {
    if (ll_check_ready(m)) return -1;
    if (!ll_holds(hidden_floats, count, m->c.width)) return fail("the hidden buffer is smaller than count rows of width");
    for (int i = 0; i < count; i++)
        if (seq[i] < 0 || seq[i] >= m->sequences || pos[i] < 0 || pos[i] >= m->capacity)
            return fail("a position or sequence is outside the reserved cache");
    if (first < 0 || end > m->c.layers || first > end) return fail("layer range out of bounds");
    if (threads < 1) threads = 1;
    if (ensure_scratch(m, count, threads)) return -1;
#pragma omp parallel num_threads(threads)
    {
        const int tid = omp_get_thread_num(), team = omp_get_num_threads();
        for (int layer = first; layer < end; layer++) layer_pass(m, layer, hidden, count, seq, pos, tid, team);
    }
    return 0;
}

int ll_logits(ll_model *m, const float *hidden, size_t hidden_floats, int32_t count, float *logits,
              size_t logits_floats, int32_t threads) {
    if (ll_check_ready(m)) return -1;
    if (!ll_holds(hidden_floats, count, m->c.width)) return fail("the hidden buffer is smaller than count rows of width");
    if (!ll_holds(logits_floats, count, m->c.vocab)) return fail("the logits buffer is smaller than count rows of vocab");
    if (threads < 1) threads = 1;
    if (ensure_scratch(m, count, threads)) return -1;
    const ll_config *c = &m->c;
#pragma omp parallel num_threads(threads)
    {
        const int tid = omp_get_thread_num(), team = omp_get_num_threads();
        reset(&m->counters[JOBS_LOGITS], tid);
        FOR_ROWS(i, count, tid, team)
            ll_rms_norm(hidden + (size_t)i * c->width, m->output_norm, m->normed + (size_t)i * c->width, c->width, c->norm_eps);
        quantize_rows(m, &m->output, 1, m->normed, c->width, c->width, count, tid, team);
#pragma omp barrier
        project(m, &m->output, 1, count, logits, c->vocab, 0, &m->counters[JOBS_LOGITS], team);
#pragma omp barrier
        if (c->final_softcap > 0.0f)
            for (int i = tid; i < count; i += team)
                for (int v = 0; v < c->vocab; v++) {
                    float *x = logits + (size_t)i * c->vocab + v;
                    *x = soft_cap(*x, c->final_softcap);
                }
    }
    return 0;
}
