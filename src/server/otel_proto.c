/* OTLP protobuf encoding of spans and log lines (server/otel_proto.h). Field
 * numbers are those of opentelemetry-proto v1 (common, resource, trace,
 * logs and the two collector services); each message's fields are written
 * in field order, as protobuf encoders do. */
#include "server/otel_proto.h"

#include <stdio.h>
#include <string.h>

#include "base/assert.h"
#include "base/log.h"

/* Wire types. */
enum { WT_VARINT = 0, WT_FIXED64 = 1, WT_LEN = 2 };

/* --- primitives ------------------------------------------------------------------------- */

static size_t varint_to(uint8_t out[10], uint64_t v)
{
    size_t n = 0;
    /* At most 10 groups of 7 bits cover 64 bits. */
    while (v >= 0x80 && n < 9) {
        out[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    out[n++] = (uint8_t)v;
    return n;
}

static void put_varint(sl_buf_t *b, uint64_t v)
{
    uint8_t tmp[10];
    sl_put_bytes(b, tmp, varint_to(tmp, v));
}

static void put_tag(sl_buf_t *b, uint32_t field, uint32_t wire_type)
{
    put_varint(b, (uint64_t)field << 3 | wire_type);
}

static void put_uint(sl_buf_t *b, uint32_t field, uint64_t v)
{
    put_tag(b, field, WT_VARINT);
    put_varint(b, v);
}

static void put_fixed64(sl_buf_t *b, uint32_t field, uint64_t v)
{
    put_tag(b, field, WT_FIXED64);
    sl_put_u64(b, v); /* protobuf's fixed64 is little-endian, as sl_put_u64 */
}

static void put_bytes(sl_buf_t *b, uint32_t field, const void *p, size_t len)
{
    put_tag(b, field, WT_LEN);
    put_varint(b, len);
    sl_put_bytes(b, p, len);
}

static void put_string(sl_buf_t *b, uint32_t field, const char *s)
{
    put_bytes(b, field, s, strlen(s));
}

/* A nested message: open writes its tag and returns where its content
 * starts; close puts the content's length in front of it. The length is
 * only known at the end, so the content is moved by the length's size (a
 * few bytes, at most five levels deep per record). */
static size_t open_message(sl_buf_t *b, uint32_t field)
{
    put_tag(b, field, WT_LEN);
    return b->len;
}

static void close_message(sl_buf_t *b, size_t at)
{
    if (!sl_buf_ok(b))
        return;
    size_t len = b->len - at;
    uint8_t tmp[10];
    size_t n = varint_to(tmp, len);
    if (!sl_buf_extend(b, n))
        return;
    memmove(b->data + at + n, b->data + at, len);
    memcpy(b->data + at, tmp, n);
}

/* --- common.proto: KeyValue { key = 1; AnyValue value = 2 }, AnyValue { string_value =
 * 1; bool_value = 2; int_value = 3 } ---------------------------------------------------- */

static void attr_string(sl_buf_t *b, uint32_t field, const char *key, const char *value,
                        size_t value_len)
{
    size_t kv = open_message(b, field);
    put_string(b, 1, key);
    size_t any = open_message(b, 2);
    put_bytes(b, 1, value, value_len);
    close_message(b, any);
    close_message(b, kv);
}

static void attr_int(sl_buf_t *b, uint32_t field, const char *key, uint64_t value)
{
    size_t kv = open_message(b, field);
    put_string(b, 1, key);
    size_t any = open_message(b, 2);
    put_uint(b, 3, value); /* int64: a non-negative value encodes as its varint */
    close_message(b, any);
    close_message(b, kv);
}

/* Resource { attributes = 1 } at field 1 of ResourceSpans / ResourceLogs, then the
 * InstrumentationScope { name = 1; version = 2 } opening ScopeSpans / ScopeLogs. */
static void put_resource(sl_buf_t *b, const sl_otel_resource_t *r)
{
    size_t res = open_message(b, 1);
    attr_string(b, 1, "service.name", r->service_name, strlen(r->service_name));
    attr_string(b, 1, "service.version", r->service_version, strlen(r->service_version));
    close_message(b, res);
}

static void put_scope(sl_buf_t *b, const sl_otel_resource_t *r)
{
    size_t scope = open_message(b, 1);
    put_string(b, 1, "sluiced");
    put_string(b, 2, r->service_version);
    close_message(b, scope);
}

uint64_t sl_otel_random(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void sl_otlp_grpc_prefix(uint8_t prefix[5], size_t len)
{
    prefix[0] = 0; /* not compressed */
    prefix[1] = (uint8_t)(len >> 24);
    prefix[2] = (uint8_t)(len >> 16);
    prefix[3] = (uint8_t)(len >> 8);
    prefix[4] = (uint8_t)len;
}

/* --- trace.proto ------------------------------------------------------------------------- */

/* Span: trace_id 1, span_id 2, parent_span_id 4, name 5, kind 6, start 7, end 8,
 * attributes 9, status 15 { message 2, code 3 }. Kinds: INTERNAL 1, SERVER 2. */
enum { KIND_INTERNAL = 1, KIND_SERVER = 2, STATUS_ERROR = 2 };

static void put_ids(sl_buf_t *b, const sl_otel_span_t *s, uint64_t span_id, uint64_t parent)
{
    uint8_t trace[16], id[8];
    /* The ids' bytes in big-endian order, so the hex a backend shows is the
     * numbers' own. */
    for (int i = 0; i < 8; i++) {
        trace[i] = (uint8_t)(s->trace_id[0] >> (56 - 8 * i));
        trace[8 + i] = (uint8_t)(s->trace_id[1] >> (56 - 8 * i));
        id[i] = (uint8_t)(span_id >> (56 - 8 * i));
    }
    put_bytes(b, 1, trace, sizeof(trace));
    put_bytes(b, 2, id, sizeof(id));
    if (parent) {
        for (int i = 0; i < 8; i++)
            id[i] = (uint8_t)(parent >> (56 - 8 * i));
        put_bytes(b, 4, id, sizeof(id));
    }
}

/* Wall time of a monotonic mark of s. */
static uint64_t wall_ns(const sl_otel_span_t *s, uint64_t mark_ns)
{
    return s->unix_ns + (mark_ns >= s->start_ns ? mark_ns - s->start_ns : 0);
}

static void put_child(sl_buf_t *b, const sl_otel_span_t *s, const char *name, uint64_t from_ns,
                      uint64_t to_ns, uint64_t *id_state)
{
    if (from_ns == 0 || to_ns < from_ns)
        return;
    size_t span = open_message(b, 2);
    uint64_t id = sl_otel_random(id_state) | 1; /* never the invalid id 0 */
    put_ids(b, s, id, s->span_id);
    put_string(b, 5, name);
    put_uint(b, 6, KIND_INTERNAL);
    put_fixed64(b, 7, wall_ns(s, from_ns));
    put_fixed64(b, 8, wall_ns(s, to_ns));
    close_message(b, span);
}

static const char *const outcome_names[] = {"reply", "eviction", "dropped", "closed"};

static void put_span_attributes(sl_buf_t *b, const sl_otel_span_t *s)
{
    attr_string(b, 9, "messaging.system", "iggy", 4);
    attr_string(b, 9, "iggy.command", s->name, strlen(s->name));
    attr_int(b, 9, "iggy.command.code", s->code);
    if (s->stream_id != SL_OTEL_NONE)
        attr_int(b, 9, "iggy.stream_id", s->stream_id);
    if (s->topic_id != SL_OTEL_NONE)
        attr_int(b, 9, "iggy.topic_id", s->topic_id);
    if (s->partition_id != SL_OTEL_NONE)
        attr_int(b, 9, "iggy.partition_id", s->partition_id);
    if (s->user_id != SL_OTEL_NONE)
        attr_int(b, 9, "iggy.user_id", s->user_id);
    attr_int(b, 9, "iggy.status", s->status);
    const char *outcome = s->outcome < 4 ? outcome_names[s->outcome] : "reply";
    attr_string(b, 9, "iggy.outcome", outcome, strlen(outcome));
    if (s->messages)
        attr_int(b, 9, "iggy.messages", s->messages);
    attr_int(b, 9, "iggy.request_bytes", s->request_bytes);
    attr_int(b, 9, "iggy.reply_bytes", s->reply_bytes);
    attr_int(b, 9, "iggy.connection_id", s->connection);
    attr_string(b, 9, "sluice.door", s->internal ? "http" : "tcp", s->internal ? 4 : 3);
}

static void put_request_span(sl_buf_t *b, const sl_otel_span_t *s)
{
    size_t span = open_message(b, 2);
    put_ids(b, s, s->span_id, 0);
    put_string(b, 5, s->name);
    put_uint(b, 6, KIND_SERVER);
    put_fixed64(b, 7, s->unix_ns);
    put_fixed64(b, 8, wall_ns(s, s->end_ns));
    put_span_attributes(b, s);
    if (s->error) {
        size_t status = open_message(b, 15);
        char text[64];
        int n = snprintf(text, sizeof(text), "%s %u",
                         s->outcome == SL_OTEL_EVICTED ? "eviction" : "status", s->status);
        put_bytes(b, 2, text, n > 0 ? (size_t)n : 0);
        put_uint(b, 3, STATUS_ERROR);
        close_message(b, status);
    }
    close_message(b, span);
}

static void put_spans_of(sl_buf_t *b, const sl_otel_span_t *s, uint64_t *id_state)
{
    put_request_span(b, s);
    uint64_t admitted = s->admitted_ns ? s->admitted_ns : s->journal_begin_ns;
    if (admitted)
        put_child(b, s, "admission", s->start_ns, admitted, id_state);
    if (s->journal_begin_ns && s->journal_end_ns) {
        put_child(b, s, "journal", s->journal_begin_ns, s->journal_end_ns, id_state);
        if (s->fsync_ns)
            put_child(b, s, "fsync", s->journal_end_ns - s->fsync_ns, s->journal_end_ns, id_state);
    }
    if (s->reply_ns && s->end_ns)
        put_child(b, s, "reply", s->reply_ns, s->end_ns, id_state);
}

void sl_otlp_encode_spans(sl_buf_t *out, const sl_otel_resource_t *resource,
                          const sl_otel_span_t *spans, size_t n, uint64_t *id_state)
{
    /* ExportTraceServiceRequest { resource_spans = 1 } > ResourceSpans { resource = 1;
     * scope_spans = 2 } > ScopeSpans { scope = 1; spans = 2 } */
    size_t rs = open_message(out, 1);
    put_resource(out, resource);
    size_t ss = open_message(out, 2);
    put_scope(out, resource);
    for (size_t i = 0; i < n; i++)
        put_spans_of(out, &spans[i], id_state);
    close_message(out, ss);
    close_message(out, rs);
}

/* --- logs.proto -------------------------------------------------------------------------- */

/* LogRecord: time 1, severity_number 2, severity_text 3, body 5, attributes 6,
 * observed_time 11. Severity numbers: the first of each OpenTelemetry range. */
static const struct {
    uint8_t number;
    const char *text;
} severities[] = {{17, "ERROR"}, {13, "WARN"}, {9, "INFO"}, {5, "DEBUG"}, {1, "TRACE"}};

/* The call site's path from the source tree's src/ on ("src/server/loop.c"):
 * __FILE__ holds whatever path the build used, which names the build
 * machine's directories. */
static const char *source_path(const char *file)
{
    const char *p = strstr(file, "/src/");
    for (int i = 0; p && i < 8; i++) {
        const char *next = strstr(p + 1, "/src/");
        if (!next)
            break;
        p = next;
    }
    return p ? p + 1 : file;
}

static void put_log(sl_buf_t *b, const sl_otel_log_t *l)
{
    size_t rec = open_message(b, 2);
    unsigned level = l->level < SL_ARRAY_LEN(severities) ? l->level : SL_LOG_INFO;
    put_fixed64(b, 1, l->unix_ns);
    put_uint(b, 2, severities[level].number);
    put_string(b, 3, severities[level].text);
    size_t body = open_message(b, 5);
    put_bytes(b, 1, l->text, l->text_len);
    close_message(b, body);
    if (l->file && l->line > 0) {
        const char *path = source_path(l->file);
        attr_string(b, 6, "code.file.path", path, strlen(path));
        attr_int(b, 6, "code.line.number", (uint64_t)l->line);
    }
    put_fixed64(b, 11, l->unix_ns);
    close_message(b, rec);
}

void sl_otlp_encode_logs(sl_buf_t *out, const sl_otel_resource_t *resource,
                         const sl_otel_log_t *logs, size_t n)
{
    /* ExportLogsServiceRequest { resource_logs = 1 } > ResourceLogs { resource = 1;
     * scope_logs = 2 } > ScopeLogs { scope = 1; log_records = 2 } */
    size_t rl = open_message(out, 1);
    put_resource(out, resource);
    size_t sl = open_message(out, 2);
    put_scope(out, resource);
    for (size_t i = 0; i < n; i++)
        put_log(out, &logs[i]);
    close_message(out, sl);
    close_message(out, rl);
}
