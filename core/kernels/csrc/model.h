/* The decoder-only transformer that runs a GGUF's own quant blocks: its configuration, weights and KV cache. */
#ifndef LL_MODEL_H
#define LL_MODEL_H

#include <stdint.h>

#include "quants.h"

/* Weight roles, set one by one from Python with ll_set_tensor (layer -1 for the model-wide ones); Python reads
 * their names with ll_role_name. */
enum {
    ROLE_TOKEN_EMBD, ROLE_OUTPUT, ROLE_OUTPUT_NORM,
    ROLE_ATTN_NORM, ROLE_ATTN_Q, ROLE_ATTN_K, ROLE_ATTN_V, ROLE_ATTN_QKV, ROLE_ATTN_OUT,
    ROLE_ATTN_Q_NORM, ROLE_ATTN_K_NORM, ROLE_ATTN_Q_BIAS, ROLE_ATTN_K_BIAS, ROLE_ATTN_V_BIAS, ROLE_ATTN_POST_NORM,
    ROLE_FFN_NORM, ROLE_FFN_GATE, ROLE_FFN_UP, ROLE_FFN_GATE_UP, ROLE_FFN_DOWN, ROLE_FFN_POST_NORM,
    ROLE_ROPE_FREQ_FACTORS, ROLE_COUNT
};

enum { ACT_SILU, ACT_GELU_TANH, ACT_COUNT };
enum { ROPE_ADJACENT, ROPE_HALVES, ROPE_COUNT };  /* llama.cpp's "normal" pairs (2i, 2i+1), and NeoX's (i, i + n/2) */

/* The names Python knows these enums by ("attn_q", "gelu_tanh", "halves"), NULL past the last. */
LL_API const char *ll_role_name(int32_t role);
LL_API const char *ll_activation_name(int32_t activation);
LL_API const char *ll_rope_style_name(int32_t style);

/* Plain data, mirrored by a ctypes Structure in core/kernels/library.py, which checks its size against
 * ll_sizeof_config when it loads the library. */
typedef struct {
    int32_t layers, width, heads, kv_heads, head_dim, ffn, vocab;
    int32_t rope_dims, rope_style, activation, scale_queries;
    float norm_eps, embed_scale, attention_scale, attention_softcap, final_softcap;
} ll_config;

LL_API size_t ll_sizeof_config(void);

typedef struct {
    const void *data;
    int32_t type, rows, cols;
    size_t row_bytes;
    dot_tile_fn dot;  /* the type's tile kernel and activation slot, resolved once from the type table */
    int32_t kind;
    void *packed;     /* the rows in the type's packed layout (ll_pack), owned; NULL: the products read data */
    void *widened;    /* a widened type's rows (quants.h), owned: data until packing replaces them; NULL otherwise */
    const void *narrow;  /* that type's own rows, borrowed, which ll_pack lays out in its packed layout */
    int32_t narrow_type;
} ll_weight;

typedef struct {
    ll_weight attention_in[3];  /* q, k, v (or one fused qkv), their outputs side by side */
    int attention_in_count;
    ll_weight attention_out, ffn_in[2], ffn_down;  /* ffn_in: gate, up (or one fused gate_up) */
    int ffn_in_count;
    const float *attn_norm, *ffn_norm, *attn_post_norm, *ffn_post_norm, *q_norm, *k_norm;
    const float *q_bias, *k_bias, *v_bias;
    float rope_base, rope_freq_scale;  /* rotary base, and linear scaling's 1 / factor */
    const float *rope_freq_factors;    /* Llama 3's per-dimension factors dividing each angle, or NULL */
    int32_t window;                    /* sliding-window length, 0 for full attention */
} ll_layer;

typedef struct ll_model ll_model;

/* Every buffer comes with its size, and every size is checked against the configuration before it is used: a
 * GGUF is untrusted input, and Python's checks (core/model/tensor_shapes.py) are not the only line. */
#define LL_MAX_LAYERS 4096
#define LL_MAX_HEAD_DIM 512

LL_API ll_model *ll_model_new(const ll_config *config);
LL_API void ll_model_free(ll_model *model);
/* A borrowed pointer: the data (a memory-mapped GGUF, or arrays Python keeps) must outlive the model. bytes is
 * the buffer's size; rows and cols must be what the role's place in the configuration implies (a vector: rows 1,
 * cols its length, float32). A matrix of a type the table widens (Q3_K) is copied into its wide type here, and data
 * is then read again only by ll_pack, where the type has a packed layout; the embedding, only ever read a row at a
 * time, stays as it is. */
LL_API int ll_set_tensor(ll_model *model, int32_t layer, int32_t role, const void *data, size_t bytes, int32_t type,
                  int32_t rows, int32_t cols);
/* A matrix set by ll_set_tensor copied into its type's packed layout (quants.h), where this build has one and its
 * rows are a whole number of groups; the products then read the copy alone, so the caller may let the file's
 * pages go. 1: packed, 0: left as it is (the token embedding always: it is read by row), -1: an error. */
LL_API int ll_pack(ll_model *model, int32_t layer, int32_t role, int32_t threads);
LL_API int ll_set_window(ll_model *model, int32_t layer, int32_t window);
LL_API int ll_set_rope(ll_model *model, int32_t layer, float base, float freq_scale);
/* Room for `sequences` caches of `positions` each. With keep, a cache that is large enough stays, and one that
 * grows keeps what it holds; without, the cache is made anew at exactly that size (a long reply's is given back). */
LL_API int ll_reserve(ll_model *model, int32_t sequences, int32_t positions, int32_t keep);
/* Positions [0, positions) of sequence 0's keys and values, copied out of the cache (into_cache 0) or back into
 * it (1); keys and values each hold `halves` = layers * kv_heads * positions * head_dim halves, packed in that order. */
LL_API int ll_kv_copy(ll_model *model, int32_t positions, ll_half *keys, ll_half *values, size_t halves,
                      int32_t into_cache);
/* Rows of token embeddings (dequantised, times embed_scale) into hidden [count, width]; hidden_floats is its size. */
LL_API int ll_embed(ll_model *model, const int32_t *tokens, int32_t count, float *hidden, size_t hidden_floats);
/* Layers [first, end) over `count` rows of hidden, row i at position pos[i] of sequence seq[i]; each row's
 * keys and values are written to its cache before any row attends, so a prompt's rows see each other causally.
 * seq and pos hold count entries each; hidden_floats is hidden's size. */
LL_API int ll_layers(ll_model *model, float *hidden, size_t hidden_floats, int32_t count, const int32_t *seq,
              const int32_t *pos, int32_t first, int32_t end, int32_t threads);
/* Logits [count, vocab] for `count` rows of hidden after the last layer (final norm, head, soft-cap). */
LL_API int ll_logits(ll_model *model, const float *hidden, size_t hidden_floats, int32_t count, float *logits,
              size_t logits_floats, int32_t threads);
LL_API const char *ll_last_error(void);
/* Weight rows the products have read since the library loaded, a row counted once per kernel call that reads it. */
LL_API uint64_t ll_weight_row_reads(void);
/* A decode step on several threads without barriers (decode_step.c): 1 on, 0 off (the barrier pass), -1 asks;
 * returns whether on. */
LL_API int ll_use_steps(int on);
/* Jobs a thread computed and published after waiting for another thread that held them (since the library loaded). */
LL_API uint64_t ll_step_steals(void);
/* For the tests: thread `thread` of a decode step, after every `every`-th job it computes and before publishing it,
 * waits until another thread has published that job (at most `micros`), as a thread held off its core would;
 * thread -1 stops it. */
LL_API void ll_step_stall(int32_t thread, int32_t every, int32_t micros);
/* How many times the tests' held thread has held a job so. */
LL_API uint64_t ll_step_holds(void);

#endif
