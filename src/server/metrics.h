/* The server's counters for GET /metrics (docs/metrics.md): requests,
 * errors and latency per command, bytes and messages in and out, and the
 * fsync latency histogram; and the Prometheus text rendered from them plus
 * the live state (connections, sessions, streams, topics, partitions,
 * consumer groups, memory, uptime).
 *
 * Threads. The request counters belong to the loop thread: plain
 * increments, no locks, no atomics on the hot path. The fsync histogram is
 * fed from base/io.h's sync observer, which may run on any thread, so its
 * buckets are relaxed atomics (an fsync costs milliseconds; the add is
 * noise). The text is rendered on the loop thread (the METRICS internal
 * command), so the HTTP thread gets one consistent copy through the same
 * hand-off as every other request. */
#ifndef SL_SERVER_METRICS_H
#define SL_SERVER_METRICS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/bytes.h"

/* Upper bounds of the latency buckets in microseconds (+Inf follows). */
#define SL_METRICS_BUCKETS 18u
/* One slot per command of the table, then "internal" (the HTTP door's own
 * commands) and "other" (frames that named no command). */
#define SL_METRICS_COMMANDS_MAX 64u

typedef struct sl_histogram {
    uint64_t buckets[SL_METRICS_BUCKETS + 1]; /* non-cumulative; last = +Inf */
    uint64_t count;
    uint64_t sum_us;
} sl_histogram_t;

typedef struct sl_metrics {
    uint64_t requests[SL_METRICS_COMMANDS_MAX];
    uint64_t errors[SL_METRICS_COMMANDS_MAX];
    sl_histogram_t latency[SL_METRICS_COMMANDS_MAX];
    uint64_t bytes_in;     /* request frames, headers included */
    uint64_t bytes_out;    /* reply frames, headers included */
    uint64_t messages_in;  /* messages of admitted SendMessages batches */
    uint64_t messages_out; /* messages returned by polls */
    _Atomic uint64_t fsync_buckets[SL_METRICS_BUCKETS + 1];
    _Atomic uint64_t fsync_count;
    _Atomic uint64_t fsync_sum_ns;
    uint8_t by_operation[256]; /* operation byte -> slot (replicated commands) */
} sl_metrics_t;

struct sl_server;
struct sl_session;

/* Builds the lookup tables and registers the fsync observer (base/io.h). */
void sl_metrics_init(sl_metrics_t *m);
/* Unregisters the fsync observer. */
void sl_metrics_close(sl_metrics_t *m);

/* The slot of a request (its operation and, for operation 2, its code). */
uint16_t sl_metrics_slot(const sl_metrics_t *m, uint8_t operation, uint32_t code);
uint16_t sl_metrics_slot_other(void);
/* The command name of a slot ("SendMessages"; "Internal", "Other"): a static string. */
const char *sl_metrics_slot_name(uint16_t slot);
/* A request's answer went out (or was dropped): count it, its latency and
 * whether it was a refusal (status, result code or eviction). */
void sl_metrics_answered(sl_metrics_t *m, uint16_t slot, uint64_t latency_us, bool error);
/* One latency into a histogram. */
void sl_histogram_add(sl_histogram_t *h, uint64_t us);

/* Appends the Prometheus text of srv (without the final "# EOF" line,
 * which the HTTP door writes after its own counters). Loop thread. */
void sl_metrics_render(struct sl_server *srv, sl_buf_t *out);

#endif
