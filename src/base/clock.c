/* Microsecond clocks over clock_gettime (base/clock.h). */
#include "base/clock.h"

#include <time.h>

static uint64_t read_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t sl_clock_realtime_us(void)
{
    return read_ns(CLOCK_REALTIME) / 1000;
}

uint64_t sl_clock_monotonic_us(void)
{
    return read_ns(CLOCK_MONOTONIC) / 1000;
}

uint64_t sl_clock_monotonic_ns(void)
{
    return read_ns(CLOCK_MONOTONIC);
}

uint64_t sl_clock_thread_cpu_ns(void)
{
    return read_ns(CLOCK_THREAD_CPUTIME_ID);
}
