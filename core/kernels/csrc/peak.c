/* The int8 ceiling: this CPU's rate of 8-bit products summed into 32 bits, as the prompt's GEMM multiplies them
 * (vpdpbusd with AVX-512 VNNI; maddubs and madd with AVX2), from registers alone, on every thread. The roofline
 * places a prompt's pass against it. */
#include <stddef.h>
#include <stdint.h>

#include "api.h"
#include "quants.h"

#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>
#endif

/* Runs `rounds` rounds on each of `threads` threads and returns the products each round does (all threads together),
 * 0 where this build has no SIMD products. Sixteen independent sums over two operand registers the compiler cannot
 * see through (an empty asm each round), so the instructions' throughput, not their latency, sets the pace. */
LL_API uint64_t ll_int8_peak(int64_t rounds, int threads) {
    uint64_t sink = 0;
#pragma omp parallel num_threads(threads) reduction(^: sink)
    {
#if LL_AVX512_DOTS
        __m512i s[16], a = _mm512_set1_epi8(3), b = _mm512_set1_epi8(5);
        for (int k = 0; k < 16; k++) s[k] = _mm512_set1_epi32(k);
        for (int64_t r = 0; r < rounds; r++) {
            for (int k = 0; k < 16; k++) s[k] = _mm512_dpbusd_epi32(s[k], k & 1 ? a : b, k & 2 ? a : b);
            __asm__ volatile("" : "+v"(a), "+v"(b));
        }
        for (int k = 1; k < 16; k++) s[0] = _mm512_add_epi32(s[0], s[k]);
        sink ^= (uint64_t)_mm512_reduce_add_epi32(s[0]);
#elif defined(__AVX2__)
        __m256i s[8], a = _mm256_set1_epi8(3), b = _mm256_set1_epi8(5);
        const __m256i ones = _mm256_set1_epi16(1);
        for (int k = 0; k < 8; k++) s[k] = _mm256_set1_epi32(k);
        /* four maddubs summed in 16 bits, then widened by one madd, as the GEMM sums a 4-bit type's (dots_avx2.c's
         * GEMM_CHUNK); the empty asm makes each maddubs's operand new to the compiler, so none is computed once */
        for (int64_t r = 0; r < rounds; r++)
            for (int k = 0; k < 8; k++) {
                __m256i pairs = _mm256_maddubs_epi16(a, b);
                for (int j = 0; j < 3; j++) {
                    __asm__ volatile("" : "+x"(a));
                    pairs = _mm256_add_epi16(pairs, _mm256_maddubs_epi16(a, b));
                }
                __asm__ volatile("" : "+x"(a), "+x"(b));
                s[k] = _mm256_add_epi32(s[k], _mm256_madd_epi16(pairs, ones));
            }
        for (int k = 1; k < 8; k++) s[0] = _mm256_add_epi32(s[0], s[k]);
        sink ^= (uint64_t)_mm256_extract_epi32(s[0], 0);
#else
        (void)rounds;
#endif
    }
    (void)sink;
#if LL_AVX512_DOTS
    return (uint64_t)threads * 16 * 64;
#elif defined(__AVX2__)
    return (uint64_t)threads * 8 * 4 * 32;
#else
    return 0;
#endif
}
