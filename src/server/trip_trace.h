/* A compile-time trace of a replicated trip's steps (docs/benchmarks.md,
 * "Messages on 3 nodes: one trip, step by step"). Off unless sluiced is
 * built with -DSL_TRIP_TRACE, when each point appends one line
 * "<CLOCK_MONOTONIC ns> <pid> <point> <group hex> <op>" to the file named
 * by the environment's SL_TRIP_TRACE_FILE (O_APPEND: the nodes of a
 * loopback cluster share one file, in one clock). Off, every point
 * compiles to nothing. */
#ifndef SL_SERVER_TRIP_TRACE_H
#define SL_SERVER_TRIP_TRACE_H

#include <stdint.h>

#ifdef SL_TRIP_TRACE
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static inline void sl_trip_trace(const char *point, uint64_t group, uint64_t op)
{
    static atomic_int fd = -2; /* -2: not opened yet; -1: no file named */
    int f = atomic_load(&fd);
    if (f == -2) {
        const char *path = getenv("SL_TRIP_TRACE_FILE");
        f = path ? open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644) : -1;
        atomic_store(&fd, f);
    }
    if (f < 0)
        return;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    char line[128];
    int n = snprintf(line, sizeof(line), "%llu %d %s %llx %llu\n",
                     (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec,
                     (int)getpid(), point, (unsigned long long)group, (unsigned long long)op);
    if (n > 0 && write(f, line, (size_t)n) < 0)
        return;
}

/* A point for a Prepare or a PrepareOk frame (its group and op read from the
 * header, cluster.md 6); other frames are not traced. */
static inline void sl_trip_trace_frame(const char *point, const uint8_t *frame, uint32_t len)
{
    if (len < 256)
        return;
    uint64_t group, op;
    if (frame[60] == 6) { /* Prepare */
        __builtin_memcpy(&group, frame + 216, 8);
        __builtin_memcpy(&op, frame + 176, 8);
    } else if (frame[60] == 7) { /* PrepareOk */
        __builtin_memcpy(&group, frame + 200, 8);
        __builtin_memcpy(&op, frame + 160, 8);
    } else {
        return;
    }
    char name[48];
    snprintf(name, sizeof(name), "%s_%s", point, frame[60] == 6 ? "prep" : "ok");
    sl_trip_trace(name, group, op);
}
#define SL_TRIP(point, group, op)       sl_trip_trace((point), (group), (op))
#define SL_TRIP_FRAME(point, frame, len) sl_trip_trace_frame((point), (frame), (len))
#else
#define SL_TRIP(point, group, op)        ((void)0)
#define SL_TRIP_FRAME(point, frame, len) ((void)0)
#endif

#endif
