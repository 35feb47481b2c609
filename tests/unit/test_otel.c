/* server/otel_proto and server/otel: the OTLP encoding read back by the
 * tests' own decoder (tests/integration/otlp.c, written apart from the
 * encoder), and the export queues under threads that log at once. */
#include "testutil.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "otlp.h"
#include "server/config.h"
#include "server/otel.h"
#include "server/otel_export.h"
#include "server/otel_proto.h"

static const sl_otel_resource_t resource = {"unit-service", "9.9.9"};

static const th_otlp_attr_t *attr(const th_otlp_span_t *s, const char *key)
{
    const th_otlp_attr_t *a = th_otlp_attr(s->attrs, s->attrs_count, key);
    if (!a)
        fail_msg("%s has no attribute %s", s->name, key);
    return a;
}

static sl_otel_span_t full_span(void)
{
    return (sl_otel_span_t){
        .error = true,
        .outcome = SL_OTEL_REPLIED,
        .name = "SendMessages",
        .code = 101,
        .status = 4027,
        .connection = 7,
        .user_id = 3,
        .stream_id = 1,
        .topic_id = 2,
        .partition_id = 0,
        .messages = 10,
        .request_bytes = 1300,
        .reply_bytes = 256,
        .trace_id = {0x0102030405060708ull, 0x090a0b0c0d0e0f10ull},
        .span_id = 0x1112131415161718ull,
        .unix_ns = 1700000000000000000ull,
        .start_ns = 1000,
        .admitted_ns = 1100,
        .journal_begin_ns = 1200,
        .journal_end_ns = 1900,
        .fsync_ns = 500,
        .reply_ns = 2000,
        .end_ns = 2500,
    };
}

static void test_a_span_and_its_phases(void **state)
{
    (void)state;
    sl_otel_span_t s = full_span();
    sl_buf_t b;
    sl_buf_init(&b, 0);
    uint64_t ids = 42;
    sl_otlp_encode_spans(&b, &resource, &s, 1, &ids);
    assert_true(sl_buf_ok(&b));
    th_otlp_span_t out[8];
    assert_int_equal(th_otlp_decode_spans(b.data, b.len, out, 8), 5);
    const th_otlp_span_t *r = &out[0];
    assert_string_equal(r->service, "unit-service");
    assert_string_equal(r->name, "SendMessages");
    assert_false(r->has_parent);
    assert_int_equal(r->kind, 2);
    static const uint8_t trace[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    static const uint8_t id[8] = {0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18};
    assert_memory_equal(r->trace_id, trace, 16);
    assert_memory_equal(r->span_id, id, 8);
    assert_int_equal(r->start_ns, 1700000000000000000ull);
    assert_int_equal(r->end_ns, 1700000000000001500ull);
    assert_int_equal(r->status_code, 2);
    assert_string_equal(r->status_message, "status 4027");
    assert_int_equal(attr(r, "iggy.command.code")->i, 101);
    assert_int_equal(attr(r, "iggy.status")->i, 4027);
    assert_int_equal(attr(r, "iggy.user_id")->i, 3);
    assert_int_equal(attr(r, "iggy.stream_id")->i, 1);
    assert_int_equal(attr(r, "iggy.topic_id")->i, 2);
    assert_int_equal(attr(r, "iggy.partition_id")->i, 0);
    assert_int_equal(attr(r, "iggy.messages")->i, 10);
    assert_int_equal(attr(r, "iggy.request_bytes")->i, 1300);
    assert_int_equal(attr(r, "iggy.reply_bytes")->i, 256);
    assert_int_equal(attr(r, "iggy.connection_id")->i, 7);
    assert_string_equal(attr(r, "sluice.door")->s, "tcp");
    assert_string_equal(attr(r, "iggy.outcome")->s, "reply");
    /* Children in phase order, each inside the request, with its own id. */
    static const char *const names[] = {"admission", "journal", "fsync", "reply"};
    static const uint64_t from[] = {1000, 1200, 1400, 2000}, to[] = {1100, 1900, 1900, 2500};
    for (int i = 0; i < 4; i++) {
        const th_otlp_span_t *c = &out[1 + i];
        assert_string_equal(c->name, names[i]);
        assert_true(c->has_parent);
        assert_memory_equal(c->parent_id, id, 8);
        assert_memory_equal(c->trace_id, trace, 16);
        assert_memory_not_equal(c->span_id, id, 8);
        assert_int_equal(c->kind, 1);
        assert_int_equal(c->start_ns, 1700000000000000000ull + from[i] - 1000);
        assert_int_equal(c->end_ns, 1700000000000000000ull + to[i] - 1000);
        assert_int_equal(c->attrs_count, 0);
    }
    sl_buf_free(&b);
}

/* Absent values are absent attributes; phases not reached are no children. */
static void test_a_bare_span(void **state)
{
    (void)state;
    sl_otel_span_t s = {
        .name = "Ping",
        .code = 1,
        .outcome = SL_OTEL_CLOSED,
        .user_id = SL_OTEL_NONE,
        .stream_id = SL_OTEL_NONE,
        .topic_id = SL_OTEL_NONE,
        .partition_id = SL_OTEL_NONE,
        .internal = true,
        .span_id = 1,
        .unix_ns = 5,
        .start_ns = 10,
        .end_ns = 20,
    };
    sl_buf_t b;
    sl_buf_init(&b, 0);
    uint64_t ids = 1;
    sl_otlp_encode_spans(&b, &resource, &s, 1, &ids);
    th_otlp_span_t out[4];
    assert_int_equal(th_otlp_decode_spans(b.data, b.len, out, 4), 1);
    assert_int_equal(out[0].status_code, 0);
    assert_null(th_otlp_attr(out[0].attrs, out[0].attrs_count, "iggy.user_id"));
    assert_null(th_otlp_attr(out[0].attrs, out[0].attrs_count, "iggy.stream_id"));
    assert_null(th_otlp_attr(out[0].attrs, out[0].attrs_count, "iggy.messages"));
    assert_string_equal(attr(&out[0], "sluice.door")->s, "http");
    assert_string_equal(attr(&out[0], "iggy.outcome")->s, "closed");
    sl_buf_free(&b);
}

/* A batch large enough that lengths take several bytes at every level. */
static void test_a_large_batch(void **state)
{
    (void)state;
    enum { N = SL_OTEL_EXPORT_BATCH };
    static sl_otel_span_t s[N];
    for (int i = 0; i < N; i++) {
        s[i] = full_span();
        s[i].span_id = (uint64_t)i + 1;
    }
    sl_buf_t b;
    sl_buf_init(&b, 0);
    uint64_t ids = 7;
    sl_otlp_encode_spans(&b, &resource, s, N, &ids);
    assert_true(b.len > 200000);
    static th_otlp_span_t out[N * 5];
    assert_int_equal(th_otlp_decode_spans(b.data, b.len, out, N * 5), N * 5);
    assert_int_equal(out[5 * (N - 1)].span_id[7], N & 0xff);
    /* A cut body is refused, never half read. */
    assert_int_equal(th_otlp_decode_spans(b.data, b.len - 1, out, N * 5), -1);
    sl_buf_free(&b);
}

static void test_log_records(void **state)
{
    (void)state;
    static sl_otel_log_t l[6];
    static const int numbers[] = {17, 13, 9, 5, 1};
    static const char *const texts[] = {"ERROR", "WARN", "INFO", "DEBUG", "TRACE"};
    for (int i = 0; i < 5; i++)
        l[i] = (sl_otel_log_t){.unix_ns = 100u + (uint64_t)i,
                               .file = "/home/build/sluice/src/server/loop.c",
                               .line = 10 + i,
                               .level = (uint8_t)i,
                               .text_len = 5};
    memcpy(l[0].text, "hello", 5);
    /* A whole line's worth of text; a file outside src/ keeps its path; no line: no site. */
    l[5] = (sl_otel_log_t){
        .file = "elsewhere.c", .line = 0, .level = 2, .text_len = SL_OTEL_LOG_TEXT_MAX};
    memset(l[5].text, 'x', SL_OTEL_LOG_TEXT_MAX);
    sl_buf_t b;
    sl_buf_init(&b, 0);
    sl_otlp_encode_logs(&b, &resource, l, 6);
    static th_otlp_log_t out[6];
    assert_int_equal(th_otlp_decode_logs(b.data, b.len, out, 6), 6);
    for (int i = 0; i < 5; i++) {
        assert_int_equal(out[i].severity, numbers[i]);
        assert_string_equal(out[i].severity_text, texts[i]);
        assert_int_equal(out[i].time_ns, 100u + (uint64_t)i);
        assert_string_equal(out[i].service, "unit-service");
        const th_otlp_attr_t *f = th_otlp_attr(out[i].attrs, out[i].attrs_count, "code.file.path");
        assert_non_null(f);
        assert_string_equal(f->s, "src/server/loop.c");
        assert_int_equal(th_otlp_attr(out[i].attrs, out[i].attrs_count, "code.line.number")->i,
                         10 + i);
    }
    assert_string_equal(out[0].body, "hello");
    assert_int_equal(strlen(out[5].body), SL_OTEL_LOG_TEXT_MAX);
    assert_int_equal(out[5].attrs_count, 0);
    sl_buf_free(&b);
}

/* What the log shows of an endpoint: never the credentials in its URL. */
static void test_endpoint_credentials_are_not_shown(void **state)
{
    (void)state;
    static const struct {
        const char *url, *shown;
    } cases[] = {
        {"https://user:secret@collector:4318/v1/logs", "https://***@collector:4318/v1/logs"},
        {"http://token@collector", "http://***@collector"},
        {"http://collector:4318/v1/logs?to=a@b", "http://collector:4318/v1/logs?to=a@b"},
        {"http://collector/a@b", "http://collector/a@b"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        sl_otel_sender_t *s;
        char err[256];
        assert_int_equal(sl_otel_sender_create("logs", "http", cases[i].url, &s, err, sizeof(err)),
                         0);
        assert_string_equal(sl_otel_sender_url(s), cases[i].shown);
        sl_otel_sender_destroy(s);
    }
}

/* --- the queues under threads ---------------------------------------------------------------- */

enum { THREADS = 4, LINES = 3000 };

static void *log_lines(void *arg)
{
    int t = (int)(intptr_t)arg;
    for (int i = 0; i < LINES; i++)
        sl_log_write(SL_LOG_INFO, __FILE__, __LINE__, "stress %d %d", t, i);
    return NULL;
}

/* Four threads log at once through the sink while the exporter sends to a
 * receiver: every line is either received exactly once or counted as
 * dropped, never lost, duplicated or torn. */
static void test_many_threads_log_at_once(void **state)
{
    (void)state;
    th_otlp_t r;
    assert_true(th_otlp_start(&r));
    sl_config_t cfg;
    sl_config_defaults(&cfg);
    cfg.telemetry.enabled = true;
    snprintf(cfg.telemetry.logs.transport, sizeof(cfg.telemetry.logs.transport), "http");
    snprintf(cfg.telemetry.traces.transport, sizeof(cfg.telemetry.traces.transport), "http");
    snprintf(cfg.telemetry.logs.endpoint, sizeof(cfg.telemetry.logs.endpoint),
             "http://127.0.0.1:%u/v1/logs", r.port);
    snprintf(cfg.telemetry.traces.endpoint, sizeof(cfg.telemetry.traces.endpoint),
             "http://127.0.0.1:%u/v1/traces", r.port);
    sl_otel_t *otel;
    char err[256];
    assert_int_equal(sl_otel_open(&cfg, &otel, err, sizeof(err)), 0);
    /* 12000 lines to stderr: to /dev/null, then back. */
    fflush(stderr);
    int saved = dup(2), null = open("/dev/null", O_WRONLY);
    assert_true(saved >= 0 && null >= 0 && dup2(null, 2) == 2);
    close(null);
    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; t++)
        assert_int_equal(pthread_create(&th[t], NULL, log_lines, (void *)(intptr_t)t), 0);
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    /* Until every line is accounted for (a deadline, not a measure). */
    sl_otel_stats_t st;
    for (int i = 0; i < 600; i++) {
        sl_otel_stats(otel, &st);
        if (st.exported[SL_OTEL_LOGS] + st.dropped_full[SL_OTEL_LOGS] >= THREADS * LINES)
            break;
        struct timespec pause = {0, 100 * 1000000L};
        nanosleep(&pause, NULL);
    }
    sl_otel_close(otel);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    static th_otlp_log_t got[THREADS * LINES + 64];
    int n = th_otlp_logs(&r, "/v1/logs", got, THREADS * LINES + 64);
    assert_true(n >= 0);
    static uint8_t seen[THREADS][LINES];
    memset(seen, 0, sizeof(seen));
    uint64_t stress = 0;
    for (int i = 0; i < n; i++) {
        int t, k;
        if (sscanf(got[i].body, "stress %d %d", &t, &k) != 2)
            continue;
        assert_true(t >= 0 && t < THREADS && k >= 0 && k < LINES);
        assert_int_equal(seen[t][k]++, 0); /* never twice */
        assert_string_equal(got[i].severity_text, "INFO");
        stress++;
    }
    th_otlp_stop(&r);
    /* Every line was received once or counted as dropped; the few others
     * (the exporter's own start and drop lines) may be among the drops. */
    assert_int_equal(st.dropped_failed[SL_OTEL_LOGS], 0);
    assert_true(stress > 0);
    assert_true(stress + st.dropped_full[SL_OTEL_LOGS] >= THREADS * LINES);
    assert_true(stress + st.dropped_full[SL_OTEL_LOGS] <= THREADS * LINES + 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_span_and_its_phases),
        cmocka_unit_test(test_a_bare_span),
        cmocka_unit_test(test_a_large_batch),
        cmocka_unit_test(test_log_records),
        cmocka_unit_test(test_endpoint_credentials_are_not_shown),
        cmocka_unit_test(test_many_threads_log_at_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
