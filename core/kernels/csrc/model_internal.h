/* The model's internals: its layout, its scratch, and the per-row operations of a layer. */
#ifndef LL_MODEL_INTERNAL_H
#define LL_MODEL_INTERNAL_H

#include "model.h"

#define KINDS 4          /* activation formats: Q8_0, Q8_1, Q8_K, float */

int ll_fail(const char *message);
/* A caller's buffer of `elements` holds `count` rows of `width`: checked at every entry point that takes one. */
static inline int ll_holds(size_t elements, int32_t count, int32_t width) {
    return count >= 0 && width >= 0 && elements >= (size_t)count * (size_t)width;
}

static const int kind_type[KINDS] __attribute__((unused)) = {LL_Q8_0, LL_Q8_1, LL_Q8_K, LL_F32};

/* The scratch slot of an activation type (the float slot for F32). */
static inline int kind_of(int activation) {
    for (int k = 0; k < KINDS - 1; k++)
        if (kind_type[k] == activation) return k;
    return KINDS - 1;
}

/* Counters that hand out the jobs of the parallel phases of a pass, one per phase.
 *
 * The rule: thread 0 resets the next phase's counter before the barrier that starts that phase, while the phase
 * before it runs (or before the pass's first barrier). The barrier then makes the zero visible to every thread
 * before any takes a job, and no thread is still taking jobs from it: its last use ended at an earlier barrier.
 * A counter cannot be reset at the start of its own phase (a fast thread may already be taking jobs), and the
 * next phase's counter cannot be the current one's (slower threads are still taking, and overshooting, its jobs
 * while thread 0 resets the next). */
enum {
    JOBS_QKV,             /* the attention's input projections */
    JOBS_ATTENTION,       /* (row, head) pairs of the attention */
    JOBS_ATTENTION_OUT,   /* the attention's output projection */
    JOBS_FFN_IN,          /* gate and up */
    JOBS_FFN_DOWN,
    JOBS_LOGITS,          /* the head, in ll_logits */
    JOB_COUNTERS
};

struct ll_model {
    ll_config c;
    ll_weight token_embd, output;
    const float *output_norm;
    ll_layer *layer;
    ll_half *keys, *values;  /* [sequence][layer][kv head][position][head_dim] */
    int32_t sequences, capacity;
    /* Scratch, grown on demand: sized for `rows` rows, `threads` threads and the cache's capacity. */
    char *arena;
    int arena_rows, arena_threads, arena_capacity;  /* what the arena's layout was made for */
    float *normed, *projected, *attended, *sublayer, *ffn, *scores;
    char *act[KINDS];
    size_t act_stride[KINDS];
    char *panel[KINDS];  /* the GEMM's layout of act[k] (NULL: none, the float kind or a short pass's arena) */
    int max_in, projected_width;
    int counters[JOB_COUNTERS];
};

static inline size_t kv_index(const ll_model *m, int seq, int layer, int kv_head, int pos) {
    return ((((size_t)seq * m->c.layers + layer) * m->c.kv_heads + kv_head) * m->capacity + pos) * m->c.head_dim;
}

void ll_rms_norm(const float *x, const float *weight, float *out, int n, float eps);
/* After attention's projections: biases, head norms, rotary embedding, then the row's keys and values cached. */
void ll_prepare_row(ll_model *m, int layer, float *projected, int seq, int pos, float *cosines, float *sines);
/* out[d] = act(gate[d]) * up[d] over one row of the feed-forward (out may be gate). */
/* The feed-forward's activation of elements [from, to) of a row: out = act(gate) * up. */
void ll_activate(const ll_model *m, const float *gate, const float *up, float *out, int from, int to);
int ll_check_ready(const ll_model *m);
/* One query head of one row over its sequence's cached keys and values, into out (head_dim floats); scores holds
 * room for the row's positions. */
void ll_attend(const ll_model *m, int layer, int seq, int pos, int head, const float *query, float *out,
               float *scores);

/* cap * tanh(x / cap), as llama.cpp's scale, tanh, scale. */
static inline float soft_cap(float x, float cap) { return cap * tanhf(x * (1.0f / cap)); }

#endif
