/* A decoder-only transformer over a GGUF's own quant blocks: its configuration, its tensors by role, its KV cache
 * and the token embedding. The passes over its layers are pass.c's; a layer's per-row steps rows.c's. */
#define _DEFAULT_SOURCE /* madvise and its advice names, which -std=c11 alone leaves out */
#include "model_internal.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14; older kernels refuse it with EINVAL and the copy faults as before */
#endif

static _Thread_local char last_error[256];

const char *ll_last_error(void) { return last_error; }

int ll_fail(const char *message) {
    snprintf(last_error, sizeof last_error, "%s", message);
    return -1;
}

#define fail ll_fail

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

static void drop_packed(ll_weight *w) {
    free(w->packed);
    w->packed = NULL;
}

/* Everything a weight owns: its packed copy and its widened rows. */
static void drop_owned(ll_weight *w) {
    drop_packed(w);
    free(w->widened);
    w->widened = NULL;
}

void ll_model_free(ll_model *m) {
    if (!m) return;
    ll_step_stop(m);
    drop_owned(&m->token_embd);
    drop_owned(&m->output);
    for (int i = 0; m->layer && i < m->c.layers; i++) {
        ll_layer *l = &m->layer[i];
        for (int w = 0; w < 3; w++) drop_owned(&l->attention_in[w]);
        for (int w = 0; w < 2; w++) drop_owned(&l->ffn_in[w]);
        drop_owned(&l->attention_out);
        drop_owned(&l->ffn_down);
    }
    free(m->keys);
    free(m->values);
    free(m->arena);
    free(m->slots);
    free(m->layer);
    free(m);
}

/* Sizes the configuration implies, by which the role table gives each tensor's shape. */
enum { SIZE_NONE, SIZE_VOCAB, SIZE_WIDTH, SIZE_Q, SIZE_KV, SIZE_QKV, SIZE_FFN, SIZE_GATE_UP, SIZE_HEAD, SIZE_ROPE };

static int size_of(const ll_config *c, int size) {
    switch (size) {
    case SIZE_VOCAB: return c->vocab;
    case SIZE_WIDTH: return c->width;
    case SIZE_Q: return c->heads * c->head_dim;
    case SIZE_KV: return c->kv_heads * c->head_dim;
    case SIZE_QKV: return (c->heads + 2 * c->kv_heads) * c->head_dim;
    case SIZE_FFN: return c->ffn;
    case SIZE_GATE_UP: return 2 * c->ffn;
    case SIZE_HEAD: return c->head_dim;
    case SIZE_ROPE: return c->rope_dims / 2;
    default: return 0;
    }
}

enum { IN_NONE, IN_ATTENTION, IN_FFN };  /* which of a layer's input counts a role sets */

/* Each role: its shape ([rows, cols], or a float32 vector of cols when rows is SIZE_NONE), whether it is a layer's
 * (else the model's), where it is kept (an ll_weight, or a const float * for a vector), and for the inputs of
 * attention and the feed-forward how many matrices sit side by side when this one is given (q, k, v or one qkv). */
typedef struct {
    int8_t rows, cols, layer, inputs, count;
    uint16_t offset;
} role_entry;

#define MODEL(ROWS, COLS, MEMBER) {ROWS, COLS, 0, IN_NONE, 0, offsetof(ll_model, MEMBER)}
#define LAYER(ROWS, COLS, MEMBER) {ROWS, COLS, 1, IN_NONE, 0, offsetof(ll_layer, MEMBER)}
#define INPUT(ROWS, MEMBER, INPUTS, COUNT) {ROWS, SIZE_WIDTH, 1, INPUTS, COUNT, offsetof(ll_layer, MEMBER)}
static const role_entry roles[ROLE_COUNT] = {
    [ROLE_TOKEN_EMBD] = MODEL(SIZE_VOCAB, SIZE_WIDTH, token_embd),
    [ROLE_OUTPUT] = MODEL(SIZE_VOCAB, SIZE_WIDTH, output),
    [ROLE_OUTPUT_NORM] = MODEL(SIZE_NONE, SIZE_WIDTH, output_norm),
    [ROLE_ATTN_NORM] = LAYER(SIZE_NONE, SIZE_WIDTH, attn_norm),
    [ROLE_ATTN_Q] = INPUT(SIZE_Q, attention_in[0], IN_ATTENTION, 3),
    [ROLE_ATTN_K] = INPUT(SIZE_KV, attention_in[1], IN_ATTENTION, 3),
    [ROLE_ATTN_V] = INPUT(SIZE_KV, attention_in[2], IN_ATTENTION, 3),
    [ROLE_ATTN_QKV] = INPUT(SIZE_QKV, attention_in[0], IN_ATTENTION, 1),
    [ROLE_ATTN_OUT] = LAYER(SIZE_WIDTH, SIZE_Q, attention_out),
    [ROLE_ATTN_Q_NORM] = LAYER(SIZE_NONE, SIZE_HEAD, q_norm),
    [ROLE_ATTN_K_NORM] = LAYER(SIZE_NONE, SIZE_HEAD, k_norm),
    [ROLE_ATTN_Q_BIAS] = LAYER(SIZE_NONE, SIZE_Q, q_bias),
    [ROLE_ATTN_K_BIAS] = LAYER(SIZE_NONE, SIZE_KV, k_bias),
    [ROLE_ATTN_V_BIAS] = LAYER(SIZE_NONE, SIZE_KV, v_bias),
    [ROLE_ATTN_POST_NORM] = LAYER(SIZE_NONE, SIZE_WIDTH, attn_post_norm),
    [ROLE_FFN_NORM] = LAYER(SIZE_NONE, SIZE_WIDTH, ffn_norm),
    [ROLE_FFN_GATE] = INPUT(SIZE_FFN, ffn_in[0], IN_FFN, 2),
    [ROLE_FFN_UP] = INPUT(SIZE_FFN, ffn_in[1], IN_FFN, 2),
    [ROLE_FFN_GATE_UP] = INPUT(SIZE_GATE_UP, ffn_in[0], IN_FFN, 1),
    [ROLE_FFN_DOWN] = LAYER(SIZE_WIDTH, SIZE_FFN, ffn_down),
    [ROLE_FFN_POST_NORM] = LAYER(SIZE_NONE, SIZE_WIDTH, ffn_post_norm),
    [ROLE_ROPE_FREQ_FACTORS] = LAYER(SIZE_NONE, SIZE_ROPE, rope_freq_factors),
};
#undef MODEL
#undef LAYER
#undef INPUT

/* by_row: the embedding, whose rows are only ever dequantised one at a time (ll_embed), never multiplied: a type
 * the table widens stays as it is there. */
static int set_weight(ll_weight *w, const void *data, size_t bytes, int type, int rows, int cols, int by_row) {
    const ll_type_traits *t = ll_type(type);
    if (!t || (!t->tiles && !t->widen)) return fail("no kernel for this tensor type");
    if (cols % t->block_elements) return fail("a row is not a whole number of blocks");
    if (bytes != (size_t)rows * ll_row_bytes(type, cols))
        return fail("a tensor's buffer is not the size its shape and type imply");
    drop_owned(w);
    if (t->widen && !by_row) {
        const size_t wide_bytes = (size_t)rows * ll_row_bytes(t->wide, cols);
        void *wide = aligned_alloc(64, (wide_bytes + 63) / 64 * 64);
        if (!wide) return fail("out of memory widening a tensor");
        t->widen(data, (size_t)rows * (size_t)(cols / t->block_elements), wide);
        w->widened = wide;
        w->narrow = data;
        w->narrow_type = type;
        data = wide;
        type = t->wide;
        t = ll_type(type);
    } else {
        w->narrow = NULL;
    }
    w->dot = t->tiles;
    w->kind = kind_of(t->activation);
    const size_t stride = ll_row_bytes(type, cols);
    w->data = data;
    w->type = type;
    w->rows = rows;
    w->cols = cols;
    w->row_bytes = stride;
    return 0;
}

int ll_set_tensor(ll_model *m, int32_t index, int32_t role, const void *data, size_t bytes, int32_t type,
                  int32_t rows, int32_t cols) {
    if (!data) return fail("a tensor without data");
    if (role < 0 || role >= ROLE_COUNT) return fail("unknown tensor role");
    ll_step_quiesce(m);  /* a late step worker may still read the tensor this replaces */
    const role_entry *entry = &roles[role];
    const int want_rows = size_of(&m->c, entry->rows), want_cols = size_of(&m->c, entry->cols);
    if (entry->rows == SIZE_NONE) {  /* a vector of float32 values */
        if (type != LL_F32 || rows != 1 || cols != want_cols || bytes != (size_t)want_cols * sizeof(float))
            return fail("a vector's length or type does not fit the model's configuration");
    } else if (rows != want_rows || cols != want_cols) {
        return fail("a matrix's shape does not fit the model's configuration");
    }
    if (entry->layer && (index < 0 || index >= m->c.layers)) return fail("layer index out of range");
    char *owner = entry->layer ? (char *)&m->layer[index] : (char *)m;
    if (entry->rows == SIZE_NONE) {
        *(const float **)(owner + entry->offset) = data;
        return 0;
    }
    if (entry->inputs == IN_ATTENTION) m->layer[index].attention_in_count = entry->count;
    if (entry->inputs == IN_FFN) m->layer[index].ffn_in_count = entry->count;
    return set_weight((ll_weight *)(owner + entry->offset), data, bytes, type, rows, cols, role == ROLE_TOKEN_EMBD);
}

/* The whole pages of [start, start + bytes) made present and writable in one call. A copy into fresh memory
 * otherwise traps once each 4 KiB (a million times for a 7B's weights): a plain 4 GB copy on two threads took 1.64 s
 * faulting and 1.0 s populated first; packing the 7B shape, 1.77 -> 1.53 s (four interleaved pairs). The pages are
 * zeroed either way. */
static void populate(char *start, size_t bytes) {
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), first = ((uintptr_t)start + page - 1) / page * page,
                    end = ((uintptr_t)start + bytes) / page * page;
    if (end > first) (void)madvise((void *)first, end - first, MADV_POPULATE_WRITE);
}

int ll_pack(ll_model *m, int32_t index, int32_t role, int32_t threads) {
    if (role < 0 || role >= ROLE_COUNT || roles[role].rows == SIZE_NONE) return fail("only a matrix can be packed");
    const role_entry *entry = &roles[role];
    if (entry->layer && (index < 0 || index >= m->c.layers)) return fail("layer index out of range");
    ll_weight *w = (ll_weight *)((entry->layer ? (char *)&m->layer[index] : (char *)m) + entry->offset);
    if (!w->data) return fail("a matrix is packed after it is set");
    ll_step_quiesce(m);  /* a late step worker may still read the matrix's old layout */
    if (w->packed) return 1;  /* a widened matrix's rows went with its first packing */
    /* A widened matrix packs its own rows in its own type's layout where that type has one; else, the wide rows. */
    const int narrow = w->narrow && ll_type(w->narrow_type)->pack;
    const ll_type_traits *t = ll_type(narrow ? w->narrow_type : w->type);
    if (role == ROLE_TOKEN_EMBD || !t->pack || w->rows % PACK_ROWS) return 0;
    const size_t row_bytes = ll_row_bytes(narrow ? w->narrow_type : w->type, w->cols);
    const void *rows = narrow ? w->narrow : w->data;
    const size_t bytes = (size_t)w->rows * row_bytes;
    void *packed = aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!packed) return fail("out of memory packing a matrix");
    /* No MADV_HUGEPAGE here: where the kernel's defrag setting is "madvise", that advice makes each fault compact
     * memory on the spot, and packing the 7B shape's Q4_K took 3.7 s with it against 2.1 s without. */
    const int groups = w->rows / PACK_ROWS, per_job = 64;
#pragma omp parallel for num_threads(threads < 1 ? 1 : threads) schedule(dynamic)
    for (int g = 0; g < groups; g += per_job) {
        const int count = (groups - g < per_job ? groups - g : per_job) * PACK_ROWS;
        const size_t offset = (size_t)g * PACK_ROWS * row_bytes;
        populate((char *)packed + offset, (size_t)count * row_bytes);
        t->pack((const char *)rows + offset, count, w->cols, (char *)packed + offset);
    }
    drop_packed(w);
    w->packed = packed;
    if (w->widened) {  /* the products read the packed copy alone (pass.c): the widened rows are not needed */
        free(w->widened);
        w->widened = NULL;
        w->data = packed;  /* set, for the checks that every weight is; never read in the file's layout again */
        if (narrow) {      /* the matrix is its own type again, packed */
            w->type = w->narrow_type;
            w->row_bytes = row_bytes;
        }
        w->narrow = NULL;
    }
    return 1;
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
    ll_step_quiesce(m);  /* a late step worker may still read the old cache */
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
