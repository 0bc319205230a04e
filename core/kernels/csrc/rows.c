/* The steps of a layer one row at a time: norms, the rotary embedding, the activation, and attention over the cache.
 *
 * Each row's arithmetic is the same whatever else shares its pass, as the products' is (quants.c): a token's
 * logits do not depend on how many tokens share its pass.
 */
#include "model_internal.h"

#include <pthread.h>

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
 * float16 table (ggml_vec_geglu_f32), so the result is rounded to float16 too. The table is llama.cpp's own idea
 * and ours for the same reason: one float16 input has one result, and tanhf per element was a tenth of a Gemma
 * decode step, on one thread. */
static float gelu_formula(float h) {
    return half_to_float(float_to_half(0.5f * h * (1.0f + tanhf(0.79788456080286535587989211986876f * h *
                                                                  (1.0f + 0.044715f * h * h)))));
}

static float gelu_table[1 << 16];  /* by the input's float16 bits */
static pthread_once_t gelu_table_made = PTHREAD_ONCE_INIT;

static void make_gelu_table(void) {
    for (uint32_t h = 0; h < 1u << 16; h++) gelu_table[h] = gelu_formula(half_to_float((ll_half)h));
}

static inline float gelu_tanh(float x) {
    if (x <= -10.0f) return 0.0f;
    if (x >= 10.0f) return x;
    return gelu_table[float_to_half(x)];
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

void ll_activate(const ll_model *m, const float *gate, const float *up, float *out, int from, int to) {
    const ll_config *c = &m->c;
    if (c->activation == ACT_GELU_TANH) pthread_once(&gelu_table_made, make_gelu_table);
    for (int d = from; d < to; d++) {
        const float g = gate[d];
        out[d] = (c->activation == ACT_GELU_TANH ? gelu_tanh(g) : g / (1.0f + expf(-g))) * up[d];
    }
}


/* Attention reads each key and value once for several query heads, those that share its key-value head (GQA): a
 * key or value converted from float16 serves them all. The conversions were what a long context's attention waited
 * on (each head converted its group's keys and values again). Each head's arithmetic is the one-head loop's own:
 * the same fused multiply-adds in the same order, each head's sum reduced as before, so the bits do not depend on
 * how many heads share a pass, and batch invariance holds. TOGETHER heads at a time fit the registers: 16 on AVX2,
 * 32 with AVX-512. */
#if defined(__AVX512VL__)
#define TOGETHER 4
#else
#define TOGETHER 2
#endif

#if defined(__AVX2__) && defined(__FMA__)
static inline __m256 half8(const ll_half *x) { return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)x)); }

/* scores[j][t] = q[j] . keys[t] for G heads j and t in [0, end), end a multiple of four: four keys at a time, each
 * with its own accumulator, summed across lanes together. */
#define DOT_HEADS(G)                                                                                              \
    static void dot_heads_##G(float *const *q, const ll_half *keys, int end, int n, float *const *scores) {      \
        for (int t = 0; t < end; t += 4) {                                                                         \
            const ll_half *k = keys + (size_t)t * n;                                                               \
            __m256 a[G][4];                                                                                        \
            for (int j = 0; j < G; j++)                                                                            \
                for (int r = 0; r < 4; r++) a[j][r] = _mm256_setzero_ps();                                         \
            for (int i = 0; i < n; i += 8) {                                                                       \
                const __m256 k0 = half8(k + i), k1 = half8(k + n + i), k2 = half8(k + 2 * n + i),                  \
                             k3 = half8(k + 3 * n + i);                                                            \
                for (int j = 0; j < G; j++) {                                                                      \
                    const __m256 qv = _mm256_loadu_ps(q[j] + i);                                                   \
                    a[j][0] = _mm256_fmadd_ps(qv, k0, a[j][0]);                                                    \
                    a[j][1] = _mm256_fmadd_ps(qv, k1, a[j][1]);                                                    \
                    a[j][2] = _mm256_fmadd_ps(qv, k2, a[j][2]);                                                    \
                    a[j][3] = _mm256_fmadd_ps(qv, k3, a[j][3]);                                                    \
                }                                                                                                  \
            }                                                                                                      \
            for (int j = 0; j < G; j++) {                                                                          \
                const __m256 pairs = _mm256_hadd_ps(_mm256_hadd_ps(a[j][0], a[j][1]), _mm256_hadd_ps(a[j][2], a[j][3])); \
                _mm_storeu_ps(scores[j] + t,                                                                       \
                              _mm_add_ps(_mm256_castps256_ps128(pairs), _mm256_extractf128_ps(pairs, 1)));         \
            }                                                                                                      \
        }                                                                                                          \
    }

/* out[j][0, 8 * LANES) += sum_t weights[j][t] * values[t] over [0, count) for G heads j: each lane's sum stays in a
 * register across every position, one fused multiply-add a position, in the order of the positions. (Written back
 * to out and read again for each position, as it was, a lane's sums waited on a store and a reload between any two.)
 * It starts from out, zeroed before the first call, so a later call continues the same sums over further positions.
 * Each pass over the positions reads 32 of a value's dimensions, one line of every 2 to 8 (a strided walk the
 * hardware's prefetchers do not run far enough ahead of): the line 16 positions on is asked for early. Gemma 2's
 * decode step at 2,048 positions (eight such passes over 256 dimensions): 58.1, 64.9, 53.9, 65.2 ms against 66.5,
 * 74.5, 54.4, 74.1 without, in four alternated pairs on the EPYC AVX-512. */
#define WEIGH_HEADS(G, LANES)                                                                                     \
    static void weigh_heads_##G##_##LANES(float *const *weights, const ll_half *values, int count, int n,         \
                                           float *const *out) {                                                    \
        __m256 sum[G][LANES];                                                                                      \
        for (int j = 0; j < G; j++)                                                                                \
            for (int r = 0; r < LANES; r++) sum[j][r] = _mm256_loadu_ps(out[j] + 8 * r);                           \
        for (int t = 0; t < count; t++) {                                                                          \
            const ll_half *v = values + (size_t)t * n;                                                             \
            _mm_prefetch((const char *)(v + 16 * n), _MM_HINT_T0);                                                 \
            __m256 x[LANES];                                                                                       \
            for (int r = 0; r < LANES; r++) x[r] = half8(v + 8 * r);                                               \
            for (int j = 0; j < G; j++) {                                                                          \
                const __m256 w = _mm256_set1_ps(weights[j][t]);                                                    \
                for (int r = 0; r < LANES; r++) sum[j][r] = _mm256_fmadd_ps(w, x[r], sum[j][r]);                   \
            }                                                                                                      \
        }                                                                                                          \
        for (int j = 0; j < G; j++)                                                                                \
            for (int r = 0; r < LANES; r++) _mm256_storeu_ps(out[j] + 8 * r, sum[j][r]);                           \
    }

DOT_HEADS(1)
DOT_HEADS(TOGETHER)
WEIGH_HEADS(1, 1)
WEIGH_HEADS(1, 4)
WEIGH_HEADS(TOGETHER, 1)
WEIGH_HEADS(TOGETHER, 4)
#undef DOT_HEADS
#undef WEIGH_HEADS

/* dot_heads_G for `heads` heads (at most ATTEND_GROUP), TOGETHER at a time and then one at a time; end: positions a
 * multiple of four. */
static void dot_heads(float *const *q, int heads, const ll_half *keys, int end, int n, float *const *scores) {
    int j = 0;
    for (; j + TOGETHER <= heads; j += TOGETHER) dot_heads_TOGETHER(q + j, keys, end, n, scores + j);
    for (; j < heads; j++) dot_heads_1(q + j, keys, end, n, scores + j);
}

static void weigh_heads(float *const *weights, int heads, const ll_half *values, int end, int n, float *const *out) {
    float *part[ATTEND_GROUP];
    for (int i = 0; i < n;) {  /* 32 dimensions at a time, then 8 */
        const int wide = i + 32 <= n;
        for (int j = 0; j < heads; j++) part[j] = out[j] + i;
        int j = 0;
        for (; j + TOGETHER <= heads; j += TOGETHER)
            (wide ? weigh_heads_TOGETHER_4 : weigh_heads_TOGETHER_1)(weights + j, values + i, end, n, part + j);
        for (; j < heads; j++) (wide ? weigh_heads_1_4 : weigh_heads_1_1)(weights + j, values + i, end, n, part + j);
        i += wide ? 32 : 8;
    }
}
#endif

/* One head's softmax over its scores, in place: scaled (or soft-capped), e^(s - max), and times 1 / total rounded to
 * float16, as llama.cpp's float16 cache has it. */
static void softmax(const ll_config *c, float *scores, int count, float score_scale) {
    float max = -INFINITY;
    int from = 0;
#if defined(__AVX2__)
    if (c->attention_softcap <= 0.0f) {  /* scaled and their maximum taken eight at a time: a maximum is exact */
        __m256 most = _mm256_set1_ps(-INFINITY);
        for (; from + 8 <= count; from += 8) {
            const __m256 scaled = _mm256_mul_ps(_mm256_loadu_ps(scores + from), _mm256_set1_ps(score_scale));
            _mm256_storeu_ps(scores + from, scaled);
            most = _mm256_max_ps(most, scaled);
        }
        float lanes[8];
        _mm256_storeu_ps(lanes, most);
        for (int lane = 0; lane < 8; lane++)
            if (lanes[lane] > max) max = lanes[lane];
    }
#endif
    for (int t = from; t < count; t++) {
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
}

int ll_attend_jobs(const ll_config *c) {
    const int group = c->heads / c->kv_heads;
    return c->kv_heads * ((group + ATTEND_GROUP - 1) / ATTEND_GROUP);
}

int ll_attend_heads(const ll_config *c, int job, int *heads) {
    const int group = c->heads / c->kv_heads, parts = (group + ATTEND_GROUP - 1) / ATTEND_GROUP;
    const int part = job % parts, first = job / parts * group + part * ATTEND_GROUP;
    *heads = group - part * ATTEND_GROUP < ATTEND_GROUP ? group - part * ATTEND_GROUP : ATTEND_GROUP;
    return first;
}

/* Attention job `job` of `rows` consecutive rows of one sequence (positions pos, pos + 1, ...) over its cached keys
 * and values: its query heads (ll_attend_heads), which share one key-value head. query: the first row's queries (head
 * 0's first), the next row's query_stride floats on; out: the job's first head's output of the first row, the others
 * after it, the next row's out_stride floats on; scores: ATTEND_GROUP * (capacity + 16) floats, so rows * heads is at
 * most ATTEND_GROUP.
 *
 * Rows that share a pass read each key and value once for all of them, as a key-value head's query heads do: in a
 * 7B without grouped heads, converting each float16 key and value again for every row was what a long prompt's
 * attention spent its time on. Each row's arithmetic is the one-row loop's own (its keys split at the same place
 * between the SIMD loops and the scalar tail, each sum in the same order), so the bits do not depend on how many
 * rows share a call: batch invariance holds.
 *
 * The arithmetic is llama.cpp's own with a float16 cache (its default): the query is rounded to float16
 * for the products with the keys, the softmax is taken in float, and its weights are rounded to float16
 * before they weigh the values. This model family turns such last-bit differences into a changed top-1
 * token now and then, and llama.cpp is the reference these files are checked against.
 */
void ll_attend_rows(const ll_model *m, int layer, int seq, int pos, int rows, int job, const float *query,
                    size_t query_stride, float *out, size_t out_stride, float *scores) {
    const ll_config *c = &m->c;
    const int n = c->head_dim;
    int heads;
    const int head = ll_attend_heads(c, job, &heads);
    const int kv_head = head / (c->heads / c->kv_heads), window = m->layer[layer].window;
    const int first = window > 0 && pos - window + 1 > 0 ? pos - window + 1 : 0;
    const int last_first = window > 0 && pos + rows - window > 0 ? pos + rows - window : 0;
    /* A sliding window that moved within the rows starts their keys apart; more heads than the buffers hold cannot
     * share a call. Either way, a row at a time. */
    if (rows > 1 && (last_first != first || rows * heads > ATTEND_GROUP)) {
        for (int r = 0; r < rows; r++)
            ll_attend_rows(m, layer, seq, pos + r, 1, job, query + r * query_stride, 0, out + r * out_stride, 0, scores);
        return;
    }
    const ll_half *keys = m->keys + kv_index(m, seq, layer, kv_head, 0) + (size_t)first * n;
    const ll_half *values = m->values + kv_index(m, seq, layer, kv_head, 0) + (size_t)first * n;
    /* Families whose llama.cpp graph scales the queries (Gemma, Phi-3) round the scaled query; the others
     * scale the scores inside the softmax. */
    const float query_scale = c->scale_queries ? c->attention_scale : 1.0f;
    const float score_scale = c->scale_queries ? 1.0f : c->attention_scale;
    const int vectors = rows * heads;
    float rounded[ATTEND_GROUP][512];
    float *q[ATTEND_GROUP] = {0}, *weights[ATTEND_GROUP] = {0}, *outs[ATTEND_GROUP] = {0};
    /* By row: its positions, and those the SIMD loops take. */
    int count[ATTEND_GROUP] = {0}, vector_end[ATTEND_GROUP] = {0};
    for (int r = 0; r < rows; r++) {
        count[r] = pos + r - first + 1;
#if defined(__AVX2__) && defined(__FMA__)
        if (n % 8 == 0) vector_end[r] = count[r] / 4 * 4;  /* four at a time; the rest one at a time */
#endif
        for (int j = 0; j < heads; j++) {
            const int v = r * heads + j;
            const float *from = query + r * query_stride + (size_t)(head + j) * n;
            for (int d = 0; d < n; d++) rounded[v][d] = half_to_float(float_to_half(from[d] * query_scale));
            q[v] = rounded[v];
            weights[v] = scores + (size_t)v * (m->capacity + 16);
            outs[v] = out + r * out_stride + (size_t)j * n;
            memset(outs[v], 0, (size_t)n * sizeof(float));
        }
    }
#if defined(__AVX2__) && defined(__FMA__)
    /* The first row has the fewest positions: every row takes those together, then its own further ones. */
    const int shared = vector_end[0];
    float *later[ATTEND_GROUP];
    if (shared) dot_heads(q, vectors, keys, shared, n, weights);
    for (int r = 0; r < rows; r++) {
        if (vector_end[r] == shared) continue;
        for (int j = 0; j < heads; j++) later[j] = weights[r * heads + j] + shared;
        dot_heads(q + r * heads, heads, keys + (size_t)shared * n, vector_end[r] - shared, n, later);
    }
#endif
    for (int v = 0; v < vectors; v++) {
        const int r = v / heads;
        for (int t = vector_end[r]; t < count[r]; t++) {
            const ll_half *k = keys + (size_t)t * n;
            float sum = 0.0f;
            for (int i = 0; i < n; i++) sum += q[v][i] * half_to_float(k[i]);
            weights[v][t] = sum;
        }
        softmax(c, weights[v], count[r], score_scale);
    }
#if defined(__AVX2__) && defined(__FMA__)
    if (shared) weigh_heads(weights, vectors, values, shared, n, outs);
    for (int r = 0; r < rows; r++) {
        if (vector_end[r] == shared) continue;
        for (int j = 0; j < heads; j++) later[j] = weights[r * heads + j] + shared;
        weigh_heads(later, heads, values + (size_t)shared * n, vector_end[r] - shared, n, outs + r * heads);
    }
#endif
    for (int v = 0; v < vectors; v++) {
        const int r = v / heads;
        for (int t = vector_end[r]; t < count[r]; t++)
            for (int i = 0; i < n; i++) outs[v][i] += weights[v][t] * half_to_float(values[(size_t)t * n + i]);
    }
}

void ll_attend(const ll_model *m, int layer, int seq, int pos, int job, const float *query, float *out,
               float *scores) {
    ll_attend_rows(m, layer, seq, pos, 1, job, query, 0, out, 0, scores);
}

static void add_bias(float *x, const float *bias, int n) {
    if (bias) for (int i = 0; i < n; i++) x[i] += bias[i];
}

void ll_prepare_values(const ll_model *m, int layer, float *projected, int pos, float *cosines, float *sines) {
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
}

void ll_cache_row(ll_model *m, int layer, const float *projected, int seq, int pos) {
    const ll_config *c = &m->c;
    const int q_size = c->heads * c->head_dim, kv_size = c->kv_heads * c->head_dim;
    const float *k = projected + q_size, *v = projected + q_size + kv_size;
    for (int h = 0; h < c->kv_heads; h++) {
        ll_half *key = m->keys + kv_index(m, seq, layer, h, pos), *value = m->values + kv_index(m, seq, layer, h, pos);
        for (int d = 0; d < c->head_dim; d++) {
            key[d] = float_to_half(k[h * c->head_dim + d]);
            value[d] = float_to_half(v[h * c->head_dim + d]);
        }
    }
}

void ll_prepare_row(ll_model *m, int layer, float *projected, int seq, int pos, float *cosines, float *sines) {
    ll_prepare_values(m, layer, projected, pos, cosines, sines);
    ll_cache_row(m, layer, projected, seq, pos);
}
