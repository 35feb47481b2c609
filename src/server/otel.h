/* OpenTelemetry export ([telemetry], issue 15): every log line the server
 * writes and one span per sampled request leave the process as OTLP, sent by
 * one exporter thread to the collectors of telemetry.logs.endpoint and
 * telemetry.traces.endpoint (otel_export.c: OTLP/HTTP with protobuf bodies,
 * or gRPC).
 *
 * Nothing here blocks the thread that records. Between the recorders (the
 * loop thread for spans; any thread that logs, through base/log.h's sink)
 * and the exporter sit two bounded lock-free queues. A record that finds its
 * queue full is dropped and counted; the exporter logs the count (rate-
 * limited) and /metrics shows it (sl_otel_stats). A collector that is slow or
 * away holds only the exporter thread, for at most SL_OTEL_EXPORT_TIMEOUT_MS
 * per request; what it could not take is dropped and counted too.
 *
 * Spans. A request's span lives in its session (the connection is in
 * lockstep, so one at a time) from sl_otel_begin, where the sampling is
 * decided, to sl_otel_end, when its reply was written; the marks between
 * cost one branch on an unsampled request. Every function taking a span is
 * for the loop thread. */
#ifndef SL_SERVER_OTEL_H
#define SL_SERVER_OTEL_H

#include <stdbool.h>
#include <stdint.h>

#include "base/assert.h"
#include "server/config.h"
#include "server/otel_proto.h"

typedef struct sl_otel sl_otel_t;

/* Counters of the export, for /metrics. */
typedef struct sl_otel_stats {
    uint64_t exported[2];        /* [0] log records, [1] spans, taken by the collector */
    uint64_t dropped_full[2];    /* found their queue full */
    uint64_t dropped_failed[2];  /* in an export the collector did not take */
    uint64_t export_failures[2]; /* export requests that failed */
} sl_otel_stats_t;

enum { SL_OTEL_LOGS = 0, SL_OTEL_TRACES = 1 };

/* Starts the export when cfg->telemetry.enabled (*out stays NULL
 * otherwise): the queues, the exporter thread and the log sink. 0, or a
 * negative error with err filled. */
SL_WUR int sl_otel_open(const sl_config_t *cfg, sl_otel_t **out, char *err, size_t err_len);
/* Removes the log sink, exports what is queued (bounded by the export
 * timeout), stops the thread and frees. Call it once no other thread of the
 * server logs any more. NULL is allowed. */
void sl_otel_close(sl_otel_t *otel);
void sl_otel_stats(const sl_otel_t *otel, sl_otel_stats_t *out);
/* Test hook (server/test_faults.h): while held the exporter sends nothing
 * and the queues fill. NULL is allowed. */
void sl_otel_hold(sl_otel_t *otel, bool hold);

/* The fsync observer (base/io.h) reports each sync here; the journal marks
 * below read the time the calling thread spent in syncs. Any thread. */
void sl_otel_note_sync(uint64_t ns);

/* --- a request's span (loop thread) -------------------------------------------------- */

/* A request whose header decoded: decides whether it is traced (span->active)
 * and, if so, starts its span. metric_slot names the command (metrics.h);
 * code is the header's (0 for replicated operations, whose code the slot
 * gives). otel may be NULL (telemetry off). */
void sl_otel_begin(sl_otel_t *otel, sl_otel_span_t *span, uint16_t metric_slot, uint32_t code,
                   uint64_t request_bytes);

/* What the request is about, once resolved. */
static inline void sl_otel_target(sl_otel_span_t *span, uint32_t stream_id, uint32_t topic_id,
                                  uint32_t partition_id, uint32_t messages)
{
    if (!span->active)
        return;
    span->stream_id = stream_id;
    span->topic_id = topic_id;
    span->partition_id = partition_id;
    span->messages = messages;
}

/* Admission is over: the request was accepted (a send handed to its
 * partition or staged for the group commit). */
void sl_otel_admitted(sl_otel_span_t *span);

/* Around a journal write (a metadata commit, a partition append): begin and
 * end measure it and the fsync time inside it; sl_otel_journaled copies the
 * last measure into the span of a request that write was for. */
void sl_otel_journal_begin(sl_otel_t *otel);
void sl_otel_journal_end(sl_otel_t *otel);
void sl_otel_journaled(const sl_otel_t *otel, sl_otel_span_t *span);

/* The request's answer leaves: reply_bytes of it (0: dropped), its status
 * (reply status or result code, or the eviction reason), whether it was a
 * refusal, and how it ended. */
void sl_otel_replied(sl_otel_span_t *span, uint64_t reply_bytes, uint32_t status, bool error,
                     sl_otel_outcome_t outcome);
/* The status a refusal carried and how the request ended, once known
 * better than sl_otel_replied could tell. */
static inline void sl_otel_status(sl_otel_span_t *span, uint32_t status, sl_otel_outcome_t outcome)
{
    if (!span->active)
        return;
    span->status = status;
    span->outcome = (uint8_t)outcome;
}

/* The answer is written (or will never be: closed connection, dropped
 * request): the span ends and goes to the exporter. user_id is the
 * session's after the request (SL_OTEL_NONE when not logged in). */
void sl_otel_end(sl_otel_t *otel, sl_otel_span_t *span, uint32_t user_id, uint32_t connection,
                 bool internal);

#endif
