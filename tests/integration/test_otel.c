/* OpenTelemetry export against the real sluiced ([telemetry], issue 15): a
 * small OTLP/HTTP receiver in this test (otlp.h) takes what the server sends
 * over loopback, and the spans and log records are decoded and checked
 * attribute by attribute; a collector that is not there, or that the
 * exporter cannot keep up with (the test fault "hold telemetry"), costs only
 * counters in /metrics while every request is still answered. */
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
// clang-format off
#include <cmocka.h>
// clang-format on

#include <sluice/client.h>

#include "harness.h"
#include "http_client.h"
#include "otlp.h"

/* How long a record may take to arrive: the exporter sends every second;
 * this is a deadline for a loaded machine, never a measured time. */
#define ARRIVAL_DEADLINE_S 60
#define SPANS_MAX          4096
#define LOGS_MAX           512

static th_otlp_span_t spans[SPANS_MAX];
static th_otlp_log_t logs[LOGS_MAX];

static void sleep_ms(long ms)
{
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* The [telemetry] a test appends: both signals over OTLP/HTTP to port. */
static void telemetry_config(char *out, size_t cap, uint16_t port, const char *ratio)
{
    snprintf(
        out, cap,
        "[telemetry]\nenabled = true\nservice_name = \"otel-test\"\n\n"
        "[telemetry.logs]\ntransport = \"http\"\nendpoint = \"http://127.0.0.1:%u/v1/logs\"\n\n"
        "[telemetry.traces]\ntransport = \"http\"\n"
        "endpoint = \"http://127.0.0.1:%u/v1/traces\"\nsample_ratio = \"%s\"\n",
        port, port, ratio);
}

static const th_otlp_attr_t *span_attr(const th_otlp_span_t *s, const char *key)
{
    return th_otlp_attr(s->attrs, s->attrs_count, key);
}

static int64_t span_int(const th_otlp_span_t *s, const char *key)
{
    const th_otlp_attr_t *a = span_attr(s, key);
    if (!a || !a->is_int)
        fail_msg("span %s has no integer %s", s->name, key);
    return a->i;
}

static const char *span_str(const th_otlp_span_t *s, const char *key)
{
    const th_otlp_attr_t *a = span_attr(s, key);
    if (!a || a->is_int)
        fail_msg("span %s has no string %s", s->name, key);
    return a->s;
}

/* The request span named name (the last one when several), or NULL. */
static const th_otlp_span_t *find_request(int n, const char *name)
{
    const th_otlp_span_t *found = NULL;
    for (int i = 0; i < n; i++)
        if (!spans[i].has_parent && strcmp(spans[i].name, name) == 0)
            found = &spans[i];
    return found;
}

/* Decodes what the receiver has at path until a request span called name is there. */
static int wait_for_span_at(th_otlp_t *r, const char *path, const char *name)
{
    for (int i = 0; i < ARRIVAL_DEADLINE_S * 10; i++) {
        int n = th_otlp_spans(r, path, spans, SPANS_MAX);
        assert_true(n >= 0); /* every body decodes whole */
        if (find_request(n, name))
            return n;
        sleep_ms(100);
    }
    fail_msg("no %s span arrived", name);
    return 0;
}

/* Decodes what the receiver has at path until count request spans called name are there. */
static void wait_for_requests_at(th_otlp_t *r, const char *path, const char *name, int count)
{
    for (int i = 0; i < ARRIVAL_DEADLINE_S * 10; i++) {
        int n = th_otlp_spans(r, path, spans, SPANS_MAX);
        assert_true(n >= 0);
        int found = 0;
        for (int k = 0; k < n; k++)
            found += !spans[k].has_parent && strcmp(spans[k].name, name) == 0;
        if (found >= count)
            return;
        sleep_ms(100);
    }
    fail_msg("fewer than %d %s spans arrived", count, name);
}

static int wait_for_span(th_otlp_t *r, const char *name)
{
    return wait_for_span_at(r, "/v1/traces", name);
}

/* The child span of parent called name, or NULL. */
static const th_otlp_span_t *find_child(int n, const th_otlp_span_t *parent, const char *name)
{
    for (int i = 0; i < n; i++)
        if (spans[i].has_parent && memcmp(spans[i].parent_id, parent->span_id, 8) == 0 &&
            strcmp(spans[i].name, name) == 0)
            return &spans[i];
    return NULL;
}

static const th_otlp_span_t *child(int n, const th_otlp_span_t *parent, const char *name)
{
    const th_otlp_span_t *c = find_child(n, parent, name);
    if (!c)
        fail_msg("%s has no %s child", parent->name, name);
    /* A child shares the trace and lies inside its parent. */
    assert_memory_equal(c->trace_id, parent->trace_id, 16);
    assert_int_equal(c->kind, 1); /* INTERNAL */
    assert_true(c->start_ns >= parent->start_ns && c->end_ns <= parent->end_ns);
    assert_true(c->start_ns <= c->end_ns);
    return c;
}

static void check_request_span(const th_otlp_span_t *s, const char *name)
{
    assert_string_equal(s->service, "otel-test");
    assert_int_equal(s->kind, 2); /* SERVER */
    assert_string_equal(span_str(s, "iggy.command"), name);
    assert_string_equal(span_str(s, "messaging.system"), "iggy");
    assert_string_equal(span_str(s, "sluice.door"), "tcp");
    assert_true(span_int(s, "iggy.request_bytes") >= 256);
    assert_true(span_int(s, "iggy.connection_id") > 0);
    assert_true(s->end_ns >= s->start_ns);
    static const uint8_t zero[16];
    assert_memory_not_equal(s->trace_id, zero, 16);
    assert_memory_not_equal(s->span_id, zero, 8);
}

/* --- every request traced, logs exported -------------------------------------------------- */

static void produce_and_consume(sl_client_t *c, uint32_t *stream_id)
{
    const sl_stream_t *st;
    assert_int_equal(sl_client_create_stream(c, "otel", &st), 0);
    *stream_id = st->id;
    sl_topic_options_t fsync = {.set = SL_TOPIC_OPT_ENFORCE_FSYNC, .enforce_fsync = true};
    assert_int_equal(sl_client_create_topic(c, sl_id_name("otel"), "t", 2, &fsync, NULL), 0);
    sl_send_message_t m[5];
    for (int i = 0; i < 5; i++)
        m[i] = (sl_send_message_t){.payload = (const uint8_t *)"hello", .payload_len = 5};
    assert_int_equal(sl_client_send_messages(c, sl_id_name("otel"), sl_id_name("t"),
                                             sl_partitioning_partition(1), m, 5, NULL),
                     0);
    sl_polled_messages_t got;
    assert_int_equal(sl_client_poll_messages(c, sl_consumer_single(sl_id_num(1)),
                                             sl_id_name("otel"), sl_id_name("t"), 1,
                                             sl_poll_offset(0), 10, false, &got),
                     0);
    assert_int_equal(got.count, 5);
    /* A refusal: the stream does not exist. */
    assert_true(sl_client_delete_stream(c, sl_id_name("no-such-stream")) != 0);
}

static void check_send_span(int n, uint32_t stream_id)
{
    const th_otlp_span_t *s = find_request(n, "SendMessages");
    check_request_span(s, "SendMessages");
    assert_int_equal(span_int(s, "iggy.stream_id"), stream_id);
    assert_int_equal(span_int(s, "iggy.topic_id"), 0);
    assert_int_equal(span_int(s, "iggy.partition_id"), 1);
    assert_int_equal(span_int(s, "iggy.user_id"), 0);
    assert_int_equal(span_int(s, "iggy.status"), 0);
    assert_int_equal(span_int(s, "iggy.messages"), 5);
    assert_true(span_int(s, "iggy.reply_bytes") > 256);
    assert_string_equal(span_str(s, "iggy.outcome"), "reply");
    assert_int_equal(s->status_code, 0);
    /* The phases of an enforce_fsync send: admitted, journaled by the
     * turn's group commit with its fdatasync, answered. */
    const th_otlp_span_t *admission = child(n, s, "admission");
    const th_otlp_span_t *journal = child(n, s, "journal");
    const th_otlp_span_t *fsync = child(n, s, "fsync");
    const th_otlp_span_t *reply = child(n, s, "reply");
    assert_true(admission->start_ns == s->start_ns && admission->end_ns <= journal->start_ns);
    assert_true(fsync->start_ns >= journal->start_ns && fsync->end_ns == journal->end_ns);
    assert_true(reply->start_ns >= journal->end_ns && reply->end_ns == s->end_ns);
}

static void check_other_spans(int n, uint32_t stream_id)
{
    /* A metadata commit: admission, then the journal.wal append and its fdatasync. */
    const th_otlp_span_t *create = find_request(n, "CreateStream");
    check_request_span(create, "CreateStream");
    child(n, create, "journal");
    child(n, create, "fsync");
    /* A poll: what it read. */
    const th_otlp_span_t *poll = find_request(n, "PollMessages");
    check_request_span(poll, "PollMessages");
    assert_int_equal(span_int(poll, "iggy.stream_id"), stream_id);
    assert_int_equal(span_int(poll, "iggy.partition_id"), 1);
    assert_int_equal(span_int(poll, "iggy.messages"), 5);
    assert_null(find_child(n, poll, "journal"));
    /* A refusal is an error span with the status it carried. */
    const th_otlp_span_t *del = find_request(n, "DeleteStream");
    check_request_span(del, "DeleteStream");
    assert_int_equal(del->status_code, 2); /* ERROR */
    int64_t status = span_int(del, "iggy.status");
    assert_true(status != 0);
    char want[64];
    snprintf(want, sizeof(want), "status %lld", (long long)status);
    assert_string_equal(del->status_message, want);
    /* A login carries the user it logged in, a ping none before it. */
    const th_otlp_span_t *login = find_request(n, "LoginRegister");
    check_request_span(login, "LoginRegister");
    assert_int_equal(span_int(login, "iggy.user_id"), 0);
}

static const th_otlp_log_t *find_log(int n, const char *body_prefix)
{
    for (int i = 0; i < n; i++)
        if (strncmp(logs[i].body, body_prefix, strlen(body_prefix)) == 0)
            return &logs[i];
    return NULL;
}

static void check_logs_at(th_otlp_t *r, const char *path, uint16_t port)
{
    int n = 0;
    for (int i = 0; i < ARRIVAL_DEADLINE_S * 10; i++) {
        n = th_otlp_logs(r, path, logs, LOGS_MAX);
        assert_true(n >= 0);
        if (find_log(n, "listening on") && find_log(n, "HTTP API on"))
            break;
        sleep_ms(100);
    }
    const th_otlp_log_t *l = find_log(n, "listening on");
    assert_non_null(l);
    char want[64];
    snprintf(want, sizeof(want), "listening on 127.0.0.1:%u", port);
    assert_string_equal(l->body, want); /* the message alone: no time, level or location */
    assert_string_equal(l->service, "otel-test");
    assert_int_equal(l->severity, 9);
    assert_string_equal(l->severity_text, "INFO");
    assert_true(l->time_ns > 1600000000ull * 1000000000ull);
    const th_otlp_attr_t *file = th_otlp_attr(l->attrs, l->attrs_count, "code.file.path");
    const th_otlp_attr_t *line = th_otlp_attr(l->attrs, l->attrs_count, "code.line.number");
    assert_non_null(file);
    assert_non_null(line);
    assert_string_equal(file->s, "src/server/server.c");
    assert_true(line->is_int && line->i > 0);
    /* The first line the sink saw says where everything goes. */
    assert_non_null(find_log(n, "telemetry: logs to http://127.0.0.1:"));
}

static void check_logs(th_otlp_t *r, uint16_t port)
{
    check_logs_at(r, "/v1/logs", port);
}

static void test_spans_and_logs_arrive(void **state)
{
    (void)state;
    th_otlp_t r;
    assert_true(th_otlp_start(&r));
    char extra[1024];
    telemetry_config(extra, sizeof(extra), r.port, "1");
    th_server_t srv;
    th_options_t o = {.extra_config = extra};
    if (!th_start(&srv, &o))
        skip();
    sl_client_t *c = th_client(srv.port, "iggy", "iggy");
    assert_non_null(c);
    uint32_t stream_id;
    produce_and_consume(c, &stream_id);
    int n = wait_for_span(&r, "DeleteStream");
    check_send_span(n, stream_id);
    check_other_spans(n, stream_id);
    check_logs(&r, srv.port);
    sl_client_close(c);
    assert_int_equal(th_stop(&srv, SIGTERM), 0);
    th_cleanup(&srv);
    th_otlp_stop(&r);
}

/* OTLP/gRPC: the same records as unary Export calls over cleartext HTTP/2
 * (the receiver checks the gRPC framing, content type and TE), to the
 * service's method whatever path the endpoint names. */
static void test_grpc_spans_and_logs_arrive(void **state)
{
    (void)state;
    th_otlp_t r;
    assert_true(th_otlp_start_grpc(&r));
    char extra[1024];
    snprintf(extra, sizeof(extra),
             "[telemetry]\nenabled = true\nservice_name = \"otel-test\"\n\n"
             "[telemetry.logs]\ntransport = \"grpc\"\n"
             "endpoint = \"http://127.0.0.1:%u/v1/logs\"\n\n"
             "[telemetry.traces]\ntransport = \"grpc\"\nendpoint = \"http://127.0.0.1:%u\"\n"
             "sample_ratio = \"1\"\n",
             r.port, r.port);
    th_server_t srv;
    th_options_t o = {.extra_config = extra};
    if (!th_start(&srv, &o))
        skip();
    sl_client_t *c = th_client(srv.port, "iggy", "iggy");
    assert_non_null(c);
    uint32_t stream_id;
    produce_and_consume(c, &stream_id);
    int n = wait_for_span_at(&r, TH_OTLP_GRPC_TRACES, "DeleteStream");
    check_send_span(n, stream_id);
    check_other_spans(n, stream_id);
    check_logs_at(&r, TH_OTLP_GRPC_LOGS, srv.port);
    assert_int_equal(th_otlp_posts(&r, "/v1/logs"), 0);
    /* Later exports, after the first ones: the sender goes on working
     * (libcurl 7.88 cannot reuse a prior-knowledge HTTP/2 connection). */
    size_t before = th_otlp_posts(&r, TH_OTLP_GRPC_TRACES);
    for (int round = 0; round < 3; round++) {
        assert_int_equal(sl_client_ping(c), 0);
        wait_for_requests_at(&r, TH_OTLP_GRPC_TRACES, "Ping", round + 1);
        size_t now = th_otlp_posts(&r, TH_OTLP_GRPC_TRACES);
        assert_true(now > before);
        before = now;
    }
    assert_null(strstr(th_log(&srv), "cannot export"));
    sl_client_close(c);
    assert_int_equal(th_stop(&srv, SIGTERM), 0);
    th_cleanup(&srv);
    th_otlp_stop(&r);
}

/* Ratio 0: no span, logs still exported. */
static void test_ratio_zero_traces_nothing(void **state)
{
    (void)state;
    th_otlp_t r;
    assert_true(th_otlp_start(&r));
    char extra[1024];
    telemetry_config(extra, sizeof(extra), r.port, "0");
    th_server_t srv;
    th_options_t o = {.extra_config = extra};
    if (!th_start(&srv, &o))
        skip();
    sl_client_t *c = th_client(srv.port, "iggy", "iggy");
    assert_non_null(c);
    for (int i = 0; i < 200; i++)
        assert_int_equal(sl_client_ping(c), 0);
    sl_client_close(c);
    /* A stop sends what is queued: after it, everything is in. */
    assert_int_equal(th_stop(&srv, SIGTERM), 0);
    assert_int_equal(th_otlp_posts(&r, "/v1/traces"), 0);
    int n = th_otlp_logs(&r, "/v1/logs", logs, LOGS_MAX);
    assert_non_null(find_log(n, "listening on"));
    th_cleanup(&srv);
    th_otlp_stop(&r);
}

/* The IGGY_TELEMETRY_* variables alone turn the export on (no [telemetry]
 * in the file), each signal with its own transport, and a ratio between 0
 * and 1 traces about that share of the requests: at 0.5, 400 pings give
 * 200 spans give or take 10 (one standard deviation); the bounds are 10 of
 * them away, so only a broken sampler falls outside. */
static void test_variables_and_a_sample_ratio(void **state)
{
    (void)state;
    th_otlp_t logs_r, traces_r;
    assert_true(th_otlp_start(&logs_r));
    assert_true(th_otlp_start_grpc(&traces_r));
    char logs_ep[96], traces_ep[96];
    snprintf(logs_ep, sizeof(logs_ep), "IGGY_TELEMETRY_LOGS_ENDPOINT=http://127.0.0.1:%u/v1/logs",
             logs_r.port);
    snprintf(traces_ep, sizeof(traces_ep), "IGGY_TELEMETRY_TRACES_ENDPOINT=http://127.0.0.1:%u",
             traces_r.port);
    const char *envs[] = {"IGGY_TELEMETRY_ENABLED=true",
                          "IGGY_TELEMETRY_SERVICE_NAME=otel-test",
                          "IGGY_TELEMETRY_LOGS_TRANSPORT=http",
                          logs_ep,
                          "IGGY_TELEMETRY_TRACES_TRANSPORT=grpc",
                          traces_ep,
                          "IGGY_TELEMETRY_TRACES_SAMPLE_RATIO=0.5",
                          NULL};
    th_server_t srv;
    th_options_t o = {.env = envs};
    if (!th_start(&srv, &o))
        skip();
    sl_client_t *c = th_client(srv.port, "iggy", "iggy");
    assert_non_null(c);
    enum { PINGS = 400 };
    for (int i = 0; i < PINGS; i++)
        assert_int_equal(sl_client_ping(c), 0);
    sl_client_close(c);
    /* A stop sends what is queued: after it, everything is in. */
    assert_int_equal(th_stop(&srv, SIGTERM), 0);
    int n = th_otlp_spans(&traces_r, TH_OTLP_GRPC_TRACES, spans, SPANS_MAX);
    assert_true(n >= 0);
    int pings = 0;
    for (int i = 0; i < n; i++)
        if (!spans[i].has_parent && strcmp(spans[i].name, "Ping") == 0) {
            check_request_span(&spans[i], "Ping");
            pings++;
        }
    if (pings < 100 || pings > 300)
        fail_msg("%d of %d pings traced at a ratio of 0.5", pings, PINGS);
    int m = th_otlp_logs(&logs_r, "/v1/logs", logs, LOGS_MAX);
    const th_otlp_log_t *l = find_log(m, "telemetry: logs to http://127.0.0.1:");
    assert_non_null(l);
    assert_string_equal(l->service, "otel-test");
    assert_non_null(strstr(l->body, "traces of a 0.5 share of requests"));
    assert_int_equal(th_otlp_posts(&logs_r, "/v1/traces"), 0);
    assert_int_equal(th_otlp_posts(&traces_r, TH_OTLP_GRPC_LOGS), 0);
    th_cleanup(&srv);
    th_otlp_stop(&logs_r);
    th_otlp_stop(&traces_r);
}

/* --- what a missing or slow collector costs ------------------------------------------------ */

/* The value of the sample whose name and labels are exactly series; -1 when absent. */
static double sample(const char *text, const char *series)
{
    size_t n = strlen(series);
    for (const char *p = text; p && *p;) {
        const char *end = strchr(p, '\n');
        if (strncmp(p, series, n) == 0 && p[n] == ' ')
            return strtod(p + n + 1, NULL);
        p = end ? end + 1 : NULL;
    }
    return -1;
}

static double scrape(th_http_t *h, const char *series)
{
    assert_int_equal(th_http_get(h, "/metrics"), 200);
    return sample(h->last.body, series);
}

/* Waits until series reaches at least want (deadline only). */
static double scrape_until(th_http_t *h, const char *series, double want)
{
    double v = -1;
    for (int i = 0; i < ARRIVAL_DEADLINE_S * 10 && (v = scrape(h, series)) < want; i++)
        sleep_ms(100);
    return v;
}

/* A port on loopback where nothing listens. */
static uint16_t closed_port(void)
{
    th_otlp_t r;
    assert_true(th_otlp_start(&r));
    uint16_t port = r.port;
    th_otlp_stop(&r);
    return port;
}

static int count_of(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

static void test_unreachable_collector_costs_a_counter(void **state)
{
    (void)state;
    char extra[1024];
    uint16_t port = closed_port();
    telemetry_config(extra, sizeof(extra), port, "1");
    th_server_t srv;
    th_options_t o = {.extra_config = extra};
    if (!th_start(&srv, &o))
        skip();
    sl_client_t *c = th_client(srv.port, "iggy", "iggy");
    assert_non_null(c);
    th_http_t h;
    th_http_init(&h, srv.http_port);
    assert_true(th_http_login(&h, "iggy", "iggy"));
    assert_int_equal(scrape(&h, "sluice_telemetry_dropped_total{signal=\"traces\",reason=\"export_"
                                "failed\"}") >= 0,
                     1);
    /* Requests are served as ever while every export fails. */
    for (int i = 0; i < 500; i++)
        assert_int_equal(sl_client_ping(c), 0);
    assert_true(scrape_until(&h,
                             "sluice_telemetry_dropped_total{signal=\"traces\",reason=\"export_"
                             "failed\"}",
                             500) >= 500);
    assert_true(scrape(&h, "sluice_telemetry_export_failures_total{signal=\"traces\"}") >= 1);
    assert_true(scrape_until(&h, "sluice_telemetry_export_failures_total{signal=\"logs\"}", 1) >=
                1);
    assert_int_equal(scrape(&h, "sluice_telemetry_exported_total{signal=\"traces\"}"), 0);
    for (int i = 0; i < 100; i++)
        assert_int_equal(sl_client_ping(c), 0);
    /* One line per run of failures, not one per export. */
    sleep_ms(2500);
    char want[128];
    snprintf(want, sizeof(want), "cannot export traces to http://127.0.0.1:%u/v1/traces", port);
    assert_int_equal(count_of(th_log(&srv), want), 1);
    assert_true(th_alive(&srv));
    th_http_free(&h);
    sl_client_close(c);
    assert_int_equal(th_stop(&srv, SIGTERM), 0);
    th_cleanup(&srv);
}

/* A gRPC collector that answers every call with grpc-status 14
 * (UNAVAILABLE): failed exports, counted and logged with the status, though
 * every HTTP exchange itself went well. */
static void test_grpc_errors_are_failures(void **state)
{
    (void)state;
    th_otlp_t r;
    assert_true(th_otlp_start_grpc(&r));
    atomic_store(&r.status, 503);
    char extra[1024];
    snprintf(extra, sizeof(extra),
             "[telemetry]\nenabled = true\n\n[telemetry.logs]\ntransport = \"grpc\"\n"
             "endpoint = \"http://127.0.0.1:%u\"\n\n[telemetry.traces]\ntransport = \"grpc\"\n"
             "endpoint = \"http://127.0.0.1:%u\"\nsample_ratio = \"1\"\n",
             r.port, r.port);
    th_server_t srv;
    th_options_t o = {.extra_config = extra};
    if (!th_start(&srv, &o))
        skip();
    sl_client_t *c = th_client(srv.port, "iggy", "iggy");
    assert_non_null(c);
    for (int i = 0; i < 100; i++)
        assert_int_equal(sl_client_ping(c), 0);
    th_http_t h;
    th_http_init(&h, srv.http_port);
    assert_true(th_http_login(&h, "iggy", "iggy"));
    assert_true(scrape_until(&h,
                             "sluice_telemetry_dropped_total{signal=\"traces\",reason=\"export_"
                             "failed\"}",
                             100) >= 100);
    assert_int_equal(scrape(&h, "sluice_telemetry_exported_total{signal=\"traces\"}"), 0);
    assert_true(th_otlp_posts(&r, TH_OTLP_GRPC_TRACES) >= 1);
    assert_non_null(strstr(th_log(&srv), "grpc-status 14: unavailable"));
    th_http_free(&h);
    sl_client_close(c);
    assert_int_equal(th_stop(&srv, SIGTERM), 0);
    th_cleanup(&srv);
    th_otlp_stop(&r);
}

/* The exporter is held (test fault): the span queue fills, the rest are
 * dropped and counted, and requests never wait for it. Released, the queue
 * drains to the collector. */
static void test_a_full_queue_drops_and_counts(void **state)
{
    (void)state;
    th_otlp_t r;
    assert_true(th_otlp_start(&r));
    char extra[1024], fault_file[] = "/tmp/sluice-otel-fault-XXXXXX", env[128];
    int fd = mkstemp(fault_file);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "hold telemetry\n", 15), 15);
    close(fd);
    snprintf(env, sizeof(env), "SLUICE_FAULT_FILE=%s", fault_file);
    const char *envs[] = {env, NULL};
    telemetry_config(extra, sizeof(extra), r.port, "1");
    th_server_t srv;
    th_options_t o = {.extra_config = extra, .env = envs};
    if (!th_start(&srv, &o))
        skip();
    sl_client_t *c = th_client(srv.port, "iggy", "iggy");
    assert_non_null(c);
    enum { PINGS = 8192 + 1000 }; /* SL_OTEL_SPAN_QUEUE and then some */
    for (int i = 0; i < PINGS; i++)
        assert_int_equal(sl_client_ping(c), 0);
    th_http_t h;
    th_http_init(&h, srv.http_port);
    assert_true(th_http_login(&h, "iggy", "iggy"));
    const char *full = "sluice_telemetry_dropped_total{signal=\"traces\",reason=\"queue_full\"}";
    assert_true(scrape(&h, full) >= 1000);
    assert_int_equal(th_otlp_posts(&r, "/v1/traces"), 0);
    /* Released: what the queue held reaches the collector. */
    fd = open(fault_file, O_WRONLY | O_TRUNC);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(sl_client_ping(c), 0); /* the fault file is read before a request */
    assert_true(scrape_until(&h, "sluice_telemetry_exported_total{signal=\"traces\"}", 8192) >=
                8192);
    assert_true(th_otlp_spans(&r, "/v1/traces", spans, SPANS_MAX) == SPANS_MAX);
    /* The drops were logged (the exporter reports them, at most every 10 s). */
    for (int i = 0; i < ARRIVAL_DEADLINE_S * 10 && !strstr(th_log(&srv), "found the queue full");
         i++)
        sleep_ms(100);
    assert_non_null(strstr(th_log(&srv), "found the queue full"));
    th_http_free(&h);
    sl_client_close(c);
    assert_int_equal(th_stop(&srv, SIGTERM), 0);
    th_cleanup(&srv);
    th_otlp_stop(&r);
    unlink(fault_file);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spans_and_logs_arrive),
        cmocka_unit_test(test_grpc_spans_and_logs_arrive),
        cmocka_unit_test(test_ratio_zero_traces_nothing),
        cmocka_unit_test(test_variables_and_a_sample_ratio),
        cmocka_unit_test(test_grpc_errors_are_failures),
        cmocka_unit_test(test_unreachable_collector_costs_a_counter),
        cmocka_unit_test(test_a_full_queue_drops_and_counts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
