/* The AVX2 build of XXH3 (compiled with -mavx2; only called after the CPU
 * check in xxh3.c). Each function ends with vzeroupper (SL_XXH3_LEAVE in
 * xxh3_impl.h). */
#include <immintrin.h>

#define XXH_VECTOR XXH_AVX2
#define SL_XXH3_SUFFIX avx2
#define SL_XXH3_LEAVE() _mm256_zeroupper()
#include "base/xxh3_impl.h"
