/* Every route of the HTTP API (shared/protocol/http.md 4) against the real
 * sluiced: each one's success shape and its documented refusals, the JSON
 * field names, status codes and error bodies of the reference. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
// clang-format off
#include <cmocka.h>
// clang-format on

#include <sluice/client.h>

#include "harness.h"
#include "http_client.h"

static th_server_t srv;
static th_http_t http;

static int setup(void **state)
{
    (void)state;
    if (!th_start(&srv, NULL))
        return -1;
    th_http_init(&http, srv.http_port);
    return th_http_login(&http, "iggy", "iggy") ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    th_http_free(&http);
    assert_int_equal(th_stop(&srv, SIGTERM), 0);
    th_cleanup(&srv);
    return 0;
}

static json_object *J(const char *path)
{
    return th_json_at(http.last.json, path);
}

static int64_t I(const char *path)
{
    return th_json_int(http.last.json, path);
}

static const char *S(const char *path)
{
    const char *s = th_json_str(http.last.json, path);
    return s ? s : "(missing)";
}

/* A JSON error body with this status, id and code. */
static void refused(long status, long want, int64_t id, const char *code)
{
    if (status != want)
        fail_msg("status %ld, expected %ld; body: %s", status, want, http.last.body);
    assert_int_equal(I("id"), id);
    assert_string_equal(S("code"), code);
}

static void ok(long status, long want)
{
    if (status != want)
        fail_msg("status %ld, expected %ld; body: %s", status, want, http.last.body);
}

static size_t len_of(const char *path)
{
    json_object *o = path[0] ? J(path) : http.last.json;
    assert_true(o && json_object_is_type(o, json_type_array));
    return json_object_array_length(o);
}

/* --- system --------------------------------------------------------------------------------- */

static void test_stats(void **state)
{
    (void)state;
    ok(th_http_get(&http, "/stats"), 200);
    assert_true(I("process_id") > 0);
    /* Byte sizes are human strings, counts numbers (http.md 5.1). */
    assert_non_null(strstr(S("memory_usage"), "B"));
    assert_true(json_object_is_type(J("cpu_usage"), json_type_double));
    assert_true(json_object_is_type(J("streams_count"), json_type_int));
    assert_non_null(J("cache_metrics"));
    assert_non_null(th_json_str(http.last.json, "os_name"));
    assert_non_null(J("iggy_server_version"));
}

static void test_cluster_metadata(void **state)
{
    (void)state;
    ok(th_http_get(&http, "/cluster/metadata"), 200);
    assert_string_equal(S("name"), "single-node");
    assert_string_equal(S("nodes.0.name"), "iggy-node");
    assert_string_equal(S("nodes.0.role"), "leader");
    assert_string_equal(S("nodes.0.status"), "healthy");
    assert_int_equal(I("nodes.0.endpoints.http"), srv.http_port);
    assert_int_equal(I("nodes.0.endpoints.tcp"), srv.port);
    assert_int_equal(I("nodes.0.endpoints.quic"), 0);
}

static void test_clients(void **state)
{
    (void)state;
    sl_client_t *c = th_client(srv.port, "iggy", "iggy");
    assert_non_null(c);
    ok(th_http_get(&http, "/clients"), 200);
    /* The TCP client, and none of the HTTP door's internal sessions. */
    assert_int_equal(len_of(""), 1);
    assert_string_equal(S("0.transport"), "TCP");
    assert_int_equal(I("0.user_id"), 0);
    int64_t id = I("0.client_id");
    char path[64];
    snprintf(path, sizeof(path), "/clients/%lld", (long long)id);
    ok(th_http_get(&http, path), 200);
    assert_int_equal(I("client_id"), id);
    assert_int_equal(len_of("consumer_groups"), 0);
    refused(th_http_get(&http, "/clients/4000000000"), 404, 404, "not_found");
    ok(th_http_get(&http, "/clients/abc"), 400);
    sl_client_close(c);
}

static void test_options(void **state)
{
    (void)state;
    ok(th_http_get(&http, "/options/topic"), 200);
    assert_int_equal(len_of(""), 8);
    assert_string_equal(S("0.key"), "compression_algorithm");
    assert_true(json_object_is_type(J("0.default_value"), json_type_array));
    ok(th_http_get(&http, "/options/stream"), 200);
    assert_int_equal(len_of(""), 0);
    refused(th_http_get(&http, "/options/nope"), 400, 3, "invalid_command");
}

static void test_snapshot(void **state)
{
    (void)state;
    ok(th_http_post(&http, "/snapshot",
                    "{\"compression\":\"Stored\",\"snapshot_types\":[\"Test\"]}"),
       200);
    assert_true(http.last.body_len > 4);
    assert_memory_equal(http.last.body, "PK", 2);
    char v[128];
    assert_true(th_http_header(&http, "Content-Type", v, sizeof(v)));
    assert_string_equal(v, "application/zip");
    assert_true(th_http_header(&http, "Content-Disposition", v, sizeof(v)));
    assert_non_null(strstr(v, "iggy_snapshot_"));
    ok(th_http_post(&http, "/snapshot", "{\"compression\":\"stored\",\"snapshot_types\":[]}"), 422);
}

/* --- users and tokens --------------------------------------------------------------------------
 */

static const char *perms_json =
    "{\"global\":{\"manage_servers\":false,\"read_servers\":true,\"manage_users\":false,"
    "\"read_users\":false,\"manage_streams\":false,\"read_streams\":true,\"manage_topics\":false,"
    "\"read_topics\":true,\"poll_messages\":false,\"send_messages\":false},"
    "\"streams\":{\"7\":{\"manage_stream\":false,\"read_stream\":true,\"manage_topics\":false,"
    "\"read_topics\":true,\"poll_messages\":true,\"send_messages\":false,"
    "\"topics\":{\"2\":{\"manage_topic\":false,\"read_topic\":true,\"poll_messages\":true,"
    "\"send_messages\":true}}}}}";

static void test_users(void **state)
{
    (void)state;
    char body[2048];
    snprintf(body, sizeof(body),
             "{\"username\":\"alice\",\"password\":\"secret1\",\"status\":\"active\","
             "\"permissions\":%s}",
             perms_json);
    ok(th_http_post(&http, "/users", body), 200);
    int64_t id = I("id");
    assert_string_equal(S("username"), "alice");
    assert_string_equal(S("status"), "active");
    assert_true(json_object_get_boolean(J("permissions.global.read_servers")));
    assert_true(json_object_get_boolean(J("permissions.streams.7.topics.2.send_messages")));
    refused(th_http_post(&http, "/users", body), 400, 46, "user_already_exists");
    assert_string_equal(S("field"), "username");
    refused(th_http_post(&http, "/users",
                         "{\"username\":\"al\",\"password\":\"secret1\",\"status\":\"active\"}"),
            400, 43, "invalid_username");
    ok(th_http_post(&http, "/users",
                    "{\"username\":\"bob\",\"password\":\"secret1\",\"status\":\"sleeping\"}"),
       422);

    ok(th_http_get(&http, "/users"), 200);
    assert_int_equal(len_of(""), 2);
    assert_int_equal(I("0.id"), 0);
    assert_null(J("0.permissions")); /* UserInfo has none */
    ok(th_http_get(&http, "/users/alice"), 200);
    assert_int_equal(I("id"), id);
    refused(th_http_get(&http, "/users/nobody"), 404, 404, "not_found");

    char path[64];
    snprintf(path, sizeof(path), "/users/%lld", (long long)id);
    ok(th_http_put(&http, path, "{\"username\":\"alice2\"}"), 204);
    ok(th_http_get(&http, "/users/alice2"), 200);
    snprintf(path, sizeof(path), "/users/%lld/password", (long long)id);
    refused(
        th_http_put(&http, path, "{\"current_password\":\"wrong1\",\"new_password\":\"secret2\"}"),
        400, 42, "invalid_credentials");
    ok(th_http_put(&http, path, "{\"current_password\":\"secret1\",\"new_password\":\"secret2\"}"),
       204);
    snprintf(path, sizeof(path), "/users/%lld/permissions", (long long)id);
    ok(th_http_put(&http, path, "{\"permissions\":null}"), 204);
    ok(th_http_get(&http, "/users/alice2"), 200);
    assert_null(J("permissions"));

    /* The new user logs in with the new password; GET /users/me is itself. */
    th_http_t as = http;
    as.last = (th_http_reply_t){0};
    assert_true(th_http_login(&as, "alice2", "secret2"));
    assert_int_equal(th_http_get(&as, "/users/me"), 200);
    assert_string_equal(th_json_str(as.last.json, "username"), "alice2");
    /* Without manage_streams: 403 err 41. */
    assert_int_equal(th_http_post(&as, "/streams", "{\"name\":\"nope\"}"), 403);
    assert_int_equal(th_json_int(as.last.json, "id"), 41);
    assert_string_equal(th_json_str(as.last.json, "code"), "unauthorized");
    th_http_free(&as);

    /* Grants without streams, and a stream grant without topics: null maps
     * (found by fuzz_rest: they once crashed the HTTP thread). */
    ok(th_http_put(&http, path,
                   "{\"permissions\":{\"global\":{\"manage_servers\":false,\"read_servers\":true,"
                   "\"manage_users\":false,\"read_users\":false,\"manage_streams\":false,"
                   "\"read_streams\":true,\"manage_topics\":false,\"read_topics\":true,"
                   "\"poll_messages\":false,\"send_messages\":false},\"streams\":{\"1\":{"
                   "\"manage_stream\":false,\"read_stream\":true,\"manage_topics\":false,"
                   "\"read_topics\":true,\"poll_messages\":true,\"send_messages\":false,"
                   "\"topics\":null}}}}"),
       204);
    ok(th_http_get(&http, "/users/alice2"), 200);
    assert_true(json_object_get_boolean(J("permissions.streams.1.read_stream")));
    assert_null(J("permissions.streams.1.topics"));
    ok(th_http_put(&http, path,
                   "{\"permissions\":{\"global\":{\"manage_servers\":false,\"read_servers\":true,"
                   "\"manage_users\":false,\"read_users\":false,\"manage_streams\":false,"
                   "\"read_streams\":true,\"manage_topics\":false,\"read_topics\":true,"
                   "\"poll_messages\":false,\"send_messages\":false},\"streams\":null}}"),
       204);
    refused(th_http_delete(&http, "/users/0"), 400, 48, "cannot_delete_user");
    refused(th_http_put(&http, "/users/0/permissions", "{\"permissions\":null}"), 400, 49,
            "cannot_change_permissions");
    snprintf(path, sizeof(path), "/users/%lld", (long long)id);
    ok(th_http_delete(&http, path), 204);
    refused(th_http_delete(&http, path), 404, 20, "resource_not_found");
}

static void test_personal_access_tokens(void **state)
{
    (void)state;
    refused(th_http_post(&http, "/personal-access-tokens", "{\"name\":\"ab\",\"expiry\":0}"), 400,
            50, "invalid_personal_access_token_name");
    ok(th_http_post(&http, "/personal-access-tokens", "{\"name\":\"zeta\",\"expiry\":0}"), 200);
    ok(th_http_post(&http, "/personal-access-tokens", "{\"name\":\"alpha\",\"expiry\":3600000000}"),
       200);
    refused(th_http_post(&http, "/personal-access-tokens", "{\"name\":\"alpha\",\"expiry\":0}"),
            400, 51, "personal_access_token_already_exists");
    ok(th_http_get(&http, "/personal-access-tokens"), 200);
    assert_int_equal(len_of(""), 2);
    /* Sorted by name; a token that never expires has expiry_at null. */
    assert_string_equal(S("0.name"), "alpha");
    assert_true(I("0.expiry_at") > 0);
    assert_string_equal(S("1.name"), "zeta");
    assert_null(J("1.expiry_at"));
    ok(th_http_delete(&http, "/personal-access-tokens/zeta"), 204);
    refused(th_http_delete(&http, "/personal-access-tokens/zeta"), 404, 20, "resource_not_found");
    ok(th_http_delete(&http, "/personal-access-tokens/alpha"), 204);
}

/* --- streams, topics, partitions, segments, groups ----------------------------------------------
 */

static void test_streams(void **state)
{
    (void)state;
    ok(th_http_post(&http, "/streams", "{\"name\":\"orders\"}"), 200);
    int64_t id = I("id");
    assert_int_equal(len_of("topics"), 0);
    assert_non_null(J("options"));
    refused(th_http_post(&http, "/streams", "{\"name\":\"orders\"}"), 400, 1012,
            "stream_name_already_exists");
    assert_string_equal(S("field"), "name");
    ok(th_http_get(&http, "/streams/orders"), 200);
    assert_int_equal(I("id"), id);
    ok(th_http_put(&http, "/streams/orders", "{\"name\":\"orders2\"}"), 204);
    refused(th_http_put(&http, "/streams/orders2", "{\"name\":\"x\",\"options\":{\"k\":\"v\"}}"),
            400, 4041, "unsupported_option_key");
    ok(th_http_delete(&http, "/streams/orders2/purge"), 204);
    /* Topics of a missing stream: 200 [] (http.md 6.5). */
    ok(th_http_get(&http, "/streams/missing/topics"), 200);
    assert_int_equal(len_of(""), 0);
    ok(th_http_delete(&http, "/streams/orders2"), 204);
    refused(th_http_get(&http, "/streams/orders2"), 404, 404, "not_found");
    refused(th_http_delete(&http, "/streams/orders2"), 404, 1009, "stream_id_not_found");
    assert_string_equal(S("field"), "stream_id");
}

static void test_topics_and_partitions(void **state)
{
    (void)state;
    ok(th_http_post(&http, "/streams", "{\"name\":\"tp\"}"), 200);
    ok(th_http_post(
           &http, "/streams/tp/topics",
           "{\"name\":\"events\",\"partitions_count\":2,\"compression_algorithm\":\"GZIP\","
           "\"message_expiry\":0,\"max_topic_size\":0,"
           "\"options\":{\"segment_size\":\"128 MiB\"}}"),
       200);
    assert_string_equal(S("compression_algorithm"), "gzip");
    assert_int_equal(len_of("partitions"), 2);
    assert_string_equal(S("options.segment_size.value"), "134217728");
    assert_true(json_object_get_boolean(J("options.segment_size.explicit")));
    assert_false(json_object_get_boolean(J("options.enforce_fsync.explicit")));
    /* u64::MAX is "never": exact in and out. */
    assert_string_equal(json_object_to_json_string(J("message_expiry")), "18446744073709551615");
    ok(th_http_post(&http, "/streams/tp/topics",
                    "{\"name\":\"x\",\"partitions_count\":1,\"compression_algorithm\":\"none\","
                    "\"message_expiry\":0}"),
       422); /* max_topic_size is required */
    refused(
        th_http_post(&http, "/streams/tp/topics",
                     "{\"name\":\"y\",\"partitions_count\":1,\"compression_algorithm\":\"none\","
                     "\"message_expiry\":0,\"max_topic_size\":0,\"options\":{\"nope\":\"1\"}}"),
        400, 4041, "unsupported_option_key");

    ok(th_http_put(&http, "/streams/tp/topics/events",
                   "{\"name\":\"events\",\"message_expiry\":60000000,"
                   "\"compression_algorithm\":\"none\",\"max_topic_size\":18446744073709551615}"),
       204);
    ok(th_http_get(&http, "/streams/tp/topics/events"), 200);
    assert_int_equal(I("message_expiry"), 60000000);
    assert_string_equal(S("compression_algorithm"), "none");
    assert_int_equal(I("partitions.1.id"), 1);
    ok(th_http_get(&http, "/streams/tp/topics"), 200);
    assert_int_equal(len_of(""), 1);
    assert_null(J("0.partitions"));

    ok(th_http_post(&http, "/streams/tp/topics/events/partitions", "{\"partitions_count\":3}"),
       200);
    assert_int_equal(http.last.body_len, 0);
    ok(th_http_get(&http, "/streams/tp/topics/events"), 200);
    assert_int_equal(I("partitions_count"), 5);
    ok(th_http_delete(&http, "/streams/tp/topics/events/partitions?partitions_count=2"), 204);
    ok(th_http_delete(&http, "/streams/tp/topics/events/partitions"), 400);
    refused(th_http_delete(&http, "/streams/tp/topics/events/partitions?partitions_count=0"), 400,
            2015, "too_many_partitions");
    ok(th_http_delete(&http, "/streams/tp/topics/events/partitions/0?segments_count=1"), 204);
    ok(th_http_delete(&http, "/streams/tp/topics/events/partitions/x?segments_count=1"), 400);
    ok(th_http_delete(&http, "/streams/tp/topics/events/purge"), 204);
    refused(th_http_get(&http, "/streams/tp/topics/ghost"), 404, 404, "not_found");
    ok(th_http_delete(&http, "/streams/tp/topics/events"), 204);
    refused(th_http_delete(&http, "/streams/tp/topics/events"), 404, 2010, "topic_id_not_found");
}

static void test_consumer_groups(void **state)
{
    (void)state;
    ok(th_http_post(&http, "/streams", "{\"name\":\"cg\"}"), 200);
    ok(th_http_post(&http, "/streams/cg/topics",
                    "{\"name\":\"t\",\"partitions_count\":3,\"compression_algorithm\":\"none\","
                    "\"message_expiry\":0,\"max_topic_size\":0}"),
       200);
    ok(th_http_post(&http, "/streams/cg/topics/t/consumer-groups", "{\"name\":\"readers\"}"), 200);
    assert_string_equal(S("name"), "readers");
    assert_int_equal(I("partitions_count"), 3);
    assert_int_equal(I("members_count"), 0);
    assert_int_equal(len_of("members"), 0);
    refused(th_http_post(&http, "/streams/cg/topics/t/consumer-groups", "{\"name\":\"readers\"}"),
            400, 5004, "consumer_group_name_already_exists");
    ok(th_http_get(&http, "/streams/cg/topics/t/consumer-groups"), 200);
    assert_int_equal(len_of(""), 1);
    assert_null(J("0.members"));
    ok(th_http_get(&http, "/streams/cg/topics/t/consumer-groups/readers"), 200);
    refused(th_http_get(&http, "/streams/cg/topics/t/consumer-groups/none"), 404, 404, "not_found");
    refused(th_http_get(&http, "/streams/cg/topics/none/consumer-groups"), 404, 2010,
            "topic_id_not_found");
    ok(th_http_delete(&http, "/streams/cg/topics/t/consumer-groups/readers"), 204);
}

/* --- messages and offsets -----------------------------------------------------------------------
 */

static void setup_topic(const char *stream)
{
    char body[128];
    snprintf(body, sizeof(body), "{\"name\":\"%s\"}", stream);
    ok(th_http_post(&http, "/streams", body), 200);
    snprintf(body, sizeof(body), "/streams/%s/topics", stream);
    ok(th_http_post(&http, body,
                    "{\"name\":\"t\",\"partitions_count\":2,\"compression_algorithm\":\"none\","
                    "\"message_expiry\":0,\"max_topic_size\":0}"),
       200);
}

static void test_send_and_poll(void **state)
{
    (void)state;
    setup_topic("msg");
    const char *path = "/streams/msg/topics/t/messages";
    ok(th_http_post(&http, path,
                    "{\"partitioning\":{\"kind\":\"partition_id\",\"value\":\"AQAAAA==\"},"
                    "\"messages\":[{\"id\":7,\"payload\":\"aGVsbG8=\"},"
                    "{\"id\":\"340282366920938463463374607431768211455\",\"payload\":\"d29ybGQ=\","
                    "\"user_headers\":[{\"key\":{\"kind\":\"string\",\"value\":\"a2V5\"},"
                    "\"value\":{\"kind\":\"uint64\",\"value\":\"KgAAAAAAAAA=\"}}]}]}"),
       201);
    char v[64];
    assert_true(th_http_header(&http, "Iggy-Durability", v, sizeof(v)));
    assert_string_equal(v, "replicated-memory");
    assert_int_equal(I("confirmations.0.partition_id"), 1);
    assert_int_equal(I("confirmations.0.base_offset"), 0);
    ok(th_http_request(&http, "POST", "/streams/msg/topics/t/messages?ack=none",
                       "{\"messages\":[{\"payload\":\"eA==\"}],\"partitioning\":"
                       "{\"kind\":\"messages_key\",\"value\":\"a2V5\"}}",
                       strlen("{\"messages\":[{\"payload\":\"eA==\"}],\"partitioning\":"
                              "{\"kind\":\"messages_key\",\"value\":\"a2V5\"}}"),
                       NULL, NULL),
       202);
    assert_true(th_http_header(&http, "Iggy-Durability", v, sizeof(v)));
    assert_string_equal(v, "none");

    ok(th_http_get(&http, "/streams/msg/topics/t/messages?partition_id=1&kind=offset&value=0"
                          "&count=10"),
       200);
    assert_int_equal(I("partition_id"), 1);
    assert_int_equal(I("count"), 2);
    assert_int_equal(I("messages.0.header.id"), 7);
    assert_string_equal(S("messages.0.payload"), "aGVsbG8=");
    assert_int_equal(len_of("messages.0.user_headers"), 0);
    /* A u128 id is one JSON number (json-c's reader here would clamp it, so
     * the text is checked). */
    assert_non_null(strstr(http.last.body, "\"id\":340282366920938463463374607431768211455,"));
    assert_string_equal(S("messages.1.user_headers.0.key.kind"), "string");
    assert_string_equal(S("messages.1.user_headers.0.value.value"), "KgAAAAAAAAA=");
    assert_int_equal(I("messages.1.header.offset"), 1);
    /* last, first, and an empty partition. */
    ok(th_http_get(&http, "/streams/msg/topics/t/messages?partition_id=1&kind=last&count=1"), 200);
    assert_int_equal(I("messages.0.header.offset"), 1);

    /* Refusals: http.md 8. */
    refused(th_http_post(&http, path, "{\"messages\":[]}"), 400, 4009, "invalid_messages_count");
    ok(th_http_post(&http, path, "{\"messages\":[{\"payload\":\"not base64!\"}]}"), 422);
    ok(th_http_post(&http, path, "{\"messages\":[{\"payload\":\"\"}]}"), 422);
    ok(th_http_post(&http, path, "{\"messages\":[{\"payload\":\"eA==\"}],\"extra\":1}"), 422);
    refused(th_http_post(&http, "/streams/msg/topics/none/messages",
                         "{\"messages\":[{\"payload\":\"eA==\"}]}"),
            404, 20, "resource_not_found");
    refused(th_http_get(&http, "/streams/none/topics/t/messages"), 404, 404, "not_found");
    refused(th_http_get(&http, "/streams/msg/topics/t/messages?partition_id=9"), 404, 3007,
            "partition_not_found");
    ok(th_http_get(&http, "/streams/msg/topics/t/messages?kind=sideways"), 400);
    ok(th_http_get(&http, "/streams/msg/topics/t/messages?count=many"), 400);
}

static void test_consumer_offsets(void **state)
{
    (void)state;
    setup_topic("off");
    ok(th_http_post(&http, "/streams/off/topics/t/messages",
                    "{\"partitioning\":{\"kind\":\"partition_id\",\"value\":\"AAAAAA==\"},"
                    "\"messages\":[{\"payload\":\"YQ==\"},{\"payload\":\"Yg==\"}]}"),
       201);
    const char *base = "/streams/off/topics/t/consumer-offsets";
    refused(
        th_http_get(&http, "/streams/off/topics/t/consumer-offsets?consumer_id=5&partition_id=0"),
        404, 404, "not_found");
    ok(th_http_put(&http, base, "{\"consumer_id\":5,\"partition_id\":0,\"offset\":1}"), 204);
    ok(th_http_get(&http, "/streams/off/topics/t/consumer-offsets?consumer_id=5&partition_id=0"),
       200);
    assert_int_equal(I("stored_offset"), 1);
    assert_int_equal(I("current_offset"), 1);
    refused(th_http_put(&http, base, "{\"consumer_id\":5,\"partition_id\":0,\"offset\":9}"), 400,
            4100, "invalid_offset");
    assert_string_equal(S("field"), "offset");
    /* A named consumer, and a poll with auto_commit storing for consumer 1. */
    ok(th_http_put(&http, base, "{\"consumer_id\":\"worker\",\"partition_id\":0,\"offset\":0}"),
       204);
    ok(th_http_get(&http, "/streams/off/topics/t/messages?kind=first&count=2&auto_commit=true"),
       200);
    ok(th_http_get(&http, "/streams/off/topics/t/consumer-offsets"), 200);
    assert_int_equal(I("stored_offset"), 1);
    ok(th_http_delete(&http, "/streams/off/topics/t/consumer-offsets/5?partition_id=0"), 204);
    refused(th_http_delete(&http, "/streams/off/topics/t/consumer-offsets/5?partition_id=0"), 404,
            3021, "consumer_offset_not_found");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stats),
        cmocka_unit_test(test_cluster_metadata),
        cmocka_unit_test(test_clients),
        cmocka_unit_test(test_options),
        cmocka_unit_test(test_snapshot),
        cmocka_unit_test(test_users),
        cmocka_unit_test(test_personal_access_tokens),
        cmocka_unit_test(test_streams),
        cmocka_unit_test(test_topics_and_partitions),
        cmocka_unit_test(test_consumer_groups),
        cmocka_unit_test(test_send_and_poll),
        cmocka_unit_test(test_consumer_offsets),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
