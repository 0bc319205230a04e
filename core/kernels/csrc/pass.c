/* A pass over the decoder's layers: one parallel region per call, phases split by barriers.
 *
 * Rows of work are handed out from a shared counter, not split up front: when the window's painting takes a
 * core from one thread for a moment, the other takes the rows that thread would have done. A decode step's
 * products run on the tiles (quants.c); a pass of GEMM_MIN_TOKENS or more on the GEMM (gemm.h), which gives
 * every row the same bits.
 */
#include "model_internal.h"

#include <omp.h>
#include <stdlib.h>

#define fail ll_fail

#ifndef CHUNKS_PER_THREAD
#define CHUNKS_PER_THREAD 2  /* a prompt's jobs per thread and matrix: one thread can take over part of a stalled one's */
#endif
#define MIN_CHUNK 16             /* weight rows per job at least */
#define TAIL_JOBS_PER_THREAD 4   /* a decode step's short jobs after the long runs (split_rows) */
#ifndef PREFILL_ROWS
#define PREFILL_ROWS 4    /* weight rows per kernel call in a prompt's pass, against 4 tokens (2 and 3 were slower) */
#endif
/* Weight rows per kernel call for a single token. The AVX2 kernels: one (more were slower). The AVX-512 ones: four
 * for the legacy 4- and 5-bit types, whose block sums then reduce together and whose float steps run with rows in
 * lanes (dots_avx512.c's rows4: the 1B shape's Q4_0 decode went from 59 to 41 ms a token on 2 threads); one for
 * Q8_0 (rows4 made it 37 -> 58 ms: its loads, not its arithmetic, bound it) and the k-quants. */
static int decode_rows(int type) {
#ifdef DECODE_ROWS
    (void)type;
    return DECODE_ROWS;
#else
    if (!LL_AVX512_DOTS) return 1;
    return type == LL_Q4_0 || type == LL_Q4_1 || type == LL_Q5_0 || type == LL_Q5_1 ? 4 : 1;
#endif
}
#define TOKEN_TILE 32    /* activation rows per job: a tile stays in L1 while the chunk's rows pass over it */
#ifndef GEMM_TAIL_TOKENS
#define GEMM_TAIL_TOKENS (LL_GEMM_LANES / 2)  /* a pass's last tokens past whole groups of lanes, on the tiles (gemm_tokens) */
#endif
#ifndef GEMM_MIN_TOKENS
#define GEMM_MIN_TOKENS 16  /* a pass of this many rows or more runs its products on the GEMM */
#endif

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
                                          2 * (size_t)c->ffn) + (size_t)threads * ATTEND_GROUP * (m->capacity + 16) + c->width;
    size_t bytes = floats * sizeof(float) + 64 * 8;
    for (int k = 0; k < KINDS; k++) bytes += rows * stride[k] + panel_bytes[k];
    const size_t own_stride = ll_step_own_bytes(m, stride);
    bytes += (size_t)threads * own_stride;
    if (ll_step_reserve(m)) return fail("out of memory for the decode step's job words");
    ll_step_quiesce(m);  /* a late step worker may still read the old arena */
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
    TAKE(m->scores, (size_t)threads * ATTEND_GROUP * (m->capacity + 16));
    TAKE(m->step_hidden, (size_t)c->width);
#undef TAKE
    for (int k = 0; k < KINDS; k++) {
        m->act[k] = p;
        m->act_stride[k] = stride[k];
        p += rows * stride[k];
        m->panel[k] = panel_bytes[k] ? p : NULL;
        p += panel_bytes[k];
    }
    m->own = p;
    m->own_stride = own_stride;
    return 0;
}

/* Weight rows read by the products since the library loaded, counting a row once per kernel call that reads it: how
 * the tests see that a long pass reads each weight once per many tokens, not once per token. */
static uint64_t row_reads;

static inline void count_reads(uint64_t rows) { __atomic_fetch_add(&row_reads, rows, __ATOMIC_RELAXED); }

uint64_t ll_weight_row_reads(void) { return __atomic_load_n(&row_reads, __ATOMIC_RELAXED); }

#define GEMM_READ_TOKENS (LL_GEMM_LANES ? 2 * LL_GEMM_LANES : 1)

/* Whether a pass of `count` rows runs its products on the GEMM (the weight's type has one, and this build has
 * lanes): both paths give the canonical dots, so the choice is speed alone. */
static int uses_gemm(const ll_model *m, const ll_weight *weight, int count) {
    const ll_type_traits *t = ll_type(weight->type);
    return LL_GEMM_LANES && count >= GEMM_MIN_TOKENS && (weight->packed ? t->packed_gemm : t->gemm) &&
           m->panel[weight->kind];
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

/* A tile's results[k * n + j] (weight row first + k, token i + j) into out, or added to it. */
static inline void store(float *out, int out_stride, int first, int i, int rows, int n, const float *results,
                         int accumulate) {
    for (int k = 0; k < rows; k++)
        for (int j = 0; j < n; j++) {
            float *target = out + (size_t)(i + j) * out_stride + first + k;
            *target = accumulate ? *target + results[k * n + j] : results[k * n + j];
        }
}

static inline int align_up(int rows, int align) { return (rows + align - 1) / align * align; }

/* Long runs of rows per job: each thread then streams contiguous memory, which the prefetchers follow; short
 * interleaved chunks left a second thread's bandwidth unused (a decode step took 1.4x as long). A decode step gives
 * each thread one long run of 7/8 of the rows between them, then the tail in short jobs (TAIL_JOBS_PER_THREAD a
 * thread): the thread done first takes short jobs instead of waiting at the barrier for the other's last long one.
 * Against CHUNKS_PER_THREAD equal jobs, step by step in one process (Xeon AMX): the 1B Q4_K_M 0.94-0.98x the step,
 * the 7B 0.96x, the 135M 0.97x. A row's arithmetic is the same in any job: the bits do not change. */
row_split ll_split_rows(const ll_weight *weight, int count, int threads) {
    const int align = weight->packed ? PACK_ROWS : 4; /* a packed matrix's jobs are whole groups */
    row_split split = {0, 0, 0, 0};
    if (count == 1 && threads > 1) {
        const int long_rows = align_up(weight->rows * 7 / (8 * threads), align);
        if (long_rows > 0 && long_rows * threads < weight->rows) {
            split.long_rows = long_rows;
            split.long_jobs = threads;
        }
    }
    const int rest = weight->rows - split.long_jobs * split.long_rows;
    const int parts = threads * (split.long_jobs ? TAIL_JOBS_PER_THREAD : CHUNKS_PER_THREAD);
    const int rows = (rest + parts - 1) / parts;
    split.rows = rows < MIN_CHUNK ? MIN_CHUNK : align_up(rows, align);
    split.jobs = split.long_jobs + (rest + split.rows - 1) / split.rows;
    return split;
}

/* out[i][offset_w + r] (+)= W_w[r] . act_i for the weights side by side, rows [0, count); jobs from *counter. */
static void project(ll_model *m, const ll_weight *weights, int weight_count, int count, float *out, int out_stride,
                    int accumulate, int *counter, int threads) {
    const int tiles = (count + TOKEN_TILE - 1) / TOKEN_TILE;
    row_split splits[3];
    int total = 0;
    for (int w = 0; w < weight_count; w++) {
        splits[w] = ll_split_rows(&weights[w], count, threads);
        total += splits[w].jobs * tiles;
    }
    for (;;) {
        int job = __atomic_fetch_add(counter, 1, __ATOMIC_RELAXED);
        if (job >= total) break;
        int w = 0, offset = 0;
        while (job >= splits[w].jobs * tiles) {
            job -= splits[w].jobs * tiles;
            offset += weights[w].rows;
            w++;
        }
        const int chunk = job / tiles, tile0 = (job % tiles) * TOKEN_TILE;
        int row0, row_end;
        ll_job_rows(&splits[w], &weights[w], chunk, &row0, &row_end);
        const int tile_end = tile0 + TOKEN_TILE < count ? tile0 + TOKEN_TILE : count;
        ll_project_rows(m, &weights[w], row0, row_end, tile0, tile_end, count, out, out_stride, offset, accumulate);
    }
}

void ll_job_rows(const row_split *split, const ll_weight *weight, int chunk, int *row0, int *row_end) {
    *row0 = chunk < split->long_jobs ? chunk * split->long_rows
                                     : split->long_jobs * split->long_rows + (chunk - split->long_jobs) * split->rows;
    const int span = chunk < split->long_jobs ? split->long_rows : split->rows;
    *row_end = *row0 + span < weight->rows ? *row0 + span : weight->rows;
}

/* Tokens [tile0, tile_end) of a pass of count against weight rows [row0, row_end), on the tiles (quants.c). */
static void project_tiles(ll_model *m, const ll_weight *weight, int row0, int row_end, int tile0, int tile_end,
                          int count, float *out, int out_stride, int offset, int accumulate) {
    const int kind = weight->kind;
    count_reads((uint64_t)(row_end - row0) * ((tile_end - tile0 + DOT_ROWS - 1) / DOT_ROWS));
    const size_t stride = m->act_stride[kind];
    if (weight->packed) {  /* whole groups of PACK_ROWS rows, a tile of tokens at a time */
        const packed_tiles_fn tiles = ll_type(weight->type)->packed_tiles;
        for (int r = row0; r < row_end; r += PACK_ROWS) {
            const char *group = (const char *)weight->packed + (size_t)r * weight->row_bytes;
            for (int i = tile0; i < tile_end; i += DOT_ROWS) {
                const int n = tile_end - i < DOT_ROWS ? tile_end - i : DOT_ROWS;
                float results[PACK_ROWS * DOT_ROWS];
                tiles(weight->cols, group, m->act[kind] + i * stride, stride, n, results);
                store(out, out_stride, offset + r, i, PACK_ROWS, n, results, accumulate);
            }
        }
        return;
    }
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
            store(out, out_stride, offset + r, i, rows, n, results, accumulate);
        }
    }
}

/* The tokens of a pass of count that run on the GEMM: all of them, but for a last group of lanes holding no more
 * than GEMM_TAIL_TOKENS, which the tiles take, on the rows the GEMM has just read. The GEMM spends a whole group of
 * lanes on them (16 on AVX-512: a 50-token prompt was 64 tokens' arithmetic), a tile a token's arithmetic a token.
 * Ours alone, alternated (EPYC AVX-512): 50 tokens, the 7B 1.61 s against 1.79 and the Qwen2.5 3B 0.76 against 0.86;
 * 56 (8 on the tiles) 0.80 against 0.87; 60 (12) the same either way. The AVX2 kernels (8 lanes), 52 tokens: 1.40
 * against 1.61 s. AMX's tiles make a group of lanes several times cheaper than the tiles' tokens: no tail there.
 * Both paths give the canonical dots, so the choice is speed alone. */
static int gemm_tokens(int count) {
    if (ll_use_amx(-1)) return count;
#if LL_GEMM_LANES
    const int tail = count % LL_GEMM_LANES;
    return tail <= GEMM_TAIL_TOKENS ? count - tail : count;
#else
    return count;
#endif
}

void ll_project_rows(ll_model *m, const ll_weight *weight, int row0, int row_end, int tile0, int tile_end, int count,
                     float *out, int out_stride, int offset, int accumulate) {
    if (uses_gemm(m, weight, count)) {  /* one job: the chunk's rows against every token */
        if (tile0 == 0) {
            const int kind = weight->kind, lanes = gemm_tokens(count);
            const ll_type_traits *t = ll_type(weight->type);
            const gemm_fn gemm = weight->packed ? t->packed_gemm : t->gemm;
            gemm(weight->cols, (const char *)(weight->packed ? weight->packed : weight->data) +
                                   (size_t)row0 * weight->row_bytes,
                 weight->row_bytes, row_end - row0, m->panel[kind], lanes, out + offset + row0, out_stride,
                 accumulate);
            /* the GEMM reads each row once per two registers of tokens */
            count_reads((uint64_t)(row_end - row0) * ((lanes + GEMM_READ_TOKENS - 1) / GEMM_READ_TOKENS));
            if (lanes < count)
                project_tiles(m, weight, row0, row_end, lanes, count, count, out, out_stride, offset, accumulate);
        }
        return;
    }
    project_tiles(m, weight, row0, row_end, tile0, tile_end, count, out, out_stride, offset, accumulate);
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
    float *scores = m->scores + (size_t)tid * ATTEND_GROUP * (m->capacity + 16);
    const int row_jobs = ll_attend_jobs(c), group = c->heads / c->kv_heads;
    /* Rows side by side in one job where a job has fewer than ATTEND_GROUP heads (a 7B without grouped heads: four
     * rows), so each key and value is read once for them all; and head by head, every row of a pass for one
     * key-value head before the next, so that head's keys and values (1 MiB at 2,048 positions of a 128-wide head)
     * stay in the cache from job to job. Row by row, each row read every head's (32 MiB for a 7B's layer at 2,048),
     * more than the last-level cache holds. */
    const int together = ATTEND_GROUP / (group < ATTEND_GROUP ? group : ATTEND_GROUP);
    const int row_groups = (count + together - 1) / together;
    for (;;) {
        const int job = __atomic_fetch_add(attention_jobs, 1, __ATOMIC_RELAXED);
        if (job >= row_groups * row_jobs) break;
        const int part = job / row_groups, i = job % row_groups * together;
        int heads, rows = 1;
        const int head = ll_attend_heads(c, part, &heads);
        /* consecutive positions of one sequence, as a prompt's rows are; a batch of sequences' rows one at a time */
        while (rows < together && i + rows < count && seq[i + rows] == seq[i] && pos[i + rows] == pos[i] + rows)
            rows++;
        for (int r = i; r < i + together && r < count; r += rows, rows = 1)  /* past a break: a row at a time */
            ll_attend_rows(m, layer, seq[r], pos[r], rows, part, m->projected + (size_t)r * m->projected_width,
                           m->projected_width, m->attended + (size_t)r * q_size + (size_t)head * c->head_dim, q_size,
                           scores);
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
    if (count == 1) {  /* a decode step's one row split across the team, rather than one thread working alone */
        const int share = (c->ffn + threads - 1) / threads, from = tid * share;
        ll_activate(m, m->ffn, m->ffn + c->ffn, m->ffn, from, from + share < c->ffn ? from + share : c->ffn);
#pragma omp barrier
    } else {
        FOR_ROWS(i, count, tid, threads) {
            float *gate = m->ffn + (size_t)i * 2 * c->ffn, *up = gate + c->ffn;
            ll_activate(m, gate, up, gate, 0, c->ffn);
        }
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
    if (ll_steps(m, count, threads))  /* a decode step: no barriers, on the model's own threads (decode_step.c) */
        return ll_step(m, STEP_LAYERS, hidden, NULL, first, end, seq[0], pos[0], threads);
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
    if (ll_steps(m, count, threads)) return ll_step(m, STEP_LOGITS, (float *)hidden, logits, 0, 0, 0, 0, threads);
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
