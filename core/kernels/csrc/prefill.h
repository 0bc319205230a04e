/* The steps of a layer between its matrix products, for a prompt's pass whose products run as GEMMs elsewhere. */
#ifndef LL_PREFILL_H
#define LL_PREFILL_H

#include "model.h"

enum { UNPACK_F32 = 0, UNPACK_BF16 = 1 };

/* Each buffer comes with its size in elements, checked against `count` rows of the width the configuration
 * implies before anything is read or written. */

/* normed = the layer's attention norm of each of `count` rows of hidden. */
LL_API int ll_stage_attention_norm(ll_model *m, int32_t layer, const float *hidden, size_t hidden_floats, int32_t count,
                            float *normed, size_t normed_floats, int32_t threads);
/* projected: [count][q | k | v] as the products gave them; adds biases, applies head norms and the rotary
 * embedding in place, and writes each row's keys and values (float16) to its sequence's cache at pos[i]. */
LL_API int ll_stage_prepare(ll_model *m, int32_t layer, float *projected, size_t projected_floats, int32_t count,
                     const int32_t *seq, const int32_t *pos, size_t positions, int32_t threads);
/* hidden += (post-normed) output of sublayer 0 (attention) or 1 (feed-forward); after attention, normed gets
 * the feed-forward's norm of the new hidden when it is not NULL. */
LL_API int ll_stage_residual(ll_model *m, int32_t layer, int32_t sublayer, float *hidden, size_t hidden_floats,
                      float *output, size_t output_floats, int32_t count, float *normed, size_t normed_floats,
                      int32_t threads);
/* out [count][ffn] = act(gate) * up, from gate_up [count][gate | up]. */
LL_API int ll_stage_activate(ll_model *m, const float *gate_up, size_t gate_up_floats, int32_t count, float *out,
                      size_t out_floats, int32_t threads);
/* rows x cols of a tensor of `type` (its file bytes) as float32 or bfloat16 (rounded to nearest even). */
LL_API int ll_unpack_rows(int32_t type, const void *data, size_t data_bytes, int32_t rows, int32_t cols, void *out,
                   size_t out_bytes, int32_t format, int32_t threads);
/* The float16 KV cache, [sequence][layer][kv head][position][head_dim]: keys, or values when `values` is set. */
LL_API void *ll_cache(ll_model *m, int32_t values);

#endif
