/* Microsecond clocks. Wall time for protocol timestamps, monotonic time for
 * timeouts and measurements. */
#ifndef SL_BASE_CLOCK_H
#define SL_BASE_CLOCK_H

#include <stdint.h>

/* Microseconds since the Unix epoch (CLOCK_REALTIME). */
uint64_t sl_clock_realtime_us(void);
/* Microseconds from an arbitrary start (CLOCK_MONOTONIC). */
uint64_t sl_clock_monotonic_us(void);
/* Nanoseconds from an arbitrary start (CLOCK_MONOTONIC), for benchmarks. */
uint64_t sl_clock_monotonic_ns(void);
/* CPU time the calling thread has used, in ns (benchmarks). */
uint64_t sl_clock_thread_cpu_ns(void);

#endif
