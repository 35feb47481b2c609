/* A small OTLP receiver for the telemetry tests: a server on a loopback port,
 * in a thread of the test, that keeps every export request it gets, over
 * OTLP/HTTP (HTTP/1.1 POSTs, answered 200 or a status the test sets) or
 * OTLP/gRPC (cleartext HTTP/2 by libnghttp2, the unary Export call answered
 * with grpc-status 0, or 14 when the test sets a status other than 200),
 * and a decoder of the two
 * OTLP messages sluiced sends (ExportTraceServiceRequest and
 * ExportLogsServiceRequest) into flat records to check. The decoder checks
 * every length and wire type it reads: a body it cannot read whole is an
 * error, not a partial result. */
#ifndef SL_TEST_OTLP_H
#define SL_TEST_OTLP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TH_OTLP_ATTRS_MAX 24

typedef struct th_otlp_attr {
    char key[64];
    bool is_int;
    int64_t i;
    char s[256];
} th_otlp_attr_t;

typedef struct th_otlp_span {
    char service[256]; /* the resource's service.name */
    char name[64];
    uint8_t trace_id[16];
    uint8_t span_id[8];
    uint8_t parent_id[8];
    bool has_parent;
    int kind;
    uint64_t start_ns, end_ns;
    int status_code;
    char status_message[128];
    th_otlp_attr_t attrs[TH_OTLP_ATTRS_MAX];
    int attrs_count;
} th_otlp_span_t;

typedef struct th_otlp_log {
    char service[256];
    uint64_t time_ns;
    int severity;
    char severity_text[16];
    char body[1100];
    th_otlp_attr_t attrs[4];
    int attrs_count;
} th_otlp_log_t;

/* One request the receiver took (for gRPC: the message without its
 * 5-byte prefix, which was checked). */
typedef struct th_otlp_post {
    char path[128];
    char content_type[64];
    char te[16]; /* gRPC: the TE header (trailers) */
    uint8_t *body;
    size_t len;
} th_otlp_post_t;

typedef struct th_otlp {
    bool grpc; /* th_otlp_start_grpc */
    uint16_t port;
    int listen_fd;
    pthread_t thread;
    _Atomic bool stop;
    _Atomic int status; /* answered to every POST (200 at start) */
    pthread_mutex_t lock;
    th_otlp_post_t *posts; /* under lock */
    size_t posts_count;
    size_t posts_cap;
} th_otlp_t;

/* Listens on 127.0.0.1 (an ephemeral port) and serves in a thread:
 * OTLP/HTTP, or OTLP/gRPC. */
bool th_otlp_start(th_otlp_t *r);
bool th_otlp_start_grpc(th_otlp_t *r);
/* The paths of gRPC's two Export methods. */
#define TH_OTLP_GRPC_TRACES "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
#define TH_OTLP_GRPC_LOGS   "/opentelemetry.proto.collector.logs.v1.LogsService/Export"
void th_otlp_stop(th_otlp_t *r);
/* POSTs received so far to path ("/v1/traces"). */
size_t th_otlp_posts(th_otlp_t *r, const char *path);

/* Decodes every body posted to path so far into out (up to max); returns
 * the count, or -1 when a body is not a well-formed message. */
int th_otlp_spans(th_otlp_t *r, const char *path, th_otlp_span_t *out, int max);
int th_otlp_logs(th_otlp_t *r, const char *path, th_otlp_log_t *out, int max);
/* Decodes one body (unit tests). */
int th_otlp_decode_spans(const uint8_t *p, size_t len, th_otlp_span_t *out, int max);
int th_otlp_decode_logs(const uint8_t *p, size_t len, th_otlp_log_t *out, int max);

/* The attribute key of a record, or NULL. */
const th_otlp_attr_t *th_otlp_attr(const th_otlp_attr_t *attrs, int count, const char *key);

#endif
