/* The failure path of sl_assert: report file and line, then abort. */
#include "base/assert.h"

#include <stdio.h>
#include <stdlib.h>

void sl_assert_fail(const char *expr, const char *file, int line, const char *func)
{
    fprintf(stderr, "sluice: assertion failed: %s (%s:%d, %s)\n", expr, file, line, func);
    fflush(stderr);
    abort();
}
