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
    /* A decode step's phases (decode_step.c): their job words in a ring, the next phase's number, and each thread's
     * own scratch, where a job's results wait until the job is published. */
    struct step_slot *slots;
    uint64_t phase;
    char *own;
    size_t own_stride;
    float *step_hidden;
    struct step_pool *pool;
};

/* A decode step on more than one thread (decode_step.c): its phases end when their jobs are done, not at a barrier,
 * and it runs on the model's own threads (step_pool.c), so the caller returns when the jobs are done. */
#define LL_MAX_STEP_THREADS 32
enum { STEP_LAYERS, STEP_LOGITS };
typedef struct {
    int kind, first, end, seq, pos, threads;
    float *hidden;  /* the model's copy of the caller's row (a late worker must read only the model's memory) */
    float *logits;  /* the caller's: written only by publishing, which a late worker never does */
    uint64_t phase; /* the step's first phase number */
} step_request;

/* Whether a pass of count rows on threads threads runs as a decode step. */
int ll_steps(const ll_model *m, int count, int threads);
/* The step on the caller's thread and the pool's: returns once every job is done. */
int ll_step(ll_model *m, int kind, float *hidden, float *logits, int first, int end, int seq, int pos, int threads);
/* One thread's part of a posted step (the caller's is tid 0); *phase advances past the step's phases. */
void ll_step_run(ll_model *m, const step_request *request, int tid, uint64_t *phase);
size_t ll_step_own_bytes(const ll_model *m, const size_t *act_stride);
int ll_step_reserve(ll_model *m);
/* The pool (step_pool.c): post a step to the workers (starting them, or as many as the step asks), wait until none
 * is inside a step before memory they read is freed or moved, and stop them (with the model). */
int ll_step_post(ll_model *m, const step_request *request);
void ll_step_quiesce(ll_model *m);
void ll_step_stop(ll_model *m);

static inline size_t kv_index(const ll_model *m, int seq, int layer, int kv_head, int pos) {
    return ((((size_t)seq * m->c.layers + layer) * m->c.kv_heads + kv_head) * m->capacity + pos) * m->c.head_dim;
}

void ll_rms_norm(const float *x, const float *weight, float *out, int n, float eps);
/* After attention's projections: biases, head norms, rotary embedding, then the row's keys and values cached. */
void ll_prepare_row(ll_model *m, int layer, float *projected, int seq, int pos, float *cosines, float *sines);
/* Its two halves: the row's values made in place (biases, head norms, rotary), then its keys and values cached. */
void ll_prepare_values(const ll_model *m, int layer, float *projected, int pos, float *cosines, float *sines);
void ll_cache_row(ll_model *m, int layer, const float *projected, int seq, int pos);
/* out[d] = act(gate[d]) * up[d] over one row of the feed-forward (out may be gate). */
/* The feed-forward's activation of elements [from, to) of a row: out = act(gate) * up. */
void ll_activate(const ll_model *m, const float *gate, const float *up, float *out, int from, int to);
int ll_check_ready(const ll_model *m);
/* Attention runs as jobs of at most ATTEND_GROUP query heads that share a key-value head: ll_attend_jobs(c) jobs a
 * row, job j's first head ll_attend_heads(c, j, &heads). ll_attend computes one job of one row, ll_attend_rows one
 * job of consecutive rows of one sequence, at most ATTEND_GROUP heads in all (rows.c); scores holds
 * ATTEND_GROUP * (capacity + 16) floats. */
#define ATTEND_GROUP 4
int ll_attend_jobs(const ll_config *c);
int ll_attend_heads(const ll_config *c, int job, int *heads);
void ll_attend(const ll_model *m, int layer, int seq, int pos, int job, const float *query, float *out,
               float *scores);
void ll_attend_rows(const ll_model *m, int layer, int seq, int pos, int rows, int job, const float *query,
                    size_t query_stride, float *out, size_t out_stride, float *scores);

/* A matrix's rows as jobs: long_jobs runs of long_rows first, then the rest in jobs of `rows` (pass.c says why). */
typedef struct {
    int long_rows, long_jobs, rows, jobs;
} row_split;

row_split ll_split_rows(const ll_weight *weight, int count, int threads);
/* The rows [*row0, *row_end) of a split's job `chunk`. */
void ll_job_rows(const row_split *split, const ll_weight *weight, int chunk, int *row0, int *row_end);
/* out[i * out_stride + offset + r] (+)= W[r] . act_i for rows [row0, row_end) and tokens [tile0, tile_end) of a pass
 * of count tokens: a job's products, the same bits whichever thread or pass runs them. */
void ll_project_rows(ll_model *m, const ll_weight *weight, int row0, int row_end, int tile0, int tile_end, int count,
                     float *out, int out_stride, int offset, int accumulate);

/* cap * tanh(x / cap), as llama.cpp's scale, tanh, scale. */
static inline float soft_cap(float x, float cap) { return cap * tanhf(x * (1.0f / cap)); }

#endif
