/* OTLP by hand: the records the telemetry exporter gathers (one request span,
 * one log line) and their encoding as the two OpenTelemetry protobuf messages
 * it sends, ExportTraceServiceRequest and ExportLogsServiceRequest
 * (opentelemetry-proto, collector/{trace,logs}/v1). Those messages use a few
 * field kinds (varints, fixed64, length-delimited bytes and nested
 * messages), so the encoder is a page of code rather than a protobuf
 * runtime (docs/architecture.md, "Telemetry", says why). Pure: no I/O, no
 * globals, no threads. */
#ifndef SL_SERVER_OTEL_PROTO_H
#define SL_SERVER_OTEL_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/bytes.h"
#include "base/limits.h"

/* An attribute that does not apply (no stream, no user). */
#define SL_OTEL_NONE UINT32_MAX

/* How a request ended. */
typedef enum sl_otel_outcome {
    SL_OTEL_REPLIED = 0, /* a reply (possibly a refusal) was written */
    SL_OTEL_EVICTED,     /* an eviction frame was sent */
    SL_OTEL_DROPPED,     /* no answer, as the protocol wants */
    SL_OTEL_CLOSED,      /* the connection closed before the reply was written */
} sl_otel_outcome_t;

/* One request: the record the loop fills while it serves the request and
 * hands to the exporter when the reply is written. Times are monotonic
 * nanoseconds; a phase mark of 0 was not reached. The exporter makes the
 * request span (kind SERVER) and a child span for each phase reached:
 * admission [start, admitted or journal_begin], journal [journal_begin,
 * journal_end], fsync (the last fsync_ns of the journal) and reply [reply,
 * end]. */
typedef struct sl_otel_span {
    bool active; /* sampled, not yet handed to the exporter */
    bool error;  /* refused: a status, a result code or an eviction */
    bool internal;
    uint8_t outcome;  /* sl_otel_outcome_t */
    const char *name; /* the command's name (a static string) */
    uint32_t code;    /* the command code */
    uint32_t status;  /* reply status or result code; the eviction reason */
    uint32_t connection;
    uint32_t user_id;                           /* SL_OTEL_NONE when not logged in */
    uint32_t stream_id, topic_id, partition_id; /* SL_OTEL_NONE when none */
    uint32_t messages;                          /* of a send or a poll */
    uint64_t request_bytes, reply_bytes;
    uint64_t trace_id[2];
    uint64_t span_id;
    uint64_t unix_ns; /* wall time of start_ns */
    uint64_t start_ns, admitted_ns, journal_begin_ns, journal_end_ns, fsync_ns, reply_ns, end_ns;
} sl_otel_span_t;

/* One log line (base/log.h's record, copied). */
typedef struct sl_otel_log {
    uint64_t unix_ns;
    const char *file; /* static: __FILE__ of the call site */
    int32_t line;
    uint8_t level; /* sl_log_level_t */
    uint16_t text_len;
    char text[SL_OTEL_LOG_TEXT_MAX];
} sl_otel_log_t;

/* What every export says about the process (the OTLP resource). */
typedef struct sl_otel_resource {
    const char *service_name;
    const char *service_version;
} sl_otel_resource_t;

/* A fast generator for span ids (splitmix64): not for secrets, only for ids
 * that must not collide. state is the caller's, seeded from getrandom. */
uint64_t sl_otel_random(uint64_t *state);

/* Appends an ExportTraceServiceRequest holding spans[0..n) and their phase
 * children (child span ids drawn from id_state) to out. */
void sl_otlp_encode_spans(sl_buf_t *out, const sl_otel_resource_t *resource,
                          const sl_otel_span_t *spans, size_t n, uint64_t *id_state);
/* Appends an ExportLogsServiceRequest holding logs[0..n) to out. */
void sl_otlp_encode_logs(sl_buf_t *out, const sl_otel_resource_t *resource,
                         const sl_otel_log_t *logs, size_t n);
/* gRPC's length prefix (compression flag 0, big-endian u32 length) for a
 * message of len bytes, into prefix[5]. */
void sl_otlp_grpc_prefix(uint8_t prefix[5], size_t len);

#endif
