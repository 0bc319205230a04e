/* A prompt's pass with its matrix products done elsewhere (torch's GEMM): the layer's other steps, and weights
 * unpacked to float32 or bfloat16 for the GEMM.
 *
 * A prompt's pass is compute-bound: its products run fastest as one GEMM per weight over all the prompt's
 * rows, which a well-kept library (oneDNN, with AMX where the CPU has it) does far better than block kernels.
 * Everything between the products stays here, with the decode pass's own arithmetic: the norms (summed in
 * double), biases, head norms, rotary angles, the float16 KV cache writes and the activations.
 */
#include "model_internal.h"

#include <omp.h>
#include <stdlib.h>

#include "prefill.h"

static int check_rows(const ll_model *m, int layer, int count, const int32_t *seq, const int32_t *pos) {
    if (ll_check_ready(m)) return -1;
    if (layer < 0 || layer >= m->c.layers) return ll_fail("layer index out of range");
    if (seq && pos)
        for (int i = 0; i < count; i++)
            if (seq[i] < 0 || seq[i] >= m->sequences || pos[i] < 0 || pos[i] >= m->capacity)
                return ll_fail("a position or sequence is outside the reserved cache");
    return 0;
}

static int width_rows(size_t floats, int32_t count, int32_t width, const char *buffer) {
    if (ll_holds(floats, count, width)) return 0;
    return ll_fail(buffer);
}

int ll_stage_attention_norm(ll_model *m, int32_t layer, const float *hidden, size_t hidden_floats, int32_t count,
                            float *normed, size_t normed_floats, int32_t threads) {
    if (check_rows(m, layer, count, NULL, NULL)) return -1;
    const ll_config *c = &m->c;
    if (width_rows(hidden_floats, count, c->width, "the hidden buffer is smaller than count rows of width") ||
        width_rows(normed_floats, count, c->width, "the normed buffer is smaller than count rows of width"))
        return -1;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int i = 0; i < count; i++)
        ll_rms_norm(hidden + (size_t)i * c->width, m->layer[layer].attn_norm, normed + (size_t)i * c->width, c->width,
                    c->norm_eps);
    return 0;
}

int ll_stage_prepare(ll_model *m, int32_t layer, float *projected, size_t projected_floats, int32_t count,
                     const int32_t *seq, const int32_t *pos, size_t positions, int32_t threads) {
    if (!seq || !pos || !ll_holds(positions, count, 1)) return ll_fail("fewer positions and sequences than rows");
    if (check_rows(m, layer, count, seq, pos)) return -1;
    const int width = (m->c.heads + 2 * m->c.kv_heads) * m->c.head_dim;
    if (width_rows(projected_floats, count, width, "the projected buffer is smaller than count rows of q, k and v"))
        return -1;
#pragma omp parallel num_threads(threads)
    {
        float rotary[2][256];
#pragma omp for schedule(static)
        for (int i = 0; i < count; i++)
            ll_prepare_row(m, layer, projected + (size_t)i * width, seq[i], pos[i], rotary[0], rotary[1]);
    }
    return 0;
}

int ll_stage_residual(ll_model *m, int32_t layer, int32_t sublayer, float *hidden, size_t hidden_floats,
                      float *output, size_t output_floats, int32_t count, float *normed, size_t normed_floats,
                      int32_t threads) {
    if (check_rows(m, layer, count, NULL, NULL)) return -1;
    const ll_config *c = &m->c;
    if (sublayer != 0 && sublayer != 1) return ll_fail("a layer has two sublayers, 0 and 1");
    if (width_rows(hidden_floats, count, c->width, "the hidden buffer is smaller than count rows of width") ||
        width_rows(output_floats, count, c->width, "the output buffer is smaller than count rows of width") ||
        (normed && width_rows(normed_floats, count, c->width, "the normed buffer is smaller than count rows of width")))
        return -1;
    const ll_layer *l = &m->layer[layer];
    const float *post = sublayer == 0 ? l->attn_post_norm : l->ffn_post_norm;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int i = 0; i < count; i++) {
        float *x = hidden + (size_t)i * c->width, *s = output + (size_t)i * c->width;
        if (post) ll_rms_norm(s, post, s, c->width, c->norm_eps);
        for (int d = 0; d < c->width; d++) x[d] += s[d];
        if (sublayer == 0 && normed) ll_rms_norm(x, l->ffn_norm, normed + (size_t)i * c->width, c->width, c->norm_eps);
    }
    return 0;
}

int ll_stage_activate(ll_model *m, const float *gate_up, size_t gate_up_floats, int32_t count, float *out,
                      size_t out_floats, int32_t threads) {
    if (ll_check_ready(m)) return -1;
    const int ffn = m->c.ffn;
    if (width_rows(gate_up_floats, count, 2 * ffn, "the gate and up buffer is smaller than count rows of 2 x ffn") ||
        width_rows(out_floats, count, ffn, "the activation buffer is smaller than count rows of ffn"))
        return -1;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int i = 0; i < count; i++) {
        const float *gate = gate_up + (size_t)i * 2 * ffn;
        ll_activate_row(m, gate, gate + ffn, out + (size_t)i * ffn, 1);
    }
    return 0;
}

static inline uint16_t float_to_bf16(float f) {
    uint32_t bits;
    memcpy(&bits, &f, 4);
    if ((bits & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((bits >> 16) | 0x40);  /* NaN stays NaN */
    return (uint16_t)((bits + 0x7fffu + ((bits >> 16) & 1)) >> 16);  /* round to nearest even */
}

int ll_unpack_rows(int32_t type, const void *data, size_t data_bytes, int32_t rows, int32_t cols, void *out,
                   size_t out_bytes, int32_t format, int32_t threads) {
    const ll_type_traits *t = ll_type(type);
    if (!t || !t->dequantize || cols <= 0 || cols % t->block_elements) return ll_fail("cannot unpack this tensor type");
    if (format != UNPACK_F32 && format != UNPACK_BF16) return ll_fail("unknown unpack format");
    const size_t bytes = ll_row_bytes(type, cols);
    if (rows < 0 || data_bytes / bytes < (size_t)rows) return ll_fail("the tensor's data is shorter than its rows");
    if (!ll_holds(out_bytes / (format == UNPACK_BF16 ? 2 : 4), rows, cols))
        return ll_fail("the unpack buffer is smaller than rows x cols");
    void (*const dequantize)(const void *, float *, int) = t->dequantize;  /* resolved once for every row */
    int failed = 0;  /* a scratch row that could not be allocated */
#pragma omp parallel num_threads(threads) reduction(|: failed)
    {
        float *row = format == UNPACK_BF16 ? malloc((size_t)cols * sizeof(float)) : NULL;
        if (format == UNPACK_BF16 && !row) failed = 1;
#pragma omp for schedule(static)
        for (int r = 0; r < rows; r++) {
            if (failed) continue;
            const void *source = (const char *)data + (size_t)r * bytes;
            if (format == UNPACK_F32) {
                dequantize(source, (float *)out + (size_t)r * cols, cols);
            } else {
                dequantize(source, row, cols);
                uint16_t *target = (uint16_t *)out + (size_t)r * cols;
                for (int e = 0; e < cols; e++) target[e] = float_to_bf16(row[e]);
            }
        }
        free(row);
    }
    return failed ? ll_fail("unpacking a tensor failed") : 0;
}

void *ll_cache(ll_model *m, int32_t values) { return values ? (void *)m->values : (void *)m->keys; }
