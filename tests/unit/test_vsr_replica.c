/* src/vsr/replica: a cluster of three in one process over a lossless FIFO
 * network and an in-memory disk whose writes complete on the next step.
 * Normal operation (commit at a quorum, one reply, every replica applies in
 * order), the client table's answers (cached reply, a retry after a rebind,
 * TransientNotAccepted from a backup), failover (the primary stops, a view
 * change elects the next, a committed request retried there is answered
 * from the table, not executed again), and a restart that catches up. The
 * simulator (tests/sim) covers the faults; this pins the basic behaviour. */
#include "testutil.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "vsr/client_table.h"
#include "vsr/handshake.h"
#include "vsr/replica.h"
#include "wire/header.h"

#define N         3
#define SLOTS     64
#define QUEUE_MAX 4096

typedef struct msg {
    int to; /* replica, or -1 for the client */
    uint32_t len;
    uint8_t *data;
} msg_t;

typedef struct disk {
    uint8_t *slot[SLOTS];
    uint32_t slot_len[SLOTS];
    bool pending[SLOTS];
    uint8_t *state;
    size_t state_len;
    uint64_t art_op;
    uint8_t *art[2];
    size_t art_len[2];
    uint64_t reads; /* read_prepare calls */
} disk_t;

typedef struct node {
    int id;
    sl_vsr_replica_t *r;
    disk_t disk;
    uint64_t applied[256]; /* op -> request applied */
    uint64_t last_op;
    uint64_t counter; /* the machine: a sum */
    /* the plane machine (plane_hooks): a byte log whose batches carry their
     * base offset; end is the applied log's length */
    uint64_t end;
    bool refuse;       /* its accept hook says no */
    uint64_t accepted; /* accept calls that said yes */
} node_t;

static node_t nodes[N];
static bool up[N];
static bool deaf[N]; /* frames to it are lost (the client still hears it) */
static msg_t queue[QUEUE_MAX];
static size_t q_head, q_tail;
/* the client's view of its last reply */
static sl_reply_header_t last_reply;
static uint8_t last_body[64];
static uint32_t last_body_len;
static int replies, evictions;

static void push(int to, const uint8_t *data, uint32_t len)
{
    sl_assert(q_tail - q_head < QUEUE_MAX);
    msg_t *m = &queue[q_tail++ % QUEUE_MAX];
    m->to = to;
    m->len = len;
    m->data = malloc(len);
    memcpy(m->data, data, len);
}

static uint64_t now;
static uint32_t commit_residues; /* bit t: a Commit was sent on a tick = t (mod 2) */

/* For each PrepareOk a node sent (its op < 256): the last op the node's
 * machine had applied when it sent it, plus one (0: none sent). */
static uint64_t ok_applied[3][256];

/* Set while step() hands completed journal writes to a replica; prepares a
 * backup relayed then, and at other times (test_relay_order). */
static bool in_write_done;
static int relayed_after_write, relayed_before_write, repair_requests;

static void bus_send(void *ctx, uint8_t replica, const uint8_t *frame, uint32_t size)
{
    const node_t *n = ctx;
    if (frame[60] == SL_VSR_PREPARE && n->r != NULL) {
        sl_vsr_info_t info;
        sl_vsr_replica_info(n->r, &info);
        if (!info.primary)
            *(in_write_done ? &relayed_after_write : &relayed_before_write) += 1;
    }
    if (frame[60] == SL_VSR_REQUEST_PREPARES)
        repair_requests++;
    if (frame[60] == SL_VSR_COMMIT)
        commit_residues |= 1u << (now % 2);
    sl_vsr_frame_t f;
    if (frame[60] == SL_VSR_PREPARE_OK &&
        sl_vsr_frame_decode(frame, size, SL_FRAME_MAX_DEFAULT, &f) == SL_VSR_OK &&
        f.u.prepare_ok.op < 256)
        ok_applied[n->id][f.u.prepare_ok.op] = n->last_op + 1;
    push(replica, frame, size);
}

static void bus_reply(void *ctx, sl_u128_t client, const uint8_t *frame, uint32_t size)
{
    (void)ctx;
    (void)client;
    push(-1, frame, size);
}

static void write_prepare(void *ctx, uint32_t slot, const uint8_t *frame, uint32_t size)
{
    disk_t *d = ctx;
    free(d->slot[slot]);
    d->slot[slot] = malloc(size);
    memcpy(d->slot[slot], frame, size);
    d->slot_len[slot] = size;
    d->pending[slot] = true;
}

static sl_span_t read_prepare(void *ctx, uint32_t slot)
{
    disk_t *d = ctx;
    d->reads++;
    return sl_span(d->slot[slot], d->slot_len[slot]);
}

static int write_state(void *ctx, sl_span_t rec)
{
    disk_t *d = ctx;
    free(d->state);
    d->state = malloc(rec.len);
    memcpy(d->state, rec.ptr, rec.len);
    d->state_len = rec.len;
    return 0;
}

static sl_span_t read_state(void *ctx)
{
    disk_t *d = ctx;
    return sl_span(d->state, d->state_len);
}

static int write_artifacts(void *ctx, uint64_t op, sl_span_t snap, sl_span_t table)
{
    disk_t *d = ctx;
    sl_span_t a[2] = {snap, table};
    for (int k = 0; k < 2; k++) {
        free(d->art[k]);
        d->art[k] = malloc(a[k].len ? a[k].len : 1);
        memcpy(d->art[k], a[k].ptr, a[k].len);
        d->art_len[k] = a[k].len;
    }
    d->art_op = op;
    return 0;
}

static sl_span_t read_artifact(void *ctx, uint64_t op, uint8_t kind)
{
    disk_t *d = ctx;
    if (op != d->art_op || kind > 1)
        return sl_span(NULL, 0);
    return sl_span(d->art[kind], d->art_len[kind]);
}

/* The plane tests' switches: a sessionless group, and the machine's
 * prepare / accept hooks (the counting machine below). */
static bool plane_sessionless, plane_hooks, plane_late_relay;
static uint64_t plane_group;   /* 0: the metadata group */
static uint32_t prepare_code;  /* what the prepare hook answers (0: builds) */
static int prepare_calls;      /* prepare hook calls */
static bool prepare_head_seen; /* the last call's head was a journaled body */

/* The counting machine's prepare: the batch [base u64][request body], base
 * the end of the log after op - 1 (head's end, or the applied end). */
static uint64_t head_end(const node_t *n, sl_span_t head)
{
    if (head.ptr == NULL)
        return n->end;
    assert_true(head.len >= 8);
    return sl_load_u64(head.ptr) + (head.len - 8);
}

static uint32_t plane_prepare(void *ctx, const sl_vsr_prepare_t *p, sl_span_t head, sl_span_t body,
                              sl_buf_t *out)
{
    node_t *n = ctx;
    prepare_calls++;
    prepare_head_seen = head.ptr != NULL;
    assert_true(p->op >= 1 && p->timestamp > 0);
    if (prepare_code != 0)
        return prepare_code;
    sl_put_u64(out, head_end(n, head));
    sl_put_span(out, body);
    return 0;
}

static bool plane_accept(void *ctx, const sl_vsr_prepare_t *p, sl_span_t head, sl_span_t body)
{
    node_t *n = ctx;
    (void)p;
    if (n->refuse || body.len < 8 || sl_load_u64(body.ptr) != head_end(n, head))
        return false;
    n->accepted++;
    return true;
}

/* The machine: adds the body's first byte; replies [count 0][sum u64]. With
 * the hooks, the body is a batch whose base must be the applied end. */
static void apply(void *ctx, const sl_vsr_prepare_t *p, sl_span_t body, sl_buf_t *reply)
{
    node_t *n = ctx;
    assert_int_equal(p->op, n->last_op + 1);
    n->last_op = p->op;
    if (p->op < 256)
        n->applied[p->op] = p->request;
    if (plane_hooks) {
        assert_true(body.len >= 8);
        assert_int_equal(sl_load_u64(body.ptr), n->end); /* contiguous offsets */
        n->end += body.len - 8;
        body = sl_span(body.ptr + 8, body.len - 8);
    }
    if (p->operation != SL_OP_REGISTER && body.len > 0)
        n->counter += body.ptr[0];
    sl_put_u32(reply, 0);
    sl_put_u64(reply, n->counter);
}

static void snapshot(void *ctx, sl_buf_t *out)
{
    node_t *n = ctx;
    sl_put_u64(out, n->last_op);
    sl_put_u64(out, n->counter);
    sl_put_u64(out, n->end);
}

static int restore(void *ctx, sl_span_t s)
{
    node_t *n = ctx;
    if (s.len != 24)
        return -1;
    n->last_op = sl_load_u64(s.ptr);
    n->counter = sl_load_u64(s.ptr + 8);
    n->end = sl_load_u64(s.ptr + 16);
    return 0;
}

static void reset(void *ctx)
{
    node_t *n = ctx;
    n->last_op = 0;
    n->counter = 0;
    n->end = 0;
}

/* The tests' resend period; test_chain_successor_down lengthens it. */
static uint32_t resend_ticks = 5;
static uint32_t commit_ticks = 2; /* the Commit heartbeat's interval */

static sl_vsr_config_t config(int id)
{
    sl_vsr_config_t c;
    sl_vsr_config_defaults(&c, (uint8_t)id, N);
    c.cluster = sl_vsr_cluster_id(sl_span_str("unit"));
    c.pipeline_max = 4;
    c.journal_slots = SLOTS;
    c.checkpoint_interval = 16;
    c.clients_max = 8;
    c.reply_max = 64;
    c.commit_interval_ticks = commit_ticks;
    c.heartbeat_timeout_ticks = 10 * commit_ticks;
    c.view_change_timeout_ticks = 20 * commit_ticks;
    c.resend_ticks = resend_ticks;
    c.nonce_seed = 1000 + (uint64_t)id;
    c.sessionless = plane_sessionless;
    c.late_relay = plane_late_relay;
    c.group = plane_group;
    return c;
}

static void open_node(int id)
{
    node_t *n = &nodes[id];
    sl_vsr_config_t c = config(id);
    sl_vsr_storage_t st = {.ctx = &n->disk,
                           .write_prepare = write_prepare,
                           .read_prepare = read_prepare,
                           .write_state = write_state,
                           .read_state = read_state,
                           .write_artifacts = write_artifacts,
                           .read_artifact = read_artifact};
    sl_vsr_bus_t bus = {.ctx = n, .send = bus_send, .reply = bus_reply};
    sl_vsr_machine_t m = {
        .ctx = n, .apply = apply, .snapshot = snapshot, .restore = restore, .reset = reset};
    if (plane_hooks) {
        m.prepare = plane_prepare;
        m.accept = plane_accept;
    }
    assert_int_equal(sl_vsr_replica_open(&c, &st, &bus, &m, &n->r), 0);
    up[id] = true;
}

static void crash(int id)
{
    sl_vsr_replica_close(nodes[id].r);
    nodes[id].r = NULL;
    up[id] = false;
    /* writes still pending complete: they were handed to the disk */
    memset(nodes[id].disk.pending, 0, sizeof(nodes[id].disk.pending));
}

static void deliver_client(const msg_t *m)
{
    if (m->data[60] == SL_COMMAND_EVICTION) {
        evictions++;
        return;
    }
    assert_int_equal(sl_reply_header_decode(m->data, 1u << 20, &last_reply), 0);
    last_body_len = m->len - SL_HEADER_SIZE;
    sl_assert(last_body_len <= sizeof(last_body));
    memcpy(last_body, m->data + SL_HEADER_SIZE, last_body_len);
    replies++;
}

/* One step: deliver everything queued, complete writes, tick everyone. */
static void step(void)
{
    size_t end = q_tail;
    while (q_head < end) {
        msg_t m = queue[q_head++ % QUEUE_MAX];
        if (m.to < 0)
            deliver_client(&m);
        else if (up[m.to] && !deaf[m.to])
            sl_vsr_replica_on_frame(nodes[m.to].r, m.data, m.len);
        free(m.data);
    }
    for (int i = 0; i < N; i++) {
        for (uint32_t s = 0; up[i] && s < SLOTS; s++) {
            if (nodes[i].disk.pending[s]) {
                nodes[i].disk.pending[s] = false;
                in_write_done = true;
                sl_vsr_replica_write_done(nodes[i].r, s, true);
                in_write_done = false;
            }
        }
    }
    now++;
    for (int i = 0; i < N; i++) {
        if (up[i])
            sl_vsr_replica_tick(nodes[i].r, now * 1000);
    }
}

static void steps(int n)
{
    for (int i = 0; i < n; i++)
        step();
}

static int primary(void)
{
    for (int i = 0; i < N; i++) {
        sl_vsr_info_t info;
        if (up[i]) {
            sl_vsr_replica_info(nodes[i].r, &info);
            if (info.primary)
                return i;
        }
    }
    return -1;
}

static const sl_u128_t client = {77, 1};
static uint64_t session;

/* Hands a request of client `who` to replica `to` (no steps). */
static void submit(sl_u128_t who, int to, uint8_t operation, uint64_t number, uint8_t value)
{
    uint8_t body[1] = {value};
    sl_vsr_request_t req = {.client = who,
                            .session = operation == SL_OP_REGISTER ? 0 : session,
                            .request = number,
                            .request_checksum = sl_request_checksum(sl_span(body, 1)),
                            .operation = operation,
                            .user_id = 1,
                            .body = sl_span(body, 1)};
    sl_vsr_replica_request(nodes[to].r, &req);
}

/* Sends a request straight to replica `to` and runs until a reply (or 200 steps). */
static void request(int to, uint8_t operation, uint64_t number, uint8_t value)
{
    int before = replies;
    submit(client, to, operation, number, value);
    for (int i = 0; i < 200 && replies == before; i++)
        step();
    assert_int_equal(replies, before + 1);
}

static uint32_t result(void)
{
    assert_true(last_body_len >= 4);
    return sl_load_u32(last_body) == 0 ? 0 : sl_load_u32(last_body + 8);
}

static void cluster_up(void)
{
    memset(nodes, 0, sizeof(nodes));
    memset(deaf, 0, sizeof(deaf));
    q_head = q_tail = 0;
    now = 0;
    replies = evictions = 0;
    for (int i = 0; i < N; i++) {
        nodes[i].id = i;
        sl_vsr_config_t c = config(i);
        sl_vsr_storage_t st = {.ctx = &nodes[i].disk,
                               .write_prepare = write_prepare,
                               .read_prepare = read_prepare,
                               .write_state = write_state,
                               .read_state = read_state,
                               .write_artifacts = write_artifacts,
                               .read_artifact = read_artifact};
        assert_int_equal(sl_vsr_replica_format(&c, &st), 0);
        open_node(i);
    }
    steps(60);
    assert_true(primary() >= 0);
}

static void cluster_down(void)
{
    for (int i = 0; i < N; i++) {
        if (up[i])
            sl_vsr_replica_close(nodes[i].r);
        disk_t *d = &nodes[i].disk;
        for (int s = 0; s < SLOTS; s++)
            free(d->slot[s]);
        free(d->state);
        free(d->art[0]);
        free(d->art[1]);
    }
    while (q_head < q_tail)
        free(queue[q_head++ % QUEUE_MAX].data);
}

static void test_commit_and_client_table(void **state)
{
    (void)state;
    cluster_up();
    int p = primary();
    request(p, SL_OP_REGISTER, 0, 0);
    assert_int_equal(result(), 0);
    session = last_reply.op; /* the Register's op is the session */
    request(p, SL_OP_CREATE_STREAM, 1, 5);
    assert_int_equal(result(), 0);
    uint64_t op1 = last_reply.op;
    assert_int_equal(sl_load_u64(last_body + 4), 5);
    /* A backup answers TransientNotAccepted: nothing is applied. */
    int backup = (p + 1) % N;
    request(backup, SL_OP_CREATE_STREAM, 2, 7);
    assert_int_equal(result(), 58);
    /* The same number again: the cached reply, byte for byte, no new op. */
    request(p, SL_OP_CREATE_STREAM, 1, 5);
    assert_int_equal(result(), 0);
    assert_int_equal(last_reply.op, op1);
    assert_int_equal(sl_load_u64(last_body + 4), 5);
    /* After a rebind (a second Register of the id) the retry still finds
     * its reply (regression: the Register's stamp replaced the watermark's,
     * and the retry was dropped as a reused number). */
    request(p, SL_OP_REGISTER, 0, 0);
    session = last_reply.op;
    request(p, SL_OP_CREATE_STREAM, 1, 5);
    assert_int_equal(result(), 0);
    assert_int_equal(last_reply.op, op1);
    /* An older session is fenced. */
    uint64_t current = session;
    session = current - 1;
    int ev = evictions;
    uint8_t body[1] = {9};
    sl_vsr_request_t stale = {.client = client,
                              .session = session,
                              .request = 2,
                              .operation = SL_OP_CREATE_STREAM,
                              .user_id = 1,
                              .body = sl_span(body, 1)};
    sl_vsr_replica_request(nodes[p].r, &stale);
    steps(2);
    assert_int_equal(evictions, ev + 1);
    session = current;
    steps(20);
    /* Every replica applied the same ops in order. */
    for (int i = 0; i < N; i++) {
        assert_int_equal(nodes[i].counter, 5);
        assert_int_equal(nodes[i].applied[op1], 1);
    }
    cluster_down();
}

/* An internal operation of the host (client 0: the root user of a fresh
 * cluster) needs no session: it commits everywhere, and nobody gets a reply
 * or an eviction. */
static void test_internal_operation(void **state)
{
    (void)state;
    cluster_up();
    int p = primary();
    uint8_t body[1] = {3};
    sl_vsr_request_t req = {.operation = SL_OP_CREATE_USER, .body = sl_span(body, 1)};
    sl_vsr_replica_request(nodes[p].r, &req);
    steps(40);
    assert_int_equal(replies, 0);
    assert_int_equal(evictions, 0);
    for (int i = 0; i < N; i++)
        assert_int_equal(nodes[i].counter, 3);
    cluster_down();
}

static void test_failover_and_restart(void **state)
{
    (void)state;
    cluster_up();
    int p = primary();
    request(p, SL_OP_REGISTER, 0, 0);
    session = last_reply.op;
    for (uint8_t k = 1; k <= 20; k++) {
        request(primary(), SL_OP_CREATE_STREAM, k, k);
        assert_int_equal(result(), 0);
    }
    uint64_t op20 = last_reply.op;
    /* The primary stops; the others change view and elect the next. */
    crash(p);
    steps(150);
    int q = primary();
    assert_true(q >= 0 && q != p);
    /* Request 20 committed before the failover: answered from the table. */
    request(q, SL_OP_CREATE_STREAM, 20, 20);
    assert_int_equal(result(), 0);
    assert_int_equal(last_reply.op, op20);
    request(q, SL_OP_CREATE_STREAM, 21, 21);
    assert_int_equal(result(), 0);
    /* The old primary restarts from its journal and checkpoint and catches up. */
    open_node(p);
    steps(200);
    sl_vsr_info_t a, b;
    sl_vsr_replica_info(nodes[p].r, &a);
    sl_vsr_replica_info(nodes[q].r, &b);
    assert_int_equal(a.status, SL_VSR_STATUS_NORMAL);
    assert_int_equal(a.view, b.view);
    assert_int_equal(a.commit_min, b.commit_min);
    assert_true(a.checkpoint_op >= 16);
    assert_int_equal(nodes[p].counter, nodes[q].counter);
    assert_int_equal(nodes[q].counter, 21u * 22u / 2u);
    cluster_down();
}

/* A journaled prepare's view stamp (bytes 52..56) is outside its identity;
 * the journal's own seal covers it. A stamp flipped at rest must make the
 * slot faulty: taken as a prepare of an older view, the op would drop out
 * of the replica's log, and the replica could nack in a view change an op
 * it acknowledged (regression: a committed op was lost that way in the
 * simulator). */
static void test_journal_view_stamp_sealed(void **state)
{
    (void)state;
    cluster_up();
    int p = primary();
    request(p, SL_OP_REGISTER, 0, 0);
    session = last_reply.op;
    for (uint8_t k = 1; k <= 5; k++)
        request(primary(), SL_OP_CREATE_STREAM, k, k);
    steps(10);
    int b = (p + 1) % N;
    sl_vsr_info_t info;
    sl_vsr_replica_info(nodes[b].r, &info);
    uint64_t op = info.op;
    crash(b);
    nodes[b].disk.slot[op % SLOTS][52] ^= 0x40;
    open_node(b);
    sl_vsr_entry_info_t e;
    sl_vsr_replica_entry(nodes[b].r, op, &e);
    assert_int_equal(e.slot, 2); /* faulty */
    sl_vsr_replica_info(nodes[b].r, &info);
    assert_int_equal(info.status, SL_VSR_STATUS_RECOVERING);
    /* It rejoins through a StartView and repairs the slot. */
    steps(200);
    sl_vsr_replica_info(nodes[b].r, &info);
    assert_int_equal(info.status, SL_VSR_STATUS_NORMAL);
    sl_vsr_replica_entry(nodes[b].r, op, &e);
    assert_true(e.present);
    assert_int_equal(nodes[b].counter, 15);
    cluster_down();
}

/* With the primary's chain successor down, a prepare reaches the other
 * backup only by a resend until the primary sends new prepares straight to
 * it (regression, issue 12: each sequential request waited a whole resend
 * period). Ticks are simulated: the bound is deterministic. */
static void test_chain_successor_down(void **state)
{
    (void)state;
    resend_ticks = 10; /* view_change_timeout (40) >= 2 resends; the pipeline moves within 20 */
    cluster_up();
    int p = primary();
    request(p, SL_OP_REGISTER, 0, 0);
    session = last_reply.op;
    int next = (p + 1) % N;
    crash(next);
    enum { REQUESTS = 40 };
    uint64_t start = now;
    for (uint8_t k = 1; k <= REQUESTS; k++) {
        request(p, SL_OP_CREATE_STREAM, k, 1);
        assert_int_equal(result(), 0);
    }
    uint64_t took = now - start;
    print_message("chain successor down: %d requests in %" PRIu64 " ticks (resend %u)\n", REQUESTS,
                  took, resend_ticks);
    /* A resend wait per request would be REQUESTS * resend_ticks or more. */
    assert_true(took < (uint64_t)REQUESTS * resend_ticks / 2);
    assert_int_equal(primary(), p); /* no view change took the group elsewhere */
    int other = (p + 2) % N;
    steps(10);
    assert_int_equal(nodes[other].counter, REQUESTS);
    assert_int_equal(nodes[p].counter, REQUESTS);
    /* The successor comes back and catches up. */
    open_node(next);
    steps(200);
    assert_int_equal(nodes[next].counter, REQUESTS);
    resend_ticks = 5;
    cluster_down();
}

/* --- the partition plane (issue 13): sessionless groups, prepare hooks -------------------- */

static void plane_up(bool sessionless, bool hooks)
{
    plane_sessionless = sessionless;
    plane_hooks = hooks;
    prepare_code = 0;
    prepare_calls = 0;
    session = 0;
    cluster_up();
}

static void plane_down(void)
{
    cluster_down();
    plane_sessionless = plane_hooks = false;
}

static sl_vsr_info_t info_of(int id)
{
    sl_vsr_info_t info;
    sl_vsr_replica_info(nodes[id].r, &info);
    return info;
}

/* The client table a node's checkpoint carries: the number of entries. */
static uint32_t checkpoint_clients(int id)
{
    sl_vsr_clients_t t;
    assert_int_equal(sl_vsr_clients_init(&t, 8, 64), 0);
    const disk_t *d = &nodes[id].disk;
    assert_true(d->art_op > 0);
    assert_int_equal(sl_vsr_clients_decode(&t, sl_span(d->art[1], d->art_len[1])), 0);
    uint32_t count = t.count;
    sl_vsr_clients_free(&t);
    return count;
}

/* A sessionless group prepares, commits and answers a request without a
 * Register; refuses Register and Logout; still answers 57 to a second
 * request of a client in flight and 58 on a backup; has no duplicate
 * detection; and its replicas restart and fail over with the client table
 * empty. */
static void test_sessionless(void **state)
{
    (void)state;
    plane_up(true, false);
    int p = primary();
    request(p, SL_OP_SEND_MESSAGES, 1, 5);
    assert_int_equal(result(), 0);
    assert_int_equal(sl_load_u64(last_body + 4), 5);
    /* Register and Logout: dropped, counted, no answer. */
    int before = replies;
    submit(client, p, SL_OP_REGISTER, 0, 0);
    submit(client, p, SL_OP_LOGOUT, 2, 0);
    steps(20);
    assert_int_equal(replies, before);
    assert_int_equal(evictions, 0);
    assert_int_equal(info_of(p).requests_refused, 2);
    /* A second request while the first is in flight: 57 first, then the
     * first one's reply. */
    submit(client, p, SL_OP_SEND_MESSAGES, 2, 1);
    submit(client, p, SL_OP_SEND_MESSAGES, 3, 1);
    step();
    assert_int_equal(replies, before + 1);
    assert_int_equal(result(), 57);
    steps(10);
    assert_int_equal(replies, before + 2);
    assert_int_equal(result(), 0);
    /* At-least-once: the same number again is executed again. */
    request(p, SL_OP_SEND_MESSAGES, 1, 5);
    assert_int_equal(result(), 0);
    assert_int_equal(sl_load_u64(last_body + 4), 11);
    request((p + 1) % N, SL_OP_SEND_MESSAGES, 4, 1);
    assert_int_equal(result(), 58);
    /* Past a checkpoint, a backup restarts and catches up. */
    for (uint8_t k = 0; k < 20; k++)
        request(p, SL_OP_SEND_MESSAGES, 10 + k, 1);
    steps(10);
    int b = (p + 1) % N;
    crash(b);
    request(p, SL_OP_SEND_MESSAGES, 40, 1);
    open_node(b);
    steps(200);
    assert_int_equal(info_of(b).status, SL_VSR_STATUS_NORMAL);
    assert_int_equal(info_of(b).commit_min, info_of(p).commit_min);
    assert_int_equal(nodes[b].counter, 32);
    /* The primary fails; the next one answers without any session. */
    crash(p);
    steps(150);
    int q = primary();
    assert_true(q >= 0 && q != p);
    request(q, SL_OP_SEND_MESSAGES, 41, 1);
    assert_int_equal(result(), 0);
    open_node(p);
    steps(200);
    for (int i = 0; i < N; i++) {
        assert_int_equal(nodes[i].counter, 33);
        assert_int_equal(checkpoint_clients(i), 0);
    }
    plane_down();
}

/* The counting machine stamps each batch with a running offset: the
 * offsets stay contiguous on every replica through a view change whose new
 * primary installs an uncommitted suffix (its first prepare's head is the
 * suffix's last op, read back from the journal), and the backups' accept
 * hook checks each one. */
static void test_prepare_hooks_offsets(void **state)
{
    (void)state;
    plane_up(true, true);
    int p = primary();
    for (uint8_t k = 1; k <= 5; k++) {
        request(p, SL_OP_SEND_MESSAGES, k, k);
        assert_int_equal(result(), 0);
    }
    steps(10);
    for (int i = 0; i < N; i++)
        assert_int_equal(nodes[i].end, 5);
    assert_int_equal(prepare_calls, 5);
    /* Three ops the backups journal but the primary never hears acknowledged. */
    deaf[p] = true;
    for (uint64_t c = 0; c < 3; c++)
        submit((sl_u128_t){100 + c, 1}, p, SL_OP_SEND_MESSAGES, 1, 1);
    steps(3);
    crash(p);
    deaf[p] = false;
    int q = -1;
    for (int i = 0; i < 300 && q < 0; i++) {
        step();
        q = primary();
    }
    assert_true(q >= 0 && q != p);
    /* Before any backup's acknowledgement reaches it, the suffix is in its
     * pipeline, not applied. */
    deaf[q] = true;
    sl_vsr_info_t qi = info_of(q);
    assert_int_equal(qi.commit_min, qi.commit_max);
    assert_true(qi.op == qi.commit_max + 3);
    prepare_head_seen = false;
    int calls = prepare_calls;
    submit((sl_u128_t){200, 1}, q, SL_OP_SEND_MESSAGES, 1, 1);
    assert_int_equal(prepare_calls, calls + 1);
    assert_true(prepare_head_seen);
    steps(2);
    deaf[q] = false;
    steps(100);
    open_node(p);
    steps(200);
    for (int i = 0; i < N; i++) {
        assert_int_equal(nodes[i].end, 9);
        assert_int_equal(info_of(i).prepares_refused, 0);
    }
    int o = 3 - p - q;
    assert_true(nodes[o].accepted >= 4);
    plane_down();
}

/* Requests one at a time on a partition-like group: every replica applies
 * the op it journaled last, and the primary's next prepare has that op as
 * its head, from the copy kept in memory: nothing is read back from the
 * journal (a megabyte batch used to be read back once per replica). A
 * restarted replica, which holds nothing in memory, still reads its
 * journal and catches up. */
static void test_last_prepare_not_read_back(void **state)
{
    (void)state;
    plane_up(true, true);
    int p = primary();
    request(p, SL_OP_SEND_MESSAGES, 1, 1);
    steps(10);
    uint64_t reads[N];
    for (int i = 0; i < N; i++)
        reads[i] = nodes[i].disk.reads;
    for (uint8_t k = 2; k <= 9; k++)
        request(p, SL_OP_SEND_MESSAGES, k, k);
    steps(10);
    for (int i = 0; i < N; i++) {
        assert_int_equal(nodes[i].end, 9);
        assert_int_equal(info_of(i).commit_min, info_of(p).commit_min);
        assert_int_equal(nodes[i].disk.reads, reads[i]);
    }
    int b = (p + 1) % N;
    crash(b);
    request(p, SL_OP_SEND_MESSAGES, 10, 1);
    open_node(b);
    steps(200);
    assert_true(nodes[b].disk.reads > reads[b]);
    assert_int_equal(nodes[b].end, 10);
    assert_int_equal(info_of(b).commit_min, info_of(p).commit_min);
    plane_down();
}

/* One batch in flight at a time, and no Commit heartbeat in between: a
 * backup learns that op N - 1 committed from prepare N. It acknowledges N
 * before it applies N - 1 (the primary waits on the acknowledgement, not on
 * the apply), and applies N - 1 from memory, not from its journal. */
static void test_backup_acks_before_apply(void **state)
{
    (void)state;
    commit_ticks = 1000;
    memset(ok_applied, 0, sizeof(ok_applied));
    plane_up(true, true);
    steps(3);
    int p = primary();
    assert_true(p >= 0);
    request(p, SL_OP_SEND_MESSAGES, 1, 1);
    uint64_t reads[N];
    for (int i = 0; i < N; i++)
        reads[i] = nodes[i].disk.reads;
    for (uint8_t k = 2; k <= 9; k++)
        request(p, SL_OP_SEND_MESSAGES, k, k);
    int acked = 0;
    for (int i = 0; i < N; i++) {
        if (i == p)
            continue;
        for (uint64_t op = 3; op <= 9; op++) {
            if (ok_applied[i][op] == 0)
                continue;
            acked++;
            /* applied at most op - 2 when op's PrepareOk left */
            assert_true(ok_applied[i][op] - 1 <= op - 2);
        }
        /* op 8, learned committed from prepare 9, applied without a read */
        assert_int_equal(info_of(i).commit_min, 8);
        assert_int_equal(nodes[i].disk.reads, reads[i]);
    }
    assert_true(acked >= 7);
    plane_down();
    commit_ticks = 2;
}

/* late_relay (journal writes that do not flush): of three, the first
 * backup's successor is the last replica, whose PrepareOk no commit waits
 * for, so the backup relays each prepare once its own journal write is
 * done; without late_relay (writes that flush) before it. Either way the
 * last replica gets every prepare and applies all. */
static void test_relay_order(void **state)
{
    (void)state;
    for (int late = 0; late < 2; late++) {
        plane_late_relay = late == 1;
        plane_up(true, true);
        int p = primary();
        assert_true(p >= 0);
        relayed_after_write = relayed_before_write = 0;
        for (uint8_t k = 1; k <= 8; k++)
            request(p, SL_OP_SEND_MESSAGES, k, k);
        steps(20);
        print_message("late_relay %d: %d relayed before the write, %d after\n", late,
                      relayed_before_write, relayed_after_write);
        assert_int_equal(late ? relayed_before_write : relayed_after_write, 0);
        assert_true((late ? relayed_after_write : relayed_before_write) >= 8);
        for (int i = 0; i < N; i++)
            assert_int_equal(nodes[i].end, 8);
        /* Several prepares in flight at once (one request each of four
         * clients): the first backup takes them all in before any of its
         * writes completes, so the ones it relays once written are no
         * longer among the last two it keeps in memory; it reads them back
         * from its journal, and the last replica needs no repair. */
        if (late) {
            relayed_after_write = 0;
            repair_requests = 0;
            for (uint8_t k = 0; k < 4; k++)
                submit((sl_u128_t){200 + k, 1}, p, SL_OP_SEND_MESSAGES, 1, 1);
            steps(30);
            assert_int_equal(relayed_after_write, 4);
            assert_int_equal(repair_requests, 0);
            for (int i = 0; i < N; i++)
                assert_int_equal(nodes[i].end, 12);
        }
        /* Switched off at run time (a topic's enforce_fsync turned on). */
        if (late) {
            for (int i = 0; i < N; i++)
                sl_vsr_replica_set_late_relay(nodes[i].r, false);
            relayed_after_write = relayed_before_write = 0;
            request(p, SL_OP_SEND_MESSAGES, 9, 1);
            steps(20);
            assert_int_equal(relayed_after_write, 0);
            assert_true(relayed_before_write >= 1);
        }
        plane_down();
    }
    plane_late_relay = false;
}

/* Idle partition groups formatted together beat on ticks of their own
 * phase (from the group id), not all in the same tick: over a few groups
 * (the test's interval is 2 ticks) the Commits of one group all go on one
 * residue, and not every group has the same one. */
static void test_heartbeat_phase(void **state)
{
    (void)state;
    uint32_t seen = 0;
    for (uint32_t k = 1; k <= 6; k++) {
        plane_group = sl_vsr_group_partition(1, 1, k);
        plane_up(true, true);
        commit_residues = 0;
        steps(40);
        assert_true(commit_residues == 1u || commit_residues == 2u);
        seen |= commit_residues;
        plane_down();
    }
    plane_group = 0;
    assert_int_equal(seen, 3);
}

/* A backup whose accept hook refuses never journals nor acknowledges the
 * prepare (not even through repair); the op commits on the other two. */
static void test_accept_refused(void **state)
{
    (void)state;
    plane_up(true, true);
    int p = primary();
    int b = (p + 1) % N, o = (p + 2) % N;
    nodes[b].refuse = true;
    request(p, SL_OP_SEND_MESSAGES, 1, 7);
    assert_int_equal(result(), 0);
    uint64_t op = last_reply.op;
    steps(50); /* repair rounds too */
    sl_vsr_entry_info_t e;
    sl_vsr_replica_entry(nodes[b].r, op, &e);
    assert_false(e.present);
    assert_true(info_of(b).prepares_refused >= 1);
    assert_true(info_of(b).commit_min < op);
    assert_int_equal(nodes[b].end, 0);
    assert_int_equal(nodes[o].end, 1);
    assert_int_equal(nodes[p].end, 1);
    assert_int_equal(info_of(o).prepares_refused, 0);
    /* Once it accepts again, it repairs the op and catches up. */
    nodes[b].refuse = false;
    steps(100);
    assert_int_equal(nodes[b].end, 1);
    plane_down();
}

/* A prepare hook's status code goes to the client; nothing is prepared. */
static void test_prepare_refused(void **state)
{
    (void)state;
    plane_up(true, true);
    int p = primary();
    uint64_t op = info_of(p).op;
    prepare_code = 4100;
    request(p, SL_OP_SEND_MESSAGES, 1, 7);
    assert_int_equal(result(), 4100);
    assert_int_equal(info_of(p).op, op);
    steps(20);
    for (int i = 0; i < N; i++)
        assert_int_equal(info_of(i).op, op);
    prepare_code = 0;
    request(p, SL_OP_SEND_MESSAGES, 1, 7);
    assert_int_equal(result(), 0);
    assert_int_equal(last_reply.op, op + 1);
    plane_down();
}

/* take_over brings the primary to the replica that asks, keeping every
 * committed op; on the primary itself or a recovering replica it does
 * nothing. (A group opened fresh settles in view 1: replica 0 opens as the
 * primary of view 0 and hands over, as after any restart.) */
static void test_take_over(void **state)
{
    (void)state;
    plane_up(true, false);
    assert_int_equal(primary(), 1);
    assert_int_equal(info_of(1).view, 1);
    assert_int_equal(info_of(0).primary_index, 1);
    for (uint8_t k = 1; k <= 6; k++)
        request(1, SL_OP_SEND_MESSAGES, k, k);
    /* The last op's commit reaches the backups with the next heartbeat. */
    uint64_t committed = info_of(1).commit_max;
    sl_vsr_replica_take_over(nodes[2].r);
    steps(100);
    assert_int_equal(primary(), 2);
    sl_vsr_info_t i2 = info_of(2);
    assert_int_equal(i2.status, SL_VSR_STATUS_NORMAL);
    assert_int_equal(i2.view, 2);
    assert_int_equal(i2.primary_index, 2);
    assert_int_equal(info_of(0).primary_index, 2);
    assert_true(i2.commit_max >= committed);
    request(2, SL_OP_SEND_MESSAGES, 7, 7);
    assert_int_equal(result(), 0);
    steps(10);
    for (int i = 0; i < N; i++)
        assert_int_equal(nodes[i].counter, 28);
    /* On the primary: a no-op. */
    sl_vsr_replica_take_over(nodes[2].r);
    steps(50);
    assert_int_equal(info_of(2).view, 2);
    assert_int_equal(primary(), 2);
    /* On a recovering replica (a journal slot damaged at rest): a no-op. */
    uint64_t op = info_of(0).op;
    crash(0);
    nodes[0].disk.slot[op % SLOTS][52] ^= 0x40;
    open_node(0);
    sl_vsr_info_t i0 = info_of(0);
    assert_int_equal(i0.status, SL_VSR_STATUS_RECOVERING);
    sl_vsr_replica_take_over(nodes[0].r);
    assert_int_equal(info_of(0).view, i0.view);
    assert_int_equal(info_of(0).status, SL_VSR_STATUS_RECOVERING);
    steps(200);
    assert_int_equal(primary(), 2);
    assert_int_equal(info_of(0).status, SL_VSR_STATUS_NORMAL);
    /* Replica 1 from view 2: the lowest view above it that 1 leads is 4. */
    sl_vsr_replica_take_over(nodes[1].r);
    steps(100);
    assert_int_equal(primary(), 1);
    assert_int_equal(info_of(1).view, 4);
    request(1, SL_OP_SEND_MESSAGES, 8, 2);
    assert_int_equal(result(), 0);
    steps(10);
    for (int i = 0; i < N; i++)
        assert_int_equal(nodes[i].counter, 30);
    plane_down();
}

static void test_config_check(void **state)
{
    (void)state;
    sl_vsr_config_t c = config(0);
    const char *why = NULL;
    assert_int_equal(sl_vsr_config_check(&c, &why), 0);
    c.pipeline_max = 128;
    assert_int_equal(sl_vsr_config_check(&c, &why), -1);
    assert_non_null(why);
    c = config(0);
    c.journal_slots = c.checkpoint_interval + 2 * c.pipeline_max;
    assert_int_equal(sl_vsr_config_check(&c, &why), -1);
    c = config(0);
    c.replica = N;
    assert_int_equal(sl_vsr_config_check(&c, &why), -1);
    c = config(0);
    c.heartbeat_timeout_ticks = c.commit_interval_ticks;
    assert_int_equal(sl_vsr_config_check(&c, &why), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_commit_and_client_table),
        cmocka_unit_test(test_internal_operation),
        cmocka_unit_test(test_failover_and_restart),
        cmocka_unit_test(test_journal_view_stamp_sealed),
        cmocka_unit_test(test_chain_successor_down),
        cmocka_unit_test(test_config_check),
        cmocka_unit_test(test_sessionless),
        cmocka_unit_test(test_prepare_hooks_offsets),
        cmocka_unit_test(test_last_prepare_not_read_back),
        cmocka_unit_test(test_backup_acks_before_apply),
        cmocka_unit_test(test_relay_order),
        cmocka_unit_test(test_heartbeat_phase),
        cmocka_unit_test(test_accept_refused),
        cmocka_unit_test(test_prepare_refused),
        cmocka_unit_test(test_take_over),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
