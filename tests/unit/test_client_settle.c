/* Unit tests of libsluice's leader settlement (src/client/settle.c). The
 * decision, sl_client_settle_decide, over GetClusterMetadata replies built
 * with the wire encoder: from one node to several with the leader first,
 * last, absent or unhealthy, the leader being the node already connected to
 * under another spelling of its address, and bodies that do not decode.
 * Then the move itself, as a module test: two loopback listeners whose
 * answers the test writes (the "nodes" are scripts, not servers) - a move
 * after login, a move that cannot dial or log in, and the re-settlement
 * before a 58 is replayed. */
#include "test_client_fixtures.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <string.h>

#include "wire/command.h"

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

/* --- the move, against scripted nodes ------------------------------------------------ */

/* A loopback listener that accepts one connection and queues its script
 * (the replies the client will read, in order: the client is lockstep). */
#define NODE_ACCEPTS_MAX 4

typedef struct fake_node {
    int listener;
    uint16_t port;
    sl_buf_t script; /* queued on every connection accepted */
    int accepts;     /* connections to accept (1 unless set) */
    int conns[NODE_ACCEPTS_MAX];
    int conn; /* the first accepted connection; -1 before */
    pthread_t thread;
} fake_node_t;

static void node_listen(fake_node_t *n)
{
    *n = (fake_node_t){.conn = -1, .accepts = 1};
    for (int i = 0; i < NODE_ACCEPTS_MAX; i++)
        n->conns[i] = -1;
    sl_buf_init(&n->script, 0);
    n->listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(n->listener >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    assert_int_equal(bind(n->listener, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(n->listener, 4), 0);
    assert_int_equal(getsockname(n->listener, (struct sockaddr *)&a, &len), 0);
    n->port = ntohs(a.sin_port);
}

static void node_add(fake_node_t *n, sl_buf_t frame)
{
    sl_put_bytes(&n->script, frame.data, frame.len);
    sl_buf_free(&frame);
}

static void *node_serve(void *arg)
{
    fake_node_t *n = arg;
    for (int i = 0; i < n->accepts && i < NODE_ACCEPTS_MAX; i++) {
        n->conns[i] = accept(n->listener, NULL, NULL);
        if (n->conns[i] >= 0 && n->script.len > 0)
            (void)!send(n->conns[i], n->script.data, n->script.len, MSG_NOSIGNAL);
    }
    n->conn = n->conns[0];
    return NULL;
}

static void node_start(fake_node_t *n)
{
    assert_int_equal(pthread_create(&n->thread, NULL, node_serve, n), 0);
}

/* Waits for the accept; the node's connection as a fixture handle. */
static tf_conn_t node_joined(fake_node_t *n)
{
    assert_int_equal(pthread_join(n->thread, NULL), 0);
    assert_true(n->conn >= 0);
    return (tf_conn_t){.server = n->conn};
}

static void node_free(fake_node_t *n)
{
    for (int i = 0; i < NODE_ACCEPTS_MAX; i++)
        if (n->conns[i] >= 0)
            close(n->conns[i]);
    if (n->listener >= 0)
        close(n->listener);
    sl_buf_free(&n->script);
}

static sl_buf_t login_reply(uint64_t session)
{
    sl_buf_t body;
    sl_buf_init(&body, 0);
    sl_login_register_reply_t r = {
        .user_id = 0,
        .session = session,
        .server_protocol_version = SL_PROTOCOL_VERSION,
        .server_version = sl_span_str(session == 5 ? "node-a" : "node-b"),
    };
    assert_int_equal(sl_login_register_reply_encode(&body, &r), 0);
    sl_buf_t b = tf_reply_ok(SL_OP_REGISTER, body.data, body.len); /* result-framed */
    sl_buf_free(&body);
    return b;
}

/* Three nodes: a at port_a, b at port_b, and a third; the leader's port. */
static sl_buf_t metadata_reply(uint16_t port_a, uint16_t port_b, uint16_t leader_port)
{
    sl_cluster_node_t nodes[3] = {
        node("a", "127.0.0.1", port_a, SL_NODE_FOLLOWER, SL_NODE_HEALTHY),
        node("b", "127.0.0.1", port_b, SL_NODE_FOLLOWER, SL_NODE_HEALTHY),
        node("c", "127.0.0.1", 1, SL_NODE_FOLLOWER, SL_NODE_HEALTHY),
    };
    for (int i = 0; i < 3; i++)
        if (nodes[i].tcp_port == leader_port)
            nodes[i].role = SL_NODE_LEADER;
    sl_buf_t body;
    sl_buf_init(&body, 0);
    sl_get_cluster_metadata_reply_t m = {sl_span_str("local"), 3, nodes};
    assert_int_equal(sl_get_cluster_metadata_reply_encode(&body, &m), 0);
    sl_buf_t b = tf_reply(SL_OP_NON_REPLICATED, 0, body.data, body.len);
    sl_buf_free(&body);
    return b;
}

static sl_client_t *connect_to(const fake_node_t *n, const sl_client_options_t *o)
{
    sl_client_t *c = NULL;
    assert_int_equal(sl_client_connect("127.0.0.1", n->port, o, &c), 0);
    return c;
}

/* Reads the next request and checks its kind and session. */
static void expect(tf_conn_t *t, uint8_t operation, uint32_t code, uint64_t session)
{
    tf_request_t q = tf_take(t);
    assert_int_equal(q.header.operation, operation);
    if (operation == SL_OP_NON_REPLICATED)
        assert_int_equal(q.header.code, code);
    assert_int_equal(q.header.session, session);
    tf_request_free(&q);
}

static bool closed_by_client(tf_conn_t *t)
{
    uint8_t byte;
    return recv(t->server, &byte, 1, 0) == 0;
}

static void test_login_moves_to_the_leader(void **state)
{
    (void)state;
    fake_node_t a, b;
    node_listen(&a);
    node_listen(&b);
    node_add(&a, login_reply(5));
    node_add(&a, metadata_reply(a.port, b.port, b.port));
    node_add(&b, login_reply(7));
    node_add(&b, metadata_reply(a.port, b.port, b.port)); /* b names itself: stay */
    node_start(&a);
    node_start(&b);
    sl_client_t *c = connect_to(&a, NULL);
    sl_identity_t id;
    assert_int_equal(sl_client_login(c, "iggy", "secret", &id), 0);
    tf_conn_t ta = node_joined(&a), tb = node_joined(&b);
    /* a saw the login and the question, then the client left. */
    expect(&ta, SL_OP_REGISTER, 0, 0);
    expect(&ta, SL_OP_NON_REPLICATED, SL_CMD_GET_CLUSTER_METADATA, 5);
    assert_true(closed_by_client(&ta));
    /* b saw the same credentials, and the question under its own session. */
    tf_request_t q = tf_take(&tb);
    assert_int_equal(q.header.operation, SL_OP_REGISTER);
    sl_login_register_request_t login;
    assert_int_equal(sl_login_register_request_decode(tf_body(&q), &login), 0);
    assert_span_str(login.login.username, "iggy");
    assert_span_str(login.login.password, "secret");
    tf_request_free(&q);
    expect(&tb, SL_OP_NON_REPLICATED, SL_CMD_GET_CLUSTER_METADATA, 7);
    sl_session_info_t info;
    sl_client_session_info(c, &info);
    assert_int_equal(info.leader_moves, 1);
    assert_int_equal(info.cluster_nodes, 3);
    assert_int_equal(info.session, 7);
    assert_int_equal(id.session, 7);
    assert_string_equal(id.server_version, "node-b");
    assert_int_equal(c->care.port, b.port); /* reconnects dial the leader */
    /* The next call goes to b. */
    tf_queue(&tb, tf_reply(SL_OP_NON_REPLICATED, 0, NULL, 0));
    assert_int_equal(sl_client_ping(c), 0);
    expect(&tb, SL_OP_NON_REPLICATED, SL_CMD_PING, 7);
    sl_client_close(c);
    node_free(&a);
    node_free(&b);
}

static void test_failed_move_stays_logged_in(void **state)
{
    (void)state;
    for (int way = 0; way < 2; way++) {
        fake_node_t a, b;
        node_listen(&a);
        node_listen(&b);
        uint16_t b_port = b.port;
        node_add(&a, login_reply(5));
        node_add(&a, metadata_reply(a.port, b_port, b_port));
        if (way == 0) {
            close(b.listener); /* the leader cannot be dialled */
            b.listener = -1;
        } else {
            node_add(&b, tf_reply(SL_OP_REGISTER, SL_ERR_INVALID_CREDENTIALS, NULL, 0));
            node_start(&b);
        }
        node_start(&a);
        sl_client_t *c = connect_to(&a, NULL);
        sl_identity_t id;
        assert_int_equal(sl_client_login(c, "iggy", "secret", &id), 0);
        tf_conn_t ta = node_joined(&a);
        if (way == 1) {
            tf_conn_t tb = node_joined(&b);
            expect(&tb, SL_OP_REGISTER, 0, 0);
            assert_true(closed_by_client(&tb));
        }
        expect(&ta, SL_OP_REGISTER, 0, 0);
        expect(&ta, SL_OP_NON_REPLICATED, SL_CMD_GET_CLUSTER_METADATA, 5);
        sl_session_info_t info;
        sl_client_session_info(c, &info);
        assert_int_equal(info.leader_moves, 0);
        assert_int_equal(info.session, 5);
        assert_int_equal(id.session, 5);
        assert_string_equal(id.server_version, "node-a");
        /* Still served by a. */
        tf_queue(&ta, tf_reply(SL_OP_NON_REPLICATED, 0, NULL, 0));
        assert_int_equal(sl_client_ping(c), 0);
        expect(&ta, SL_OP_NON_REPLICATED, SL_CMD_PING, 5);
        sl_client_close(c);
        node_free(&a);
        node_free(&b);
    }
}

static void test_58_settles_again_before_the_replay(void **state)
{
    (void)state;
    fake_node_t a, b;
    node_listen(&a);
    node_listen(&b);
    /* a leads at login, then refuses a write as a backup would and names b. */
    node_add(&a, login_reply(5));
    node_add(&a, metadata_reply(a.port, b.port, a.port));
    node_add(&a, tf_reply_result(SL_OP_CREATE_STREAM, SL_ERR_TRANSIENT_NOT_ACCEPTED));
    node_add(&a, metadata_reply(a.port, b.port, b.port));
    node_add(&b, login_reply(7));
    node_add(&b, metadata_reply(a.port, b.port, b.port));
    size_t len;
    uint8_t *stream = tu_hex(HEX_GET_STREAMS, &len);
    stream[12] = 0; /* no topics */
    node_add(&b, tf_reply_ok(SL_OP_CREATE_STREAM, stream, len));
    free(stream);
    node_start(&a);
    node_start(&b);
    sl_client_options_t o = {.transient_retries = 2, .transient_delay_ms = 1};
    sl_client_t *c = connect_to(&a, &o);
    assert_int_equal(sl_client_login(c, "iggy", "secret", NULL), 0);
    sl_session_info_t info;
    sl_client_session_info(c, &info);
    assert_int_equal(info.leader_moves, 0);
    assert_int_equal(info.cluster_nodes, 3);
    const sl_stream_t *created;
    assert_int_equal(sl_client_create_stream(c, "orders", &created), 0);
    tf_conn_t ta = node_joined(&a), tb = node_joined(&b);
    expect(&ta, SL_OP_REGISTER, 0, 0);
    expect(&ta, SL_OP_NON_REPLICATED, SL_CMD_GET_CLUSTER_METADATA, 5);
    expect(&ta, SL_OP_CREATE_STREAM, 0, 5);
    expect(&ta, SL_OP_NON_REPLICATED, SL_CMD_GET_CLUSTER_METADATA, 5);
    assert_true(closed_by_client(&ta));
    expect(&tb, SL_OP_REGISTER, 0, 0);
    expect(&tb, SL_OP_NON_REPLICATED, SL_CMD_GET_CLUSTER_METADATA, 7);
    /* The write again, numbered under b's session. */
    tf_request_t q = tf_take(&tb);
    assert_int_equal(q.header.operation, SL_OP_CREATE_STREAM);
    assert_int_equal(q.header.session, 7);
    assert_int_equal(q.header.request, 1);
    sl_create_stream_request_t req;
    assert_int_equal(sl_create_stream_request_decode(tf_body(&q), &req), 0);
    assert_span_str(req.name, "orders");
    tf_request_free(&q);
    sl_client_session_info(c, &info);
    assert_int_equal(info.leader_moves, 1);
    assert_int_equal(info.replays, 1);
    sl_client_close(c);
    node_free(&a);
    node_free(&b);
}

static void test_moves_are_bounded(void **state)
{
    (void)state;
    /* Two nodes that each name the other: the client moves a, b, a, b and
     * stops there, logged in on the last. */
    fake_node_t a, b;
    node_listen(&a);
    node_listen(&b);
    a.accepts = 2;
    b.accepts = 2;
    node_add(&a, login_reply(5));
    node_add(&a, metadata_reply(a.port, b.port, b.port));
    node_add(&b, login_reply(7));
    node_add(&b, metadata_reply(a.port, b.port, a.port));
    node_start(&a);
    node_start(&b);
    sl_client_t *c = connect_to(&a, NULL);
    assert_int_equal(sl_client_login(c, "iggy", "secret", NULL), 0);
    node_joined(&a);
    tf_conn_t tb = node_joined(&b);
    sl_session_info_t info;
    sl_client_session_info(c, &info);
    assert_int_equal(info.leader_moves, SL_CLIENT_SETTLE_HOPS_MAX);
    assert_true(info.logged_in);
    assert_int_equal(info.session, 7);
    assert_int_equal(c->care.port, b.port);
    /* Each of the first three connections was closed by the client. */
    tf_conn_t first_a = {.server = a.conns[0]}, second_a = {.server = a.conns[1]};
    for (int i = 0; i < 2; i++) {
        tf_conn_t *t = i == 0 ? &first_a : &tb;
        expect(t, SL_OP_REGISTER, 0, 0);
        expect(t, SL_OP_NON_REPLICATED, SL_CMD_GET_CLUSTER_METADATA, i == 0 ? 5 : 7);
        assert_true(closed_by_client(t));
    }
    expect(&second_a, SL_OP_REGISTER, 0, 0);
    expect(&second_a, SL_OP_NON_REPLICATED, SL_CMD_GET_CLUSTER_METADATA, 5);
    assert_true(closed_by_client(&second_a));
    sl_client_close(c);
    node_free(&a);
    node_free(&b);
}

static void test_roster_of_a_reply(void **state)
{
    (void)state;
    reply_t r = {.count = 4};
    r.nodes[0] = node("a", "10.0.0.1", 8090, SL_NODE_LEADER, SL_NODE_HEALTHY);
    r.nodes[1] = node("b", "", 8091, SL_NODE_FOLLOWER, SL_NODE_HEALTHY);      /* no address */
    r.nodes[2] = node("c", "10.0.0.3", 0, SL_NODE_FOLLOWER, SL_NODE_HEALTHY); /* TCP off */
    r.nodes[3] = node("d", "host-d", 8093, SL_NODE_FOLLOWER, SL_NODE_UNREACHABLE);
    encode(&r);
    sl_client_address_t out[SL_CLIENT_KNOWN_NODES_MAX];
    sl_span_t body = sl_span(r.body.data, r.body.len);
    assert_int_equal(sl_client_settle_roster(body, SL_CLIENT_TCP, &r.arena, out, 8), 2);
    assert_string_equal(out[0].host, "10.0.0.1");
    assert_int_equal(out[0].port, 8090);
    assert_string_equal(out[1].host, "host-d");
    assert_int_equal(out[1].port, 8093);
    /* The WebSocket ports (tcp + 10 here; c's is 10, so c counts). */
    assert_int_equal(sl_client_settle_roster(body, SL_CLIENT_WEBSOCKET, &r.arena, out, 8), 3);
    assert_int_equal(out[1].port, 10);
    /* The bound, a body cut short, and a single node. */
    assert_int_equal(sl_client_settle_roster(body, SL_CLIENT_TCP, &r.arena, out, 1), 1);
    assert_int_equal(sl_client_settle_roster(sl_span(r.body.data, r.body.len - 1), SL_CLIENT_TCP,
                                             &r.arena, out, 8),
                     0);
    release(&r);
    reply_t one = {.count = 1};
    one.nodes[0] = node("iggy-node", "127.0.0.1", 8090, SL_NODE_LEADER, SL_NODE_HEALTHY);
    encode(&one);
    assert_int_equal(sl_client_settle_roster(sl_span(one.body.data, one.body.len), SL_CLIENT_TCP,
                                             &one.arena, out, 8),
                     0);
    release(&one);
}

static void test_reconnect_tries_the_other_nodes(void **state)
{
    (void)state;
    /* Settled on a, the leader, which lists b too; a then goes away for
     * good (its listener closes): the reconnect finds b, logs in there and
     * settles (b now leads). */
    fake_node_t a, b;
    node_listen(&a);
    node_listen(&b);
    node_add(&a, login_reply(5));
    node_add(&a, metadata_reply(a.port, b.port, a.port));
    node_add(&b, login_reply(7));
    node_add(&b, metadata_reply(a.port, b.port, b.port));
    node_add(&b, tf_reply(SL_OP_NON_REPLICATED, 0, NULL, 0)); /* the ping */
    node_start(&a);
    sl_client_options_t o = {.reconnect_attempts = 3, .reconnect_delay_ms = 1};
    sl_client_t *c = connect_to(&a, &o);
    assert_int_equal(sl_client_login(c, "iggy", "secret", NULL), 0);
    tf_conn_t ta = node_joined(&a);
    expect(&ta, SL_OP_REGISTER, 0, 0);
    expect(&ta, SL_OP_NON_REPLICATED, SL_CMD_GET_CLUSTER_METADATA, 5);
    sl_session_info_t info;
    sl_client_session_info(c, &info);
    assert_int_equal(info.leader_moves, 0);
    assert_int_equal(c->care.known_count, 3); /* a, b and the third node */
    close(a.listener);
    a.listener = -1;
    close(ta.server);
    a.conns[0] = -1;
    node_start(&b);
    assert_int_equal(sl_client_ping(c), 0);
    tf_conn_t tb = node_joined(&b);
    expect(&tb, SL_OP_REGISTER, 0, 0);
    expect(&tb, SL_OP_NON_REPLICATED, SL_CMD_GET_CLUSTER_METADATA, 7);
    expect(&tb, SL_OP_NON_REPLICATED, SL_CMD_PING, 7);
    sl_client_session_info(c, &info);
    assert_int_equal(info.reconnects, 1);
    assert_int_equal(info.relogins, 1);
    assert_int_equal(info.leader_moves, 0); /* reached b by the reconnect itself */
    assert_int_equal(c->care.port, b.port);
    sl_client_close(c);
    node_free(&a);
    node_free(&b);
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
        cmocka_unit_test(test_login_moves_to_the_leader),
        cmocka_unit_test(test_failed_move_stays_logged_in),
        cmocka_unit_test(test_58_settles_again_before_the_replay),
        cmocka_unit_test(test_moves_are_bounded),
        cmocka_unit_test(test_roster_of_a_reply),
        cmocka_unit_test(test_reconnect_tries_the_other_nodes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
