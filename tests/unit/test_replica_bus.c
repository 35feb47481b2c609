/* The replica plane's transport in one process: three buses on loopback
 * form every link (with and without the keyed handshake, and across a
 * secret rotation), carry decoded frames both ways, refuse a wrong secret
 * and another cluster, close a link on a hostile frame, bound their
 * queues, hold their reading while the receiver has no room, and redial
 * a peer that comes back. Waits are bounded by turns,
 * never by the clock's reading. */
#include "testutil.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "server/replica_bus.h"
#include "vsr/handshake.h"
#include "wire/header.h"

#define NODES 3u
/* Turns of 5 ms each at most: 20 s on a loaded machine before a wait fails. */
#define TURNS_MAX 4000

typedef struct received {
    uint32_t frames;
    uint8_t last_peer;
    uint8_t last_command;
    uint64_t last_commit;
    uint32_t ups;
    uint32_t downs;
    sl_rbus_t *take_from; /* set: on_frame takes each frame from this bus */
    uint8_t *taken;       /* the last frame taken (the test frees it) */
    uint32_t taken_len;
    uint32_t taken_none; /* frames sl_rbus_take_frame had no buffer for */
    bool limit;          /* set: the bus may hand at most room frames (its room callback) */
    uint32_t room;
} received_t;

typedef struct cluster {
    sl_rbus_t *bus[NODES];
    received_t got[NODES];
} cluster_t;

static const char secret_a[] = "0123456789abcdef0123456789abcdef";
static const char secret_b[] = "fedcba9876543210fedcba9876543210";

static void on_frame(void *ctx, uint8_t peer, const sl_vsr_frame_t *f, const uint8_t *bytes,
                     uint32_t len)
{
    received_t *r = ctx;
    assert_true(len >= SL_HEADER_SIZE && bytes[60] == f->h.command);
    r->frames++;
    if (r->limit) {
        assert_true(r->room > 0); /* the bus handed no more than it was told there was room for */
        r->room--;
    }
    r->last_peer = peer;
    r->last_command = f->h.command;
    if (f->h.command == SL_VSR_COMMIT)
        r->last_commit = f->u.commit.commit;
    if (r->take_from == NULL)
        return;
    uint8_t *frame = sl_rbus_take_frame(r->take_from);
    if (frame == NULL) {
        r->taken_none++;
        return;
    }
    assert_ptr_equal(frame, bytes); /* the very buffer the frame was read into */
    sl_rbus_frame_release(r->taken);
    r->taken = frame;
    r->taken_len = len;
}

static uint32_t room_of(void *ctx)
{
    const received_t *r = ctx;
    return r->limit ? r->room : UINT32_MAX;
}

static void on_link(void *ctx, uint8_t peer, bool up)
{
    received_t *r = ctx;
    (void)peer;
    if (up)
        r->ups++;
    else
        r->downs++;
}

static sl_u128_t cluster_id(const char *name)
{
    return sl_vsr_cluster_id(sl_span_str(name));
}

static void bus_config(sl_rbus_config_t *c, uint8_t self, const char *secret, const char *previous,
                       received_t *r)
{
    sl_rbus_config_init(c);
    c->self = self;
    c->replica_count = NODES;
    c->cluster = cluster_id("test-cluster");
    c->backoff_min_ms = 10;
    c->backoff_max_ms = 50;
    c->auth = secret != NULL;
    if (secret)
        sl_vsr_auth_key(sl_span_str(secret), c->key);
    if (previous) {
        c->has_previous_key = true;
        sl_vsr_auth_key(sl_span_str(previous), c->previous_key);
    }
    c->on_frame = on_frame;
    c->on_link = on_link;
    c->room = room_of;
    c->ctx = r;
}

static void wire_peers(cluster_t *cl)
{
    for (uint8_t i = 0; i < NODES; i++) {
        for (uint8_t j = 0; j < NODES; j++) {
            if (!cl->bus[i] || !cl->bus[j])
                continue;
            sl_rbus_addr_t a = {.host = "127.0.0.1", .port = sl_rbus_port(cl->bus[j])};
            sl_rbus_set_peer(cl->bus[i], j, &a);
        }
    }
}

/* secrets[i] NULL: auth off on node i. */
static void cluster_start(cluster_t *cl, const char *const secrets[NODES],
                          const char *const previous[NODES])
{
    memset(cl, 0, sizeof(*cl));
    for (uint8_t i = 0; i < NODES; i++) {
        sl_rbus_config_t c;
        bus_config(&c, i, secrets ? secrets[i] : NULL, previous ? previous[i] : NULL, &cl->got[i]);
        assert_int_equal(sl_rbus_create(&c, &cl->bus[i]), 0);
    }
    wire_peers(cl);
}

static void cluster_stop(cluster_t *cl)
{
    for (uint32_t i = 0; i < NODES; i++)
        sl_rbus_destroy(cl->bus[i]);
}

static void turn(cluster_t *cl)
{
    for (uint32_t i = 0; i < NODES; i++)
        if (cl->bus[i])
            sl_rbus_poll(cl->bus[i], 1);
}

static bool all_up(const cluster_t *cl)
{
    for (uint8_t i = 0; i < NODES; i++)
        for (uint8_t j = 0; j < NODES; j++)
            if (i != j && !sl_rbus_link_up(cl->bus[i], j))
                return false;
    return true;
}

static void wait_all_up(cluster_t *cl)
{
    for (int t = 0; t < TURNS_MAX && !all_up(cl); t++)
        turn(cl);
    assert_true(all_up(cl));
}

static uint32_t commit_frame(uint8_t out[SL_HEADER_SIZE], uint8_t from, uint64_t commit,
                             const char *cluster)
{
    sl_vsr_frame_t f;
    memset(&f, 0, sizeof(f));
    f.h.command = SL_VSR_COMMIT;
    f.h.cluster = cluster_id(cluster);
    f.h.replica = from;
    f.u.commit.commit = commit;
    f.u.commit.timestamp_monotonic = commit;
    f.u.commit.group = SL_VSR_GROUP_METADATA;
    sl_vsr_header_encode(out, &f, sl_span(NULL, 0));
    return SL_HEADER_SIZE;
}

/* A prepare the primary `from` built, as a backup relays it down the chain. */
static uint32_t prepare_frame(uint8_t out[SL_HEADER_SIZE], uint8_t from, const char *cluster)
{
    sl_vsr_frame_t f;
    memset(&f, 0, sizeof(f));
    f.h.command = SL_VSR_PREPARE;
    f.h.cluster = cluster_id(cluster);
    f.h.replica = from;
    f.u.prepare = (sl_vsr_prepare_t){.client = {1, 2},
                                     .op = 1,
                                     .timestamp = 1,
                                     .request = 1,
                                     .operation = SL_OP_CREATE_STREAM,
                                     .group = SL_VSR_GROUP_METADATA};
    sl_vsr_header_encode(out, &f, sl_span(NULL, 0));
    return SL_HEADER_SIZE;
}

static void test_links_and_frames(void **state)
{
    (void)state;
    cluster_t cl;
    cluster_start(&cl, NULL, NULL);
    wait_all_up(&cl);
    sl_rbus_stats_t s;
    sl_rbus_stats(cl.bus[1], &s);
    assert_int_equal(s.links_up, 2);
    assert_int_equal(s.links_established, 2);
    assert_int_equal(cl.got[1].ups, 2);
    /* Frames both ways, decoded, with their sender. */
    uint8_t frame[SL_HEADER_SIZE];
    commit_frame(frame, 0, 41, "test-cluster");
    assert_int_equal(sl_rbus_send(cl.bus[0], 2, frame, SL_HEADER_SIZE), 0);
    commit_frame(frame, 2, 42, "test-cluster");
    assert_int_equal(sl_rbus_send(cl.bus[2], 0, frame, SL_HEADER_SIZE), 0);
    for (int t = 0; t < TURNS_MAX && (cl.got[2].frames < 1 || cl.got[0].frames < 1); t++)
        turn(&cl);
    assert_int_equal(cl.got[2].frames, 1);
    assert_int_equal(cl.got[2].last_peer, 0);
    assert_int_equal(cl.got[2].last_commit, 41);
    assert_int_equal(cl.got[0].frames, 1);
    assert_int_equal(cl.got[0].last_peer, 2);
    assert_int_equal(cl.got[0].last_commit, 42);
    /* Sends that cannot go: to itself, too short, to nobody. */
    assert_int_equal(sl_rbus_send(cl.bus[0], 0, frame, SL_HEADER_SIZE), -EINVAL);
    assert_int_equal(sl_rbus_send(cl.bus[0], 1, frame, 10), -EINVAL);
    assert_int_equal(sl_rbus_send(cl.bus[0], 3, frame, SL_HEADER_SIZE), -EINVAL);
    cluster_stop(&cl);
}

/* A prepare with a body, sent from a buffer the bus takes, arrives whole;
 * the receiver takes the buffer it was read into and keeps it past the
 * callback (the plane hands it to the loop so, without a copy). A
 * header-only frame has no buffer to take, and outside on_frame there is
 * nothing to take. Errors free what they were given (ASan checks). */
static void test_frames_by_pointer(void **state)
{
    (void)state;
    cluster_t cl;
    cluster_start(&cl, NULL, NULL);
    wait_all_up(&cl);
    cl.got[1].take_from = cl.bus[1];
    enum { BODY = 100000 };
    uint8_t *body = malloc(BODY);
    assert_non_null(body);
    for (uint32_t i = 0; i < BODY; i++)
        body[i] = (uint8_t)(i * 7u);
    uint8_t head[SL_HEADER_SIZE];
    prepare_frame(head, 0, "test-cluster");
    sl_vsr_frame_t f;
    assert_int_equal(sl_vsr_frame_decode(head, SL_HEADER_SIZE, 1u << 20, &f), SL_VSR_OK);
    uint32_t len = SL_HEADER_SIZE + BODY;
    uint8_t *frame = sl_rbus_frame_alloc(len);
    assert_non_null(frame);
    sl_vsr_header_encode(frame, &f, sl_span(body, BODY));
    memcpy(frame + SL_HEADER_SIZE, body, BODY);
    uint8_t *expect = malloc(len);
    assert_non_null(expect);
    memcpy(expect, frame, len);
    assert_int_equal(sl_rbus_send_owned(cl.bus[0], 1, frame, len), 0);
    uint8_t commit[SL_HEADER_SIZE];
    commit_frame(commit, 0, 7, "test-cluster");
    assert_int_equal(sl_rbus_send(cl.bus[0], 1, commit, SL_HEADER_SIZE), 0);
    for (int t = 0; t < TURNS_MAX && cl.got[1].frames < 2; t++)
        turn(&cl);
    assert_int_equal(cl.got[1].frames, 2);
    assert_int_equal(cl.got[1].taken_none, 1); /* the Commit */
    assert_int_equal(cl.got[1].taken_len, len);
    assert_memory_equal(cl.got[1].taken, expect, len);
    assert_null(sl_rbus_take_frame(cl.bus[1]));
    /* Owned frames that cannot go are freed: to itself, too short, to nobody. */
    uint8_t *bad = sl_rbus_frame_alloc(SL_HEADER_SIZE);
    assert_non_null(bad);
    assert_int_equal(sl_rbus_send_owned(cl.bus[0], 0, bad, SL_HEADER_SIZE), -EINVAL);
    bad = sl_rbus_frame_alloc(SL_HEADER_SIZE);
    assert_non_null(bad);
    assert_int_equal(sl_rbus_send_owned(cl.bus[0], 1, bad, 10), -EINVAL);
    bad = sl_rbus_frame_alloc(SL_HEADER_SIZE);
    assert_non_null(bad);
    assert_int_equal(sl_rbus_send_owned(cl.bus[0], 3, bad, SL_HEADER_SIZE), -EINVAL);
    /* Relayed by reference (a backup's prepare down the chain): replica 1
     * queues the buffer it received for replica 2 and drops its own
     * reference at once; the bytes stay until the bus has sent them. */
    sl_rbus_frame_ref(cl.got[1].taken);
    assert_int_equal(sl_rbus_send_owned(cl.bus[1], 2, cl.got[1].taken, len), 0);
    sl_rbus_frame_release(cl.got[1].taken);
    cl.got[1].taken = NULL;
    cl.got[2].take_from = cl.bus[2];
    for (int t = 0; t < TURNS_MAX && cl.got[2].frames < 1; t++)
        turn(&cl);
    assert_int_equal(cl.got[2].frames, 1);
    assert_int_equal(cl.got[2].taken_len, len);
    assert_memory_equal(cl.got[2].taken, expect, len);
    sl_rbus_frame_release(cl.got[2].taken);
    free(expect);
    free(body);
    cluster_stop(&cl);
}

static void test_auth_links(void **state)
{
    (void)state;
    const char *const secrets[NODES] = {secret_a, secret_a, secret_a};
    cluster_t cl;
    cluster_start(&cl, secrets, NULL);
    wait_all_up(&cl);
    uint8_t frame[SL_HEADER_SIZE];
    commit_frame(frame, 1, 7, "test-cluster");
    assert_int_equal(sl_rbus_send(cl.bus[1], 0, frame, SL_HEADER_SIZE), 0);
    for (int t = 0; t < TURNS_MAX && cl.got[0].frames < 1; t++)
        turn(&cl);
    assert_int_equal(cl.got[0].last_commit, 7);
    cluster_stop(&cl);
}

/* A rotation's middle roll: node 0 signs with the new secret and still
 * accepts the old, the others have not rolled yet (old, accepting new). */
static void test_secret_rotation(void **state)
{
    (void)state;
    const char *const secrets[NODES] = {secret_b, secret_a, secret_a};
    const char *const previous[NODES] = {secret_a, secret_b, secret_b};
    cluster_t cl;
    cluster_start(&cl, secrets, previous);
    wait_all_up(&cl);
    cluster_stop(&cl);
}

/* Node 2 has another secret. 0 and 1 dial it and find that its Challenge's
 * MAC does not verify: they refuse (and hang up before sending a Finish),
 * while the 0-1 link is fine. */
static void test_wrong_secret_refused(void **state)
{
    (void)state;
    const char *const secrets[NODES] = {secret_a, secret_a, secret_b};
    cluster_t cl;
    cluster_start(&cl, secrets, NULL);
    sl_rbus_stats_t s0, s1;
    for (int t = 0; t < TURNS_MAX; t++) {
        turn(&cl);
        sl_rbus_stats(cl.bus[0], &s0);
        sl_rbus_stats(cl.bus[1], &s1);
        if (sl_rbus_link_up(cl.bus[0], 1) && s0.refused >= 2 && s1.refused >= 2)
            break;
    }
    assert_true(sl_rbus_link_up(cl.bus[0], 1));
    assert_true(s0.refused >= 2 && s1.refused >= 2); /* redialed after a backoff, refused again */
    assert_false(sl_rbus_link_up(cl.bus[0], 2));
    assert_false(sl_rbus_link_up(cl.bus[2], 0));
    assert_false(sl_rbus_link_up(cl.bus[2], 1));
    assert_int_equal(cl.got[2].ups, 0);
    cluster_stop(&cl);
}

/* --- a raw socket playing replica 0 against bus 1 ------------------------------------- */

static int raw_connect(uint16_t port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    return fd;
}

/* Turns bus until fd sees EOF (true) or bytes (false, the bytes stay). */
static bool closed_by_bus(sl_rbus_t *bus, int fd, uint8_t *got, size_t cap, size_t *got_len)
{
    *got_len = 0;
    for (int t = 0; t < TURNS_MAX; t++) {
        sl_rbus_poll(bus, 1);
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 0) != 1)
            continue;
        ssize_t n = recv(fd, got + *got_len, cap - *got_len, MSG_DONTWAIT);
        if (n <= 0)
            return true;
        *got_len += (size_t)n;
    }
    return false;
}

static sl_rbus_t *lone_bus(received_t *r, bool auth)
{
    sl_rbus_config_t c;
    bus_config(&c, 1, auth ? secret_a : NULL, NULL, r);
    c.queue_max = 4;
    c.frame_max = 1u << 20;
    sl_rbus_t *bus;
    assert_int_equal(sl_rbus_create(&c, &bus), 0);
    return bus;
}

/* A replica port still held for a moment when the bus starts (a node
 * restarted right after a kill -9, its old socket not yet released): the
 * bus waits for it instead of failing with EADDRINUSE. A child process
 * holds the listening socket for 200 ms. */
static void test_listen_waits_for_port(void **state)
{
    (void)state;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(sa);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, len), 0);
    assert_int_equal(listen(fd, 1), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        struct timespec hold = {0, 200 * 1000000L};
        nanosleep(&hold, NULL);
        _exit(0);
    }
    close(fd); /* the child's copy holds the port */
    received_t r = {0};
    sl_rbus_config_t c;
    bus_config(&c, 1, NULL, NULL, &r);
    c.listen.port = ntohs(sa.sin_port);
    sl_rbus_t *bus;
    assert_int_equal(sl_rbus_create(&c, &bus), 0);
    int status;
    assert_int_equal(waitpid(child, &status, 0), child);
    sl_rbus_destroy(bus);
}

static void hello(uint8_t out[SL_HEADER_SIZE], const char *cluster, uint8_t from)
{
    uint8_t nonce[SL_VSR_NONCE_LEN];
    memset(nonce, 0x5a, sizeof(nonce));
    sl_vsr_handshake_encode(out, SL_VSR_REPLICA_HELLO, cluster_id(cluster), from, nonce, NULL, 0);
}

static void test_hostile_input(void **state)
{
    (void)state;
    received_t r = {0};
    sl_rbus_t *bus = lone_bus(&r, false);
    uint16_t port = sl_rbus_port(bus);
    uint8_t frame[SL_HEADER_SIZE], got[1024];
    size_t got_len;

    /* A first frame that declares a body: closed before anything is read. */
    int fd = raw_connect(port);
    memset(frame, 0, sizeof(frame));
    sl_store_u32(frame + 48, 1u << 20);
    assert_int_equal(send(fd, frame, sizeof(frame), 0), (ssize_t)sizeof(frame));
    assert_true(closed_by_bus(bus, fd, got, sizeof(got), &got_len));
    assert_int_equal(got_len, 0);
    close(fd);

    /* Another cluster's Hello with a nonce: a Challenge with status 2, then closed. */
    fd = raw_connect(port);
    hello(frame, "other-cluster", 0);
    assert_int_equal(send(fd, frame, sizeof(frame), 0), (ssize_t)sizeof(frame));
    assert_true(closed_by_bus(bus, fd, got, sizeof(got), &got_len));
    assert_int_equal(got_len, SL_HEADER_SIZE);
    assert_int_equal(got[60], SL_VSR_REPLICA_CHALLENGE);
    assert_int_equal(got[192], SL_VSR_HELLO_CLUSTER_MISMATCH);
    close(fd);

    /* Replica 2 may not dial replica 1 (directional rule). */
    fd = raw_connect(port);
    hello(frame, "test-cluster", 2);
    assert_int_equal(send(fd, frame, sizeof(frame), 0), (ssize_t)sizeof(frame));
    assert_true(closed_by_bus(bus, fd, got, sizeof(got), &got_len));
    assert_int_equal(got[192], SL_VSR_HELLO_DIRECTIONAL_RULE);
    close(fd);

    /* An accepted link, then a Commit whose seal is broken: closed. */
    fd = raw_connect(port);
    hello(frame, "test-cluster", 0);
    assert_int_equal(send(fd, frame, sizeof(frame), 0), (ssize_t)sizeof(frame));
    for (int t = 0; t < TURNS_MAX && !sl_rbus_link_up(bus, 0); t++)
        sl_rbus_poll(bus, 1);
    assert_true(sl_rbus_link_up(bus, 0));
    commit_frame(frame, 0, 5, "test-cluster");
    assert_int_equal(send(fd, frame, sizeof(frame), 0), (ssize_t)sizeof(frame));
    commit_frame(frame, 0, 6, "test-cluster");
    frame[152] ^= 1; /* the commit field, after sealing */
    assert_int_equal(send(fd, frame, sizeof(frame), 0), (ssize_t)sizeof(frame));
    assert_true(closed_by_bus(bus, fd, got, sizeof(got), &got_len));
    close(fd);
    assert_int_equal(r.frames, 1); /* the good one only */
    assert_int_equal(r.last_commit, 5);
    assert_false(sl_rbus_link_up(bus, 0));

    /* A well-sealed frame that claims another sender: closed. */
    fd = raw_connect(port);
    hello(frame, "test-cluster", 0);
    assert_int_equal(send(fd, frame, sizeof(frame), 0), (ssize_t)sizeof(frame));
    for (int t = 0; t < TURNS_MAX && !sl_rbus_link_up(bus, 0); t++)
        sl_rbus_poll(bus, 1);
    /* ... but a prepare names its primary, not the neighbour relaying it. */
    prepare_frame(frame, 2, "test-cluster");
    assert_int_equal(send(fd, frame, sizeof(frame), 0), (ssize_t)sizeof(frame));
    for (int t = 0; t < TURNS_MAX && r.frames < 2; t++)
        sl_rbus_poll(bus, 1);
    assert_int_equal(r.frames, 2);
    assert_true(sl_rbus_link_up(bus, 0));
    commit_frame(frame, 2, 9, "test-cluster");
    assert_int_equal(send(fd, frame, sizeof(frame), 0), (ssize_t)sizeof(frame));
    assert_true(closed_by_bus(bus, fd, got, sizeof(got), &got_len));
    close(fd);

    sl_rbus_stats_t s;
    sl_rbus_stats(bus, &s);
    assert_int_equal(s.links_established, 2);
    assert_int_equal(s.links_lost, 2);
    assert_int_equal(s.refused, 2);
    assert_int_equal(s.bad_frames, 3);
    assert_int_equal(r.frames, 2);
    sl_rbus_destroy(bus);
}

/* A peer that reconnects while its old link still looks up (it restarted):
 * the new link replaces the old one, which is closed. */
static void test_link_replaced(void **state)
{
    (void)state;
    received_t r = {0};
    sl_rbus_t *bus = lone_bus(&r, false);
    uint8_t frame[SL_HEADER_SIZE], got[1024];
    size_t got_len;
    int old_fd = raw_connect(sl_rbus_port(bus));
    hello(frame, "test-cluster", 0);
    assert_int_equal(send(old_fd, frame, sizeof(frame), 0), (ssize_t)sizeof(frame));
    for (int t = 0; t < TURNS_MAX && !sl_rbus_link_up(bus, 0); t++)
        sl_rbus_poll(bus, 1);
    assert_true(sl_rbus_link_up(bus, 0));
    int new_fd = raw_connect(sl_rbus_port(bus));
    assert_int_equal(send(new_fd, frame, sizeof(frame), 0), (ssize_t)sizeof(frame));
    /* The old link also has a frame waiting when the new one comes up. */
    commit_frame(frame, 0, 3, "test-cluster");
    assert_int_equal(send(old_fd, frame, sizeof(frame), 0), (ssize_t)sizeof(frame));
    assert_true(closed_by_bus(bus, old_fd, got, sizeof(got), &got_len));
    assert_true(sl_rbus_link_up(bus, 0));
    commit_frame(frame, 0, 4, "test-cluster");
    assert_int_equal(send(new_fd, frame, sizeof(frame), 0), (ssize_t)sizeof(frame));
    for (int t = 0; t < TURNS_MAX && r.last_commit != 4; t++)
        sl_rbus_poll(bus, 1);
    assert_int_equal(r.last_commit, 4);
    sl_rbus_stats_t s;
    sl_rbus_stats(bus, &s);
    assert_int_equal(s.links_established, 2);
    assert_int_equal(s.links_lost, 1);
    assert_int_equal(s.links_up, 1);
    assert_int_equal(r.ups, 2);
    assert_int_equal(r.downs, 1);
    close(old_fd);
    close(new_fd);
    sl_rbus_destroy(bus);
}

/* Mutated handshakes and frames from a raw peer, deterministic (a fixed
 * seed): the bus never crashes (ASan watches the reads), never delivers a
 * frame the codec refuses, and still accepts a good peer afterwards. */
static void test_mutations(void **state)
{
    (void)state;
    received_t r = {0};
    sl_rbus_t *bus = lone_bus(&r, false);
    uint16_t port = sl_rbus_port(bus);
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    for (int round = 0; round < 200; round++) {
        uint8_t frames[2][SL_HEADER_SIZE];
        hello(frames[0], "test-cluster", 0);
        commit_frame(frames[1], 0, (uint64_t)round, "test-cluster");
        for (int k = 0; k < 1 + round % 4; k++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            uint32_t at = (uint32_t)(seed >> 33) % (2 * SL_HEADER_SIZE);
            frames[at / SL_HEADER_SIZE][at % SL_HEADER_SIZE] ^= (uint8_t)(1u << ((seed >> 20) & 7));
        }
        int fd = raw_connect(port);
        assert_int_equal(send(fd, frames, sizeof(frames), MSG_NOSIGNAL), (ssize_t)sizeof(frames));
        for (int t = 0; t < 20; t++)
            sl_rbus_poll(bus, 0);
        close(fd);
        for (int t = 0; t < 5; t++)
            sl_rbus_poll(bus, 0);
    }
    /* Every frame delivered was a Commit the codec accepted, unchanged. */
    assert_true(r.frames <= 200);
    if (r.frames)
        assert_int_equal(r.last_command, SL_VSR_COMMIT);
    sl_rbus_stats_t s;
    sl_rbus_stats(bus, &s);
    assert_true(s.refused + s.bad_frames > 0);
    /* A good peer still gets its link. */
    uint8_t frame[SL_HEADER_SIZE];
    int fd = raw_connect(port);
    hello(frame, "test-cluster", 0);
    assert_int_equal(send(fd, frame, sizeof(frame), 0), (ssize_t)sizeof(frame));
    for (int t = 0; t < TURNS_MAX && !sl_rbus_link_up(bus, 0); t++)
        sl_rbus_poll(bus, 1);
    assert_true(sl_rbus_link_up(bus, 0));
    close(fd);
    sl_rbus_destroy(bus);
}

/* With auth on, a dialer that cannot produce the MAC gets no link. */
static void test_auth_bad_finish(void **state)
{
    (void)state;
    received_t r = {0};
    sl_rbus_t *bus = lone_bus(&r, true);
    int fd = raw_connect(sl_rbus_port(bus));
    uint8_t frame[SL_HEADER_SIZE], got[1024];
    size_t got_len = 0;
    hello(frame, "test-cluster", 0);
    assert_int_equal(send(fd, frame, sizeof(frame), 0), (ssize_t)sizeof(frame));
    for (int t = 0; t < TURNS_MAX && got_len < SL_HEADER_SIZE; t++) {
        sl_rbus_poll(bus, 1);
        ssize_t n = recv(fd, got + got_len, sizeof(got) - got_len, MSG_DONTWAIT);
        if (n > 0)
            got_len += (size_t)n;
    }
    assert_int_equal(got_len, SL_HEADER_SIZE);
    assert_int_equal(got[60], SL_VSR_REPLICA_CHALLENGE);
    assert_int_equal(got[192], SL_VSR_HELLO_OK);
    uint8_t mac[SL_VSR_MAC_LEN];
    memset(mac, 0x11, sizeof(mac));
    sl_vsr_handshake_encode(frame, SL_VSR_REPLICA_FINISH, cluster_id("test-cluster"), 0, NULL, mac,
                            0);
    assert_int_equal(send(fd, frame, sizeof(frame), 0), (ssize_t)sizeof(frame));
    assert_true(closed_by_bus(bus, fd, got, sizeof(got), &got_len));
    assert_int_equal(got_len, 0); /* MacMismatch sends nothing */
    assert_false(sl_rbus_link_up(bus, 0));
    assert_int_equal(r.ups, 0);
    close(fd);
    sl_rbus_destroy(bus);
}

/* A peer that never reads: the queue fills to queue_max, then sends drop. */
static void test_queue_bound(void **state)
{
    (void)state;
    received_t r = {0};
    sl_rbus_t *bus = lone_bus(&r, false);
    int fd = raw_connect(sl_rbus_port(bus));
    uint8_t frame[SL_HEADER_SIZE];
    hello(frame, "test-cluster", 0);
    assert_int_equal(send(fd, frame, sizeof(frame), 0), (ssize_t)sizeof(frame));
    for (int t = 0; t < TURNS_MAX && !sl_rbus_link_up(bus, 0); t++)
        sl_rbus_poll(bus, 1);
    assert_true(sl_rbus_link_up(bus, 0));
    uint32_t big = 1u << 20;
    uint8_t *payload = calloc(1, big);
    assert_non_null(payload);
    int rc = 0;
    uint32_t sent = 0;
    /* The kernel's buffers take some megabytes first; 1000 MiB is far more. */
    for (; sent < 1000 && rc == 0; sent++)
        rc = sl_rbus_send(bus, 0, payload, big);
    assert_int_equal(rc, -ENOBUFS);
    sl_rbus_stats_t s;
    sl_rbus_stats(bus, &s);
    assert_int_equal(s.dropped, 1);
    free(payload);
    close(fd);
    sl_rbus_destroy(bus);
}

/* Node 2 goes away and comes back on the same port: 0 and 1 redial it. */
static void test_redial(void **state)
{
    (void)state;
    cluster_t cl;
    cluster_start(&cl, NULL, NULL);
    wait_all_up(&cl);
    uint16_t port2 = sl_rbus_port(cl.bus[2]);
    sl_rbus_destroy(cl.bus[2]);
    cl.bus[2] = NULL;
    for (int t = 0;
         t < TURNS_MAX && (sl_rbus_link_up(cl.bus[0], 2) || sl_rbus_link_up(cl.bus[1], 2)); t++)
        turn(&cl);
    assert_false(sl_rbus_link_up(cl.bus[0], 2));
    assert_int_equal(cl.got[0].downs, 1);
    /* A few failed dials while it is away. */
    for (int t = 0; t < 40; t++)
        turn(&cl);
    sl_rbus_config_t c;
    bus_config(&c, 2, NULL, NULL, &cl.got[2]);
    c.listen.port = port2;
    assert_int_equal(sl_rbus_create(&c, &cl.bus[2]), 0);
    wire_peers(&cl);
    wait_all_up(&cl);
    sl_rbus_stats_t s;
    sl_rbus_stats(cl.bus[0], &s);
    assert_int_equal(s.links_established, 3);
    assert_true(s.dials >= 3);
    cluster_stop(&cl);
}

/* Backpressure (replica_bus.h, room): while the receiver has no room its
 * links are not read, the frames wait in the socket, none is dropped;
 * given room for 3 it gets exactly 3, then the rest in order. */
static void test_room_holds_reading(void **state)
{
    (void)state;
    cluster_t cl;
    cluster_start(&cl, NULL, NULL);
    wait_all_up(&cl);
    cl.got[2].limit = true;
    cl.got[2].room = 0;
    uint8_t frame[SL_HEADER_SIZE];
    for (uint64_t i = 1; i <= 10; i++) {
        commit_frame(frame, 0, i, "test-cluster");
        assert_int_equal(sl_rbus_send(cl.bus[0], 2, frame, SL_HEADER_SIZE), 0);
    }
    for (int t = 0; t < 50; t++)
        turn(&cl);
    assert_int_equal(cl.got[2].frames, 0);
    sl_rbus_stats_t s;
    sl_rbus_stats(cl.bus[2], &s);
    assert_true(s.paused > 0);
    cl.got[2].room = 3;
    for (int t = 0; t < TURNS_MAX && cl.got[2].frames < 3; t++)
        turn(&cl);
    for (int t = 0; t < 50; t++)
        turn(&cl);
    assert_int_equal(cl.got[2].frames, 3);
    assert_int_equal(cl.got[2].last_commit, 3);
    cl.got[2].limit = false;
    for (int t = 0; t < TURNS_MAX && cl.got[2].frames < 10; t++)
        turn(&cl);
    assert_int_equal(cl.got[2].frames, 10);
    assert_int_equal(cl.got[2].last_commit, 10);
    sl_rbus_stats(cl.bus[0], &s);
    assert_int_equal(s.dropped, 0);
    assert_true(sl_rbus_link_up(cl.bus[2], 0));
    cluster_stop(&cl);
}

int main(void)
{
    sl_log_set_level(SL_LOG_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_links_and_frames),  cmocka_unit_test(test_auth_links),
        cmocka_unit_test(test_secret_rotation),   cmocka_unit_test(test_wrong_secret_refused),
        cmocka_unit_test(test_hostile_input),     cmocka_unit_test(test_link_replaced),
        cmocka_unit_test(test_mutations),         cmocka_unit_test(test_auth_bad_finish),
        cmocka_unit_test(test_queue_bound),       cmocka_unit_test(test_redial),
        cmocka_unit_test(test_frames_by_pointer), cmocka_unit_test(test_room_holds_reading),
        cmocka_unit_test(test_listen_waits_for_port),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
