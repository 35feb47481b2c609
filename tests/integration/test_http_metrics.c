/* GET /metrics against the real sluiced (docs/metrics.md): a bearer is
 * needed, the text is Prometheus' (HELP/TYPE lines, _total counters, # EOF),
 * and the counters move as messages are sent and consumed over TCP. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
// clang-format off
#include <cmocka.h>
// clang-format on

#include <sluice/client.h>

#include "harness.h"
#include "http_client.h"

static th_server_t srv;
static th_http_t http;
static sl_client_t *tcp;

static int setup(void **state)
{
    (void)state;
    if (!th_start(&srv, NULL))
        return -1;
    th_http_init(&http, srv.http_port);
    tcp = th_client(srv.port, "iggy", "iggy");
    return tcp && th_http_login(&http, "iggy", "iggy") ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    sl_client_close(tcp);
    th_http_free(&http);
    assert_int_equal(th_stop(&srv, SIGTERM), 0);
    th_cleanup(&srv);
    return 0;
}

/* The value of the sample whose name and labels are exactly `series`
 * ("messages", "sluice_requests_total{command=\"Ping\"}"); -1 when absent. */
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

static char *scrape(void)
{
    assert_int_equal(th_http_get(&http, "/metrics"), 200);
    char *text = strdup(http.last.body);
    assert_non_null(text);
    return text;
}

static void test_needs_a_bearer(void **state)
{
    (void)state;
    char token[2048];
    snprintf(token, sizeof(token), "%s", http.token);
    http.token[0] = '\0';
    assert_int_equal(th_http_get(&http, "/metrics"), 401);
    snprintf(http.token, sizeof(http.token), "%s", token);
}

static void test_format(void **state)
{
    (void)state;
    char *t = scrape();
    char ct[64];
    assert_true(th_http_header(&http, "Content-Type", ct, sizeof(ct)));
    assert_string_equal(ct, "text/plain; charset=utf-8");
    /* The reference's names and form. */
    assert_non_null(strstr(t, "# HELP streams total count of streams.\n# TYPE streams gauge\n"));
    assert_non_null(strstr(t, "# TYPE http_requests counter\nhttp_requests_total "));
    assert_true(sample(t, "http_requests_total") >= 1);
    assert_true(sample(t, "users") >= 1);
    assert_true(sample(t, "process_resident_memory_bytes") > 0);
    size_t n = strlen(t);
    assert_true(n > 6);
    assert_string_equal(t + n - 6, "# EOF\n");
    free(t);
}

static double partition_messages(const char *t, uint32_t stream)
{
    char series[128];
    snprintf(series, sizeof(series),
             "sluice_partition_messages{stream=\"%u\",topic=\"0\",partition=\"0\"}", stream);
    return sample(t, series);
}

/* Sent and consumed messages over TCP move the counters the scrape shows. */
static void test_counters_move(void **state)
{
    (void)state;
    const sl_stream_t *st;
    assert_int_equal(sl_client_create_stream(tcp, "metered", &st), 0);
    uint32_t stream = st->id;
    assert_int_equal(sl_client_create_topic(tcp, sl_id_num(stream), "t", 1, NULL, NULL), 0);
    assert_int_equal(
        sl_client_create_consumer_group(tcp, sl_id_num(stream), sl_id_num(0), "g", NULL), 0);

    char *before = scrape();
    double in0 = sample(before, "sluice_messages_received_total");
    double out0 = sample(before, "sluice_messages_sent_total");
    double sends0 = sample(before, "sluice_requests_total{command=\"SendMessages\"}");
    double bytes0 = sample(before, "sluice_received_bytes_total");
    assert_true(in0 >= 0 && out0 >= 0 && bytes0 > 0);
    assert_true(partition_messages(before, stream) == 0);
    assert_true(
        sample(before, "sluice_consumer_group_members{stream=\"0\",topic=\"0\",group=\"0\"}") ==
            0 ||
        stream != 0);

    enum { BATCHES = 3, PER_BATCH = 5 };
    sl_send_message_t m[PER_BATCH];
    for (int i = 0; i < PER_BATCH; i++)
        m[i] = (sl_send_message_t){.payload = "payload", .payload_len = 7};
    for (int b = 0; b < BATCHES; b++)
        assert_int_equal(sl_client_send_messages(tcp, sl_id_num(stream), sl_id_num(0),
                                                 sl_partitioning_partition(0), m, PER_BATCH, NULL),
                         0);
    char *sent = scrape();
    assert_true(sample(sent, "sluice_messages_received_total") == in0 + BATCHES * PER_BATCH);
    if (sends0 < 0)
        sends0 = 0;
    assert_true(sample(sent, "sluice_requests_total{command=\"SendMessages\"}") ==
                sends0 + BATCHES);
    assert_true(sample(sent, "sluice_received_bytes_total") > bytes0);
    assert_true(partition_messages(sent, stream) == BATCHES * PER_BATCH);
    char lag[160];
    snprintf(lag, sizeof(lag),
             "sluice_consumer_group_lag{stream=\"%u\",topic=\"0\",group=\"0\",partition=\"0\"}",
             stream);
    assert_true(sample(sent, lag) == BATCHES * PER_BATCH);
    char hist[160];
    snprintf(hist, sizeof(hist), "sluice_request_duration_seconds_count{command=\"SendMessages\"}");
    assert_true(sample(sent, hist) >= BATCHES);

    /* Consume 10 of them as the group, committing: the lag falls by 10. */
    assert_int_equal(
        sl_client_join_consumer_group(tcp, sl_id_num(stream), sl_id_num(0), sl_id_num(0)), 0);
    sl_polled_messages_t polled;
    assert_int_equal(sl_client_poll_messages(
                         tcp, sl_consumer_in_group(sl_id_num(0)), sl_id_num(stream), sl_id_num(0),
                         0, (sl_poll_strategy_t){SL_POLL_NEXT, 0}, 10, true, &polled),
                     0);
    assert_int_equal(polled.count, 10);
    char *consumed = scrape();
    assert_true(sample(consumed, "sluice_messages_sent_total") == out0 + 10);
    assert_true(sample(consumed, lag) == BATCHES * PER_BATCH - 10);
    snprintf(lag, sizeof(lag),
             "sluice_consumer_group_members{stream=\"%u\",topic=\"0\",group=\"0\"}", stream);
    assert_true(sample(consumed, lag) == 1);
    /* The scrape itself counts as an HTTP request. */
    assert_true(sample(consumed, "http_requests_total") > sample(sent, "http_requests_total"));
    free(before);
    free(sent);
    free(consumed);
}

/* Refusals count as errors of their command. */
static void test_errors_counted(void **state)
{
    (void)state;
    char *before = scrape();
    double e0 = sample(before, "sluice_request_errors_total{command=\"GetStream\"}");
    if (e0 < 0)
        e0 = 0;
    assert_int_equal(th_http_get(&http, "/streams/9999"), 404);
    assert_int_equal(th_http_get(&http, "/streams/9998"), 404);
    char *after = scrape();
    /* A GetStream that finds nothing is an empty success on the wire; the
     * 404s above come from the HTTP side. A refused delete is an error. */
    assert_int_equal(th_http_delete(&http, "/streams/9999"), 404);
    char *refused = scrape();
    double d = sample(refused, "sluice_request_errors_total{command=\"DeleteStream\"}");
    assert_true(d >= 1);
    assert_true(sample(after, "sluice_requests_total{command=\"GetStream\"}") >= 2);
    (void)e0;
    free(before);
    free(after);
    free(refused);
}

/* Metrics can be turned off: the path then does not exist. */
static void test_disabled(void **state)
{
    (void)state;
    th_server_t off;
    th_options_t o = {.extra_config = "[http]\naddress = \"127.0.0.1:0\"\n\n[http.metrics]\n"
                                      "enabled = false\n"};
    assert_true(th_start(&off, &o));
    th_http_t h;
    th_http_init(&h, off.http_port);
    assert_true(th_http_login(&h, "iggy", "iggy"));
    assert_int_equal(th_http_get(&h, "/metrics"), 404);
    th_http_free(&h);
    assert_int_equal(th_stop(&off, SIGTERM), 0);
    th_cleanup(&off);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_needs_a_bearer), cmocka_unit_test(test_format),
        cmocka_unit_test(test_counters_move),  cmocka_unit_test(test_errors_counted),
        cmocka_unit_test(test_disabled),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
