/* The AVX2 build of XXH3 (compiled with -mavx2; only called after the CPU
 * check in xxh3.c). */
#define XXH_VECTOR XXH_AVX2
#define SL_XXH3_SUFFIX avx2
#include "base/xxh3_impl.h"
