/* A decode step's layers without barriers: a thread held off its core holds up only its own job, which the others
 * take over.
 *
 * Why: on 2 cores the window's painting (a few ms every frame) takes a core from one of the decode's 2 threads, and
 * with a barrier closing each of a layer's ten phases the other thread waited at the next one for the whole time:
 * each ms the window took cost decode 2 to 3 ms (benchmarks/busy_neighbour.py). Here a phase ends when its jobs are
 * done, whoever did them. A thread that has run out of jobs and still sees one unfinished after STEAL_AFTER_NS
 * computes it too; the first to finish publishes it.
 *
 * How it stays exact and safe:
 *   - A job computes into its thread's own scratch, reading only what earlier phases published, and then publishes
 *     (copies, or adds into the residual stream) only after winning its job word by compare-and-swap. Each job's
 *     result is published once, by one thread, whichever computed it: the same arithmetic in the same order as on
 *     one thread, so the bits are those of the barrier pass (pass.c) and batch invariance holds.
 *   - Every word a phase uses (its next-job counter, its done count, each job's state) carries the phase's number.
 *     A thread that was held off for many phases finds its phase's words carrying a later number: its phase is
 *     over, its compare-and-swap fails, and it discards what it computed (which may have read later phases' data)
 *     and catches up. Nothing it computed late is ever written where others read.
 *   - The team still meets at the end of the parallel region (OpenMP's), once a step rather than ten times a layer.
 */
#define _POSIX_C_SOURCE 200809L  /* clock_gettime, nanosleep */
#include "model_internal.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RING 8                  /* phases whose words are live at once: a phase and the one after it, with room */
#define MAX_JOBS 512
#define NUMBER_SHIFT 24         /* a word: the phase's number above, a count or a state below */
#define VALUE_MASK ((1ull << NUMBER_SHIFT) - 1)
#define PUBLISHING 1
#define PUBLISHED 2
/* A thread with no job left waits this long for an unfinished one before computing it too: well past a phase's
 * last job in a normal step (tens of microseconds on a 7B's largest matrix), well short of a time slice taken by
 * another program (milliseconds). */
#define STEAL_AFTER_NS 100000
#define ACTIVATE_CHUNK 256       /* feed-forward elements a job activates */

struct step_slot {
    _Alignas(64) uint64_t next;
    _Alignas(64) uint64_t done;
    _Alignas(64) uint64_t job[MAX_JOBS];
};

static int steps_on = 1;
static uint64_t steals;
static int stall_thread = -1, stall_every, stall_micros;  /* the tests' held-off thread (ll_step_stall) */
static uint64_t stall_count, holds;

/* LATENCYLAB_STEPS=0 keeps the barrier pass, to compare the two in separate processes (benchmarks/busy_neighbour.py). */
__attribute__((constructor)) static void steps_start(void) {
    const char *wanted = getenv("LATENCYLAB_STEPS");
    if (wanted && strcmp(wanted, "0") == 0) steps_on = 0;
}

LL_API int ll_use_steps(int on) {
    if (on >= 0) steps_on = on != 0;
    return steps_on;
}

LL_API uint64_t ll_step_steals(void) { return __atomic_load_n(&steals, __ATOMIC_RELAXED); }

LL_API uint64_t ll_step_holds(void) { return __atomic_load_n(&holds, __ATOMIC_RELAXED); }

LL_API void ll_step_stall(int32_t thread, int32_t every, int32_t micros) {
    stall_every = every > 0 ? every : 1;
    stall_micros = micros;
    __atomic_store_n(&stall_count, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&stall_thread, thread, __ATOMIC_RELEASE);
}

int ll_steps(const ll_model *m, int count, int threads) {
    const ll_config *c = &m->c;
    const int fits = c->heads <= MAX_JOBS && (c->ffn + ACTIVATE_CHUNK - 1) / ACTIVATE_CHUNK <= MAX_JOBS;
    return steps_on && count == 1 && threads > 1 && threads <= LL_MAX_STEP_THREADS && fits && m->slots != NULL;
}

static size_t align64(size_t bytes) { return (bytes + 63) / 64 * 64; }

/* A thread's own scratch: a job's result rows (the largest matrix's, or a row of the residual stream), two rows for
 * the norms, and one quantised row of each activation format. */
static size_t own_floats(const ll_model *m) {
    const ll_config *c = &m->c;
    size_t rows = (size_t)c->vocab;
    const size_t others[] = {2 * (size_t)c->ffn, (size_t)m->projected_width, (size_t)c->width, (size_t)m->max_in};
    for (size_t i = 0; i < sizeof others / sizeof *others; i++)
        if (others[i] > rows) rows = others[i];
    return rows;
}

size_t ll_step_own_bytes(const ll_model *m, const size_t *act_stride) {
    size_t bytes = align64(own_floats(m) * sizeof(float)) + 2 * align64((size_t)m->max_in * sizeof(float));
    for (int k = 0; k < KINDS; k++) bytes += align64(act_stride[k]);
    return bytes;
}

int ll_step_reserve(ll_model *m) {
    if (m->slots) return 0;
    m->slots = aligned_alloc(64, RING * sizeof(struct step_slot));
    if (!m->slots) return -1;
    memset(m->slots, 0, RING * sizeof(struct step_slot));
    m->phase = 1;  /* the ring starts at zero: every word names an earlier phase */
    return 0;
}

/* A thread's own scratch, carved as ll_step_own_bytes counts it. */
typedef struct {
    float *rows, *first, *second;
    char *act[KINDS];
} own_scratch;

static own_scratch own_of(const ll_model *m, int tid) {
    char *p = m->own + (size_t)tid * m->own_stride;
    own_scratch own;
    own.rows = (float *)p;
    p += align64(own_floats(m) * sizeof(float));
    own.first = (float *)p;
    p += align64((size_t)m->max_in * sizeof(float));
    own.second = (float *)p;
    p += align64((size_t)m->max_in * sizeof(float));
    for (int k = 0; k < KINDS; k++) {
        own.act[k] = p;
        p += align64(m->act_stride[k]);
    }
    return own;
}

/* ---- the phases: what a job computes into its thread's scratch, and what publishing it writes ---- */

enum { ACTIVATIONS, PRODUCTS, PREPARE, ATTEND, ACTIVATE };

typedef struct {
    int kind, jobs, layer;
    /* ACTIVATIONS: x (n floats) plus, where post_norm is set, the post-norm of the sublayer row added into x (x is
     * then published too); normed by norm where set; then quantised into each format `weights` read. */
    float *x;
    const float *post_norm, *norm;
    int n;
    const ll_weight *weights;
    int weight_count;
    /* PRODUCTS: out[offset + r] (+)= W[r] . act, soft-capped by cap where above 0 */
    row_split splits[3];
    float *out;
    int accumulate;
    float cap;
    int seq, pos;
} phase;

static void wanted_kinds(const phase *p, int wanted[KINDS]) {
    for (int k = 0; k < KINDS; k++) wanted[k] = 0;
    for (int w = 0; w < p->weight_count; w++) wanted[p->weights[w].kind] = 1;
}

/* The weight, row range and column offset of a products job. */
static const ll_weight *product_rows(const phase *p, int job, int *row0, int *row_end, int *offset) {
    int w = 0;
    *offset = 0;
    while (job >= p->splits[w].jobs) {
        job -= p->splits[w].jobs;
        *offset += p->weights[w].rows;
        w++;
    }
    ll_job_rows(&p->splits[w], &p->weights[w], job, row0, row_end);
    return &p->weights[w];
}

static void compute(ll_model *m, const phase *p, int job, own_scratch *own, int tid) {
    const ll_config *c = &m->c;
    switch (p->kind) {
    case ACTIVATIONS: {
        const float *x = p->x;
        if (p->post_norm) {  /* as pass.c: the sublayer's post-norm, added into the residual stream */
            ll_rms_norm(m->sublayer, p->post_norm, own->second, c->width, c->norm_eps);
            for (int d = 0; d < p->n; d++) own->rows[d] = p->x[d] + own->second[d];
            x = own->rows;
        }
        if (p->norm) {
            ll_rms_norm(x, p->norm, own->first, p->n, c->norm_eps);
            x = own->first;
        }
        int wanted[KINDS];
        wanted_kinds(p, wanted);
        for (int k = 0; k < KINDS; k++)
            if (wanted[k]) ll_type(kind_type[k])->quantize(x, own->act[k], p->n);
        break;
    }
    case PRODUCTS: {
        int row0, row_end, offset;
        const ll_weight *weight = product_rows(p, job, &row0, &row_end, &offset);
        ll_project_rows(m, weight, row0, row_end, 0, 1, 1, own->rows, 0, -row0, 0);
        break;
    }
    case PREPARE: {
        float rotary[2][256];
        memcpy(own->rows, m->projected, (size_t)m->projected_width * sizeof(float));
        ll_prepare_values(m, p->layer, own->rows, p->pos, rotary[0], rotary[1]);
        break;
    }
    case ATTEND:
        ll_attend(m, p->layer, p->seq, p->pos, job, m->projected, own->rows,
                  m->scores + (size_t)tid * ATTEND_GROUP * (m->capacity + 16));
        break;
    case ACTIVATE: {
        const int from = job * ACTIVATE_CHUNK, to = from + ACTIVATE_CHUNK < c->ffn ? from + ACTIVATE_CHUNK : c->ffn;
        ll_activate(m, m->ffn + from, m->ffn + c->ffn + from, own->rows, 0, to - from);
        break;
    }
    }
}

static void publish(ll_model *m, const phase *p, int job, const own_scratch *own) {
    const ll_config *c = &m->c;
    switch (p->kind) {
    case ACTIVATIONS: {
        if (p->post_norm) memcpy(p->x, own->rows, (size_t)p->n * sizeof(float));
        int wanted[KINDS];
        wanted_kinds(p, wanted);
        for (int k = 0; k < KINDS; k++)
            if (wanted[k]) memcpy(m->act[k], own->act[k], ll_row_bytes(kind_type[k], p->n));
        break;
    }
    case PRODUCTS: {
        int row0, row_end, offset;
        product_rows(p, job, &row0, &row_end, &offset);
        float *out = p->out + offset;
        for (int r = row0; r < row_end; r++) {
            const float value = own->rows[r - row0];
            out[r] = p->accumulate ? out[r] + value : p->cap > 0.0f ? soft_cap(value, p->cap) : value;
        }
        break;
    }
    case PREPARE:
        memcpy(m->projected, own->rows, (size_t)m->projected_width * sizeof(float));
        ll_cache_row(m, p->layer, own->rows, p->seq, p->pos);
        break;
    case ATTEND: {
        int heads;
        const int head = ll_attend_heads(c, job, &heads);
        memcpy(m->attended + (size_t)head * c->head_dim, own->rows, (size_t)heads * c->head_dim * sizeof(float));
        break;
    }
    case ACTIVATE: {
        const int from = job * ACTIVATE_CHUNK, to = from + ACTIVATE_CHUNK < c->ffn ? from + ACTIVATE_CHUNK : c->ffn;
        memcpy(m->ffn + from, own->rows, (size_t)(to - from) * sizeof(float));
        break;
    }
    }
}

/* ---- the words: every one names its phase, so a late thread cannot mistake another phase's for its own ---- */

static inline uint64_t word(uint64_t number, uint64_t value) { return number << NUMBER_SHIFT | value; }
static inline uint64_t number_of(uint64_t w) { return w >> NUMBER_SHIFT; }
static inline uint64_t value_of(uint64_t w) { return w & VALUE_MASK; }

/* The next job of the phase, or -1 when none is left to hand out (or the phase is over). */
static int claim(struct step_slot *slot, uint64_t number, int jobs) {
    uint64_t seen = __atomic_load_n(&slot->next, __ATOMIC_ACQUIRE);
    for (;;) {
        if (number_of(seen) > number) return -1;
        const uint64_t taken = number_of(seen) == number ? value_of(seen) : 0;
        if (taken >= (uint64_t)jobs) return -1;
        if (__atomic_compare_exchange_n(&slot->next, &seen, word(number, taken + 1), 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE))
            return (int)taken;
    }
}

static int finished(struct step_slot *slot, uint64_t number, int jobs) {
    const uint64_t done = __atomic_load_n(&slot->done, __ATOMIC_ACQUIRE);
    return number_of(done) > number || (number_of(done) == number && value_of(done) >= (uint64_t)jobs);
}

static void count_done(struct step_slot *slot, uint64_t number) {
    uint64_t seen = __atomic_load_n(&slot->done, __ATOMIC_RELAXED);
    while (!__atomic_compare_exchange_n(&slot->done, &seen,
                                        number_of(seen) == number ? seen + 1 : word(number, 1), 0,
                                        __ATOMIC_RELEASE, __ATOMIC_RELAXED)) {
    }
}

/* The tests' thread held off its core: on every `every`-th job it computes, it waits (up to stall_micros) until
 * another thread has published the job, as a thread preempted mid-job would find on its return. */
static void held_off(int tid, struct step_slot *slot, uint64_t number, int job) {
    if (tid != __atomic_load_n(&stall_thread, __ATOMIC_ACQUIRE)) return;
    if (__atomic_fetch_add(&stall_count, 1, __ATOMIC_RELAXED) % (uint64_t)stall_every) return;
    __atomic_fetch_add(&holds, 1, __ATOMIC_RELAXED);
    const struct timespec pause = {0, 50000};
    for (int waited = 0; waited < stall_micros; waited += 50) {
        if (number_of(__atomic_load_n(&slot->job[job], __ATOMIC_ACQUIRE)) >= number) return;
        nanosleep(&pause, NULL);
    }
}

/* Compute the job and publish it if no other thread has (a steal, counted before the job is counted done, so that
 * whoever sees the phase done sees the steal too). */
static void attempt(ll_model *m, const phase *p, struct step_slot *slot, uint64_t number, int job, own_scratch *own,
                    int tid, int stealing) {
    uint64_t before = __atomic_load_n(&slot->job[job], __ATOMIC_ACQUIRE);
    if (number_of(before) >= number) return;  /* published, or its phase is long over */
    compute(m, p, job, own, tid);
    if (!stealing) held_off(tid, slot, number, job);  /* the tests hold only a job the thread was handed */
    if (!__atomic_compare_exchange_n(&slot->job[job], &before, word(number, PUBLISHING), 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_RELAXED))
        return;  /* another thread published it first: this result is dropped */
    if (stealing) __atomic_fetch_add(&steals, 1, __ATOMIC_RELAXED);
    publish(m, p, job, own);
    __atomic_store_n(&slot->job[job], word(number, PUBLISHED), __ATOMIC_RELEASE);
    count_done(slot, number);
}

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* A job of the phase no thread has published yet, or -1. */
static int unpublished(struct step_slot *slot, uint64_t number, int jobs) {
    for (int job = 0; job < jobs; job++)
        if (number_of(__atomic_load_n(&slot->job[job], __ATOMIC_ACQUIRE)) < number) return job;
    return -1;
}

static void run(ll_model *m, const phase *p, uint64_t *phase_number, int tid) {
    const uint64_t number = (*phase_number)++;
    struct step_slot *slot = &m->slots[number % RING];
    own_scratch own = own_of(m, tid);
    for (int job; (job = claim(slot, number, p->jobs)) >= 0;) attempt(m, p, slot, number, job, &own, tid, 0);
    uint64_t waiting_since = 0;
    while (!finished(slot, number, p->jobs)) {
        const uint64_t now = now_ns();
        if (!waiting_since) waiting_since = now;
        if (now - waiting_since < STEAL_AFTER_NS) {
            __builtin_ia32_pause();
            continue;
        }
        const int job = unpublished(slot, number, p->jobs);
        if (job >= 0) attempt(m, p, slot, number, job, &own, tid, 1);
        waiting_since = 0;
    }
}

static phase activations(float *x, int n, const float *post_norm, const float *norm, const ll_weight *weights,
                         int weight_count) {
    return (phase){.kind = ACTIVATIONS, .jobs = 1, .x = x, .n = n, .post_norm = post_norm, .norm = norm,
                   .weights = weights, .weight_count = weight_count};
}

static phase products(const ll_weight *weights, int weight_count, float *out, int accumulate, int threads) {
    phase p = {.kind = PRODUCTS, .weights = weights, .weight_count = weight_count, .out = out, .accumulate = accumulate};
    for (int w = 0; w < weight_count; w++) {
        p.splits[w] = ll_split_rows(&weights[w], 1, threads);
        p.jobs += p.splits[w].jobs;
    }
    return p;
}

static void ll_step_layers(ll_model *m, int first, int end, float *hidden, int seq, int pos, uint64_t *number, int tid,
                    int threads) {
    const ll_config *c = &m->c;
    const int q_size = c->heads * c->head_dim;
    for (int layer = first; layer < end; layer++) {
        const ll_layer *l = &m->layer[layer];
        const int post_attention = l->attn_post_norm != NULL, post_ffn = l->ffn_post_norm != NULL;
        phase p = activations(hidden, c->width, NULL, l->attn_norm, l->attention_in, l->attention_in_count);
        run(m, &p, number, tid);
        p = products(l->attention_in, l->attention_in_count, m->projected, 0, threads);
        run(m, &p, number, tid);
        p = (phase){.kind = PREPARE, .jobs = 1, .layer = layer, .seq = seq, .pos = pos};
        run(m, &p, number, tid);
        p = (phase){.kind = ATTEND, .jobs = ll_attend_jobs(c), .layer = layer, .seq = seq, .pos = pos};
        run(m, &p, number, tid);
        p = activations(m->attended, q_size, NULL, NULL, &l->attention_out, 1);
        run(m, &p, number, tid);
        /* Without a post-norm the projection adds straight into the residual stream. */
        p = products(&l->attention_out, 1, post_attention ? m->sublayer : hidden, !post_attention, threads);
        run(m, &p, number, tid);
        p = activations(hidden, c->width, l->attn_post_norm, l->ffn_norm, l->ffn_in, l->ffn_in_count);
        run(m, &p, number, tid);
        p = products(l->ffn_in, l->ffn_in_count, m->ffn, 0, threads);
        run(m, &p, number, tid);
        p = (phase){.kind = ACTIVATE, .jobs = (c->ffn + ACTIVATE_CHUNK - 1) / ACTIVATE_CHUNK};
        run(m, &p, number, tid);
        p = activations(m->ffn, c->ffn, NULL, NULL, &l->ffn_down, 1);
        run(m, &p, number, tid);
        p = products(&l->ffn_down, 1, post_ffn ? m->sublayer : hidden, !post_ffn, threads);
        run(m, &p, number, tid);
        if (post_ffn) {
            p = activations(hidden, c->width, l->ffn_post_norm, NULL, NULL, 0);
            run(m, &p, number, tid);
        }
    }
}

static void ll_step_logits(ll_model *m, const float *hidden, float *logits, uint64_t *number, int tid, int threads) {
    const ll_config *c = &m->c;
    phase p = activations((float *)hidden, c->width, NULL, m->output_norm, &m->output, 1);  /* read, not written */
    run(m, &p, number, tid);
    p = products(&m->output, 1, logits, 0, threads);
    p.cap = c->final_softcap;
    run(m, &p, number, tid);
}

void ll_step_run(ll_model *m, const step_request *request, int tid, uint64_t *phase) {
    if (request->kind == STEP_LAYERS)
        ll_step_layers(m, request->first, request->end, request->hidden, request->seq, request->pos, phase, tid,
                       request->threads);
    else
        ll_step_logits(m, request->hidden, request->logits, phase, tid, request->threads);
}

int ll_step(ll_model *m, int kind, float *hidden, float *logits, int first, int end, int seq, int pos, int threads) {
    memcpy(m->step_hidden, hidden, (size_t)m->c.width * sizeof(float));
    const step_request request = {.kind = kind, .first = first, .end = end, .seq = seq, .pos = pos,
                                  .threads = threads, .hidden = m->step_hidden, .logits = logits,
                                  .phase = m->phase};
    if (ll_step_post(m, &request)) return ll_fail("could not start the decode step's threads");
    uint64_t phase = m->phase;
    ll_step_run(m, &request, 0, &phase);
    m->phase = phase;
    if (kind == STEP_LAYERS) memcpy(hidden, m->step_hidden, (size_t)m->c.width * sizeof(float));
    return 0;
}
