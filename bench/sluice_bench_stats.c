/* sluice-bench statistics: medians over rounds and latency percentiles.
 * Medians, not means, because a shared machine produces outliers in both
 * directions and the median of a handful of rounds ignores one of each. */
#include <stdlib.h>

#include "sluice_bench.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

double sb_median(double *v, int n)
{
    if (n <= 0)
        return 0.0;
    qsort(v, (size_t)n, sizeof(v[0]), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

uint64_t sb_percentile(uint64_t *v, size_t n, double q)
{
    if (n == 0)
        return 0;
    qsort(v, n, sizeof(v[0]), cmp_u64);
    size_t i = (size_t)(q * (double)n);
    return v[i < n ? i : n - 1];
}

void sb_lat_push(sb_lat_t *l, uint64_t ns)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 4096;
        uint64_t *p = realloc(l->ns, cap * sizeof(*p));
        if (!p)
            sb_die("out of memory");
        l->ns = p;
        l->cap = cap;
    }
    l->ns[l->n++] = ns;
}
