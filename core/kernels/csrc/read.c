/* A STREAM-style read of a buffer: wide loads on every thread, four independent accumulators so the loads, not
 * the additions, set the pace. The roofline's bandwidth ceilings time it (torch.sum is slower than memory here:
 * its pairwise float sums kept it at about half of what this loop reads). */
#include <stddef.h>
#include <stdint.h>

#include "api.h"

#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>
#endif

LL_API uint64_t ll_read(const void *data, size_t bytes, int threads) {
    const uint64_t *words = data;
    const size_t count = bytes / sizeof(uint64_t);
    uint64_t total = 0;
#pragma omp parallel num_threads(threads) reduction(^: total)
    {
        uint64_t mine = 0;
#if defined(__AVX512F__)
        __m512i a = _mm512_setzero_si512(), b = a, c = a, d = a;
#pragma omp for schedule(static)
        for (size_t i = 0; i < count / 32; i++) {
            const __m512i *p = (const __m512i *)(words + 32 * i);
            a = _mm512_xor_si512(a, _mm512_loadu_si512(p));
            b = _mm512_xor_si512(b, _mm512_loadu_si512(p + 1));
            c = _mm512_xor_si512(c, _mm512_loadu_si512(p + 2));
            d = _mm512_xor_si512(d, _mm512_loadu_si512(p + 3));
        }
        mine = (uint64_t)_mm512_reduce_add_epi64(_mm512_xor_si512(_mm512_xor_si512(a, b), _mm512_xor_si512(c, d)));
#elif defined(__AVX2__)
        __m256i a = _mm256_setzero_si256(), b = a, c = a, d = a;
#pragma omp for schedule(static)
        for (size_t i = 0; i < count / 16; i++) {
            const __m256i *p = (const __m256i *)(words + 16 * i);
            a = _mm256_xor_si256(a, _mm256_loadu_si256(p));
            b = _mm256_xor_si256(b, _mm256_loadu_si256(p + 1));
            c = _mm256_xor_si256(c, _mm256_loadu_si256(p + 2));
            d = _mm256_xor_si256(d, _mm256_loadu_si256(p + 3));
        }
        const __m256i x = _mm256_xor_si256(_mm256_xor_si256(a, b), _mm256_xor_si256(c, d));
        mine = (uint64_t)(_mm256_extract_epi64(x, 0) ^ _mm256_extract_epi64(x, 1) ^ _mm256_extract_epi64(x, 2) ^
                          _mm256_extract_epi64(x, 3));
#else
#pragma omp for schedule(static)
        for (size_t i = 0; i < count / 4; i++)
            mine ^= words[4 * i] ^ words[4 * i + 1] ^ words[4 * i + 2] ^ words[4 * i + 3];
#endif
        total ^= mine;
    }
    return total;
}
