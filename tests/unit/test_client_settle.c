/* Unit tests of libsluice's leader settlement decision (src/client/settle.c,
 * sl_client_settle_decide): GetClusterMetadata replies built with the wire
 * encoder, from one node to several with the leader first, last, absent or
 * unhealthy, the leader being the node already connected to under another
 * spelling of its address, and bodies that do not decode. */
#include "testutil.h"

#include <string.h>

#include "client/client_internal.h"

#define NODES_MAX 4

typedef struct reply {
    sl_cluster_node_t nodes[NODES_MAX];
    uint32_t count;
    sl_buf_t body;
    sl_arena_t arena;
} reply_t;

static sl_cluster_node_t node(const char *name, const char *ip, uint16_t tcp, uint8_t role,
                              uint8_t status)
{
    return (sl_cluster_node_t){
        .name = sl_span_str(name),
        .ip = sl_span_str(ip),
        .tcp_port = tcp,
        .quic_port = 8080,
        .http_port = 3000,
        .websocket_port = (uint16_t)(tcp + 10),
        .role = role,
        .status = status,
    };
}

/* Encodes r->nodes as a GetClusterMetadata reply body with the codec the
 * server uses. */
static void encode(reply_t *r)
{
    sl_buf_init(&r->body, 1u << 16);
    sl_arena_init(&r->arena, 4096, 1u << 20);
    sl_get_cluster_metadata_reply_t m = {sl_span_str("local"), r->count, r->nodes};
    assert_int_equal(sl_get_cluster_metadata_reply_encode(&r->body, &m), 0);
}

static void release(reply_t *r)
{
    sl_buf_free(&r->body);
    sl_arena_free(&r->arena);
}

/* Three nodes on 127.0.0.1 ports 8090..8092; role and status of each. */
static void three(reply_t *r, const uint8_t roles[3], const uint8_t statuses[3])
{
    static const char *names[3] = {"node-0", "node-1", "node-2"};
    r->count = 3;
    for (int i = 0; i < 3; i++)
        r->nodes[i] = node(names[i], "127.0.0.1", (uint16_t)(8090 + i), roles[i], statuses[i]);
    encode(r);
}

/* The decision for body, connected to given:port (peer may be NULL). */
static bool decide_at(reply_t *r, const char *given, const char *peer, uint16_t port,
                      sl_client_address_t *to, uint32_t *count)
{
    sl_client_settle_in_t in = {
        .rc = 0,
        .payload = sl_span(r->body.data, r->body.len),
        .transport = SL_CLIENT_TCP,
        .given_host = given,
        .peer_host = peer,
        .port = port,
    };
    memset(to, 0xAA, sizeof(*to));
    return sl_client_settle_decide(&in, &r->arena, to, count);
}

static const uint8_t HEALTHY3[3] = {SL_NODE_HEALTHY, SL_NODE_HEALTHY, SL_NODE_HEALTHY};

static void test_single_node_stays(void **state)
{
    (void)state;
    reply_t r = {.count = 1};
    /* What a single-node server answers: itself, Leader, on another address
     * than the one dialled (a proxy or a NAT in between). */
    r.nodes[0] = node("iggy-node", "10.0.0.7", 8090, SL_NODE_LEADER, SL_NODE_HEALTHY);
    encode(&r);
    sl_client_address_t to;
    uint32_t count = 99;
    assert_false(decide_at(&r, "127.0.0.1", "127.0.0.1", 18090, &to, &count));
    assert_int_equal(count, 1);
    release(&r);
}

static void test_leader_first_middle_last(void **state)
{
    (void)state;
    for (int at = 0; at < 3; at++) {
        uint8_t roles[3] = {SL_NODE_FOLLOWER, SL_NODE_FOLLOWER, SL_NODE_FOLLOWER};
        roles[at] = SL_NODE_LEADER;
        reply_t r = {0};
        three(&r, roles, HEALTHY3);
        sl_client_address_t to;
        uint32_t count = 0;
        /* Connected to a port no node has: every leader is elsewhere. */
        assert_true(decide_at(&r, "127.0.0.1", "127.0.0.1", 9999, &to, &count));
        assert_int_equal(count, 3);
        assert_string_equal(to.host, "127.0.0.1");
        assert_int_equal(to.port, 8090 + at);
        release(&r);
    }
}

static void test_no_leader_stays(void **state)
{
    (void)state;
    const uint8_t roles[3] = {SL_NODE_FOLLOWER, SL_NODE_FOLLOWER, SL_NODE_FOLLOWER};
    reply_t r = {0};
    three(&r, roles, HEALTHY3);
    sl_client_address_t to;
    uint32_t count = 0;
    assert_false(decide_at(&r, "127.0.0.1", NULL, 8091, &to, &count));
    assert_int_equal(count, 3);
    release(&r);
}

static void test_unhealthy_leader_is_skipped(void **state)
{
    (void)state;
    /* Two leaders (a stale view): the first is Unreachable, so the second,
     * Healthy, is the one. */
    const uint8_t roles[3] = {SL_NODE_LEADER, SL_NODE_FOLLOWER, SL_NODE_LEADER};
    const uint8_t statuses[3] = {SL_NODE_UNREACHABLE, SL_NODE_HEALTHY, SL_NODE_HEALTHY};
    reply_t r = {0};
    three(&r, roles, statuses);
    sl_client_address_t to;
    uint32_t count = 0;
    assert_true(decide_at(&r, "127.0.0.1", NULL, 8091, &to, &count));
    assert_int_equal(to.port, 8092);
    release(&r);

    /* The only leader is Starting: stay. */
    const uint8_t one_leader[3] = {SL_NODE_FOLLOWER, SL_NODE_LEADER, SL_NODE_FOLLOWER};
    const uint8_t starting[3] = {SL_NODE_HEALTHY, SL_NODE_STARTING, SL_NODE_HEALTHY};
    reply_t s = {0};
    three(&s, one_leader, starting);
    assert_false(decide_at(&s, "127.0.0.1", NULL, 8090, &to, &count));
    assert_int_equal(count, 3);
    release(&s);
}

static void test_leader_is_the_current_node(void **state)
{
    (void)state;
    const uint8_t roles[3] = {SL_NODE_FOLLOWER, SL_NODE_LEADER, SL_NODE_FOLLOWER};
    reply_t r = {0};
    three(&r, roles, HEALTHY3);
    sl_client_address_t to;
    uint32_t count = 0;
    /* Given as listed. */
    assert_false(decide_at(&r, "127.0.0.1", NULL, 8091, &to, &count));
    /* Given as "localhost": the peer's numeric address says it is the same. */
    assert_false(decide_at(&r, "localhost", "127.0.0.1", 8091, &to, &count));
    /* Given as "localhost" with no peer address known: a name and a literal
     * cannot be compared without a resolver, so the client moves (to the
     * same server, which then names itself: the next round stays). */
    assert_true(decide_at(&r, "localhost", NULL, 8091, &to, &count));
    assert_string_equal(to.host, "127.0.0.1");
    /* Same host, another port: another node. */
    assert_true(decide_at(&r, "127.0.0.1", "127.0.0.1", 8090, &to, &count));
    assert_int_equal(to.port, 8091);
    release(&r);
}

static void test_address_forms(void **state)
{
    (void)state;
    assert_true(sl_client_same_host("127.0.0.1", "127.0.0.1"));
    assert_false(sl_client_same_host("127.0.0.1", "127.0.0.2"));
    assert_true(sl_client_same_host("::1", "0:0:0:0:0:0:0:1"));
    assert_true(sl_client_same_host("Node-1.Example", "node-1.example"));
    assert_false(sl_client_same_host("localhost", "127.0.0.1"));
    assert_false(sl_client_same_host("::1", "127.0.0.1"));

    /* A leader listed by name while the client dialled the literal. */
    reply_t r = {.count = 2};
    r.nodes[0] = node("a", "node-a.local", 8090, SL_NODE_FOLLOWER, SL_NODE_HEALTHY);
    r.nodes[1] = node("b", "NODE-B.local", 8091, SL_NODE_LEADER, SL_NODE_HEALTHY);
    encode(&r);
    sl_client_address_t to;
    uint32_t count = 0;
    assert_false(decide_at(&r, "node-b.local", "10.1.1.2", 8091, &to, &count));
    assert_true(decide_at(&r, "node-a.local", "10.1.1.1", 8090, &to, &count));
    assert_string_equal(to.host, "NODE-B.local");
    release(&r);
}

static void test_websocket_uses_its_port(void **state)
{
    (void)state;
    const uint8_t roles[3] = {SL_NODE_FOLLOWER, SL_NODE_FOLLOWER, SL_NODE_LEADER};
    reply_t r = {0};
    three(&r, roles, HEALTHY3);
    sl_client_settle_in_t in = {
        .payload = sl_span(r.body.data, r.body.len),
        .transport = SL_CLIENT_WEBSOCKET,
        .given_host = "127.0.0.1",
        .port = 8100,
    };
    sl_client_address_t to;
    uint32_t count = 0;
    assert_true(sl_client_settle_decide(&in, &r.arena, &to, &count));
    assert_int_equal(to.port, 8092 + 10);
    /* Connected to that WebSocket port already: stay. */
    in.port = 8102;
    assert_false(sl_client_settle_decide(&in, &r.arena, &to, &count));
    release(&r);
}

static void test_unusable_leader_address_stays(void **state)
{
    (void)state;
    char longname[SL_CLIENT_HOST_MAX + 1];
    memset(longname, 'a', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = '\0';
    const char *ips[2] = {"", longname};
    for (int i = 0; i < 2; i++) {
        reply_t r = {.count = 2};
        r.nodes[0] = node("a", "127.0.0.1", 8090, SL_NODE_FOLLOWER, SL_NODE_HEALTHY);
        r.nodes[1] = node("b", ips[i], 8091, SL_NODE_LEADER, SL_NODE_HEALTHY);
        encode(&r);
        sl_client_address_t to;
        uint32_t count = 0;
        assert_false(decide_at(&r, "127.0.0.1", NULL, 8090, &to, &count));
        assert_int_equal(count, 2);
        release(&r);
    }
    /* Port 0: the transport is off on the leader. */
    reply_t z = {.count = 2};
    z.nodes[0] = node("a", "127.0.0.1", 8090, SL_NODE_FOLLOWER, SL_NODE_HEALTHY);
    z.nodes[1] = node("b", "127.0.0.1", 0, SL_NODE_LEADER, SL_NODE_HEALTHY);
    encode(&z);
    sl_client_address_t to;
    uint32_t count = 0;
    assert_false(decide_at(&z, "127.0.0.1", NULL, 8090, &to, &count));
    release(&z);
}

static void test_failed_call_and_malformed_bodies_stay(void **state)
{
    (void)state;
    const uint8_t roles[3] = {SL_NODE_FOLLOWER, SL_NODE_LEADER, SL_NODE_FOLLOWER};
    reply_t r = {0};
    three(&r, roles, HEALTHY3);
    sl_client_address_t to;
    uint32_t count = 7;
    /* A non-zero status: the body is not even looked at. */
    sl_client_settle_in_t in = {
        .rc = -SL_ERR_UNAUTHENTICATED,
        .payload = sl_span(r.body.data, r.body.len),
        .given_host = "127.0.0.1",
        .port = 8090,
    };
    assert_false(sl_client_settle_decide(&in, &r.arena, &to, &count));
    assert_int_equal(count, 0);
    in.rc = 0;
    assert_true(sl_client_settle_decide(&in, &r.arena, &to, &count)); /* the whole body moves */

    /* Every truncation of a body that would move the client. */
    for (size_t len = 0; len < r.body.len; len++) {
        in.payload = sl_span(r.body.data, len);
        assert_false(sl_client_settle_decide(&in, &r.arena, &to, &count));
        assert_int_equal(count, 0);
    }
    /* A trailing byte, a role 2 and a status 5 (both SDKs reject the reply). */
    uint8_t bytes[512];
    sl_assert(r.body.len + 1 <= sizeof(bytes));
    memcpy(bytes, r.body.data, r.body.len);
    bytes[r.body.len] = 0;
    in.payload = sl_span(bytes, r.body.len + 1);
    assert_false(sl_client_settle_decide(&in, &r.arena, &to, &count));
    size_t last = r.body.len - 2; /* the last node's role, then its status */
    in.payload = sl_span(bytes, r.body.len);
    bytes[last] = 2;
    assert_false(sl_client_settle_decide(&in, &r.arena, &to, &count));
    bytes[last] = SL_NODE_FOLLOWER;
    bytes[last + 1] = 5;
    assert_false(sl_client_settle_decide(&in, &r.arena, &to, &count));
    bytes[last + 1] = SL_NODE_HEALTHY;
    assert_true(sl_client_settle_decide(&in, &r.arena, &to, &count));
    /* A node count far beyond the body. */
    size_t count_at = 4 + strlen("local");
    bytes[count_at + 3] = 0x7f;
    assert_false(sl_client_settle_decide(&in, &r.arena, &to, &count));
    release(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_single_node_stays),
        cmocka_unit_test(test_leader_first_middle_last),
        cmocka_unit_test(test_no_leader_stays),
        cmocka_unit_test(test_unhealthy_leader_is_skipped),
        cmocka_unit_test(test_leader_is_the_current_node),
        cmocka_unit_test(test_address_forms),
        cmocka_unit_test(test_websocket_uses_its_port),
        cmocka_unit_test(test_unusable_leader_address_stays),
        cmocka_unit_test(test_failed_call_and_malformed_bodies_stay),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
