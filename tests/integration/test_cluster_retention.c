/* Segment deletion and retention ordered by the partition groups, with real
 * processes: three sluiced in cluster mode on loopback, topics of 1 MiB
 * segments (docs/cluster.md, "Segments and retention").
 *   - sends crossing several segments, a backup down while more are sent
 *     and DeleteSegments commits on the primary: every node, the restarted
 *     backup too, deletes the same segments at the same point of the
 *     partition's log, polls agree on the first offset, and every node's
 *     segment files (.log and .index) have the same names and bytes;
 *     DeleteSegments on a backup gets 58 (operation 68);
 *   - retention by message expiry: only the primary decides, every node
 *     deletes the same segments through the log, none on its own;
 *   - a backup restarted with SIGTERM between sends, then the primary
 *     killed with SIGKILL right after a DeleteSegments reply: the nodes,
 *     the restarted ones too, end with identical files;
 *   - a topic deleted and created again with the same ids (the same
 *     partition group id) starts empty and replicates on every node;
 *   - a DeleteSegments sent again with the same client id and request
 *     number (a 57/58 replayed, a resend after a lost reply), on the
 *     primary and, after a failover, on the next one, deletes nothing more
 *     than the first did; a new request number deletes again;
 *   - the same after two partition checkpoints and a restart of every node:
 *     the record comes back with the checkpoint's snapshot.
 *
 * Every wait polls with a deadline of a count of polls (a minute or more on
 * a loaded machine); nothing asserts on how long anything took. */
#include <dirent.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

// clang-format off
#include <cmocka.h>
// clang-format on

#include <sluice/client.h>
#include <sluice/error.h>

#include "cluster.h"
#include "harness.h"
#include "raw.h"
#include "wire/cmd_topics.h"

#define NODES 3
/* Polls of 100 ms: 90 s before a wait fails. */
#define POLLS_MAX     900
#define SEGMENT_BYTES (1024u * 1024u)
/* A batch of 16 messages of 4000 bytes: about 66 kB, 16 batches a segment. */
#define BATCH_MESSAGES 16
#define PAYLOAD_BYTES  4000

typedef th_cluster_node_t node_t;

static void pause_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void nodes_start(th_cluster_t *c)
{
    /* A short heartbeat (a failover takes about 2 s plus a view change) and
     * a segment cleaner that runs often. */
    th_cluster_options_t o = {.nodes = NODES,
                              .name = "it-retention",
                              .timing = "heartbeat_timeout = \"2 s\"\n"
                                        "commit_broadcast_interval = \"100 ms\"\n"
                                        "[data_maintenance.messages]\n"
                                        "interval = \"200 ms\"\n"};
    th_cluster_start_or_skip(c, &o);
}

static void wait_topic(const node_t *n, const char *topic, uint32_t *id)
{
    sl_client_t *c = th_cluster_client(n);
    for (int p = 0; p < POLLS_MAX; p++) {
        const sl_topic_t *t = NULL;
        if (sl_client_get_topic(c, sl_id_name("s"), sl_id_name(topic), &t) == 0 && t) {
            if (id)
                *id = t->id;
            sl_client_close(c);
            return;
        }
        pause_ms(100);
    }
    fail_msg("topic s/%s did not appear on the node on port %u", topic, n->tcp);
}

/* Topic `name` of one partition with 1 MiB segments (and the expiry when
 * not 0) on stream s, known to every node; returns its id. */
static uint32_t create_topic(th_cluster_t *c, int leader, const char *name, uint64_t expiry_us)
{
    sl_client_t *l = th_cluster_producer(&c->nodes[leader]);
    sl_topic_options_t o = {.set = SL_TOPIC_OPT_SEGMENT_SIZE, .segment_size = SEGMENT_BYTES};
    if (expiry_us) {
        o.set |= SL_TOPIC_OPT_MESSAGE_EXPIRY;
        o.message_expiry_us = expiry_us;
    }
    assert_int_equal(sl_client_create_topic(l, sl_id_name("s"), name, 1, &o, NULL), 0);
    sl_client_close(l);
    uint32_t id = 0;
    for (int i = 0; i < NODES; i++)
        if (c->nodes[i].alive)
            wait_topic(&c->nodes[i], name, &id);
    return id;
}

static int cluster_up(th_cluster_t *c)
{
    nodes_start(c);
    int leader = th_cluster_agreed_leader(c, -1);
    sl_client_t *l = th_cluster_producer(&c->nodes[leader]);
    assert_int_equal(sl_client_create_stream(l, "s", NULL), 0);
    sl_client_close(l);
    return leader;
}

/* `batches` batches of BATCH_MESSAGES messages to partition 0 of topic,
 * each message's bytes derived from (tag, batch, message); every send
 * acknowledged. Returns the offset after the last. */
static uint64_t send_batches(sl_client_t *c, const char *topic, char tag, int batches)
{
    static char payloads[BATCH_MESSAGES][PAYLOAD_BYTES];
    sl_send_message_t m[BATCH_MESSAGES];
    uint64_t next = 0;
    for (int b = 0; b < batches; b++) {
        memset(m, 0, sizeof(m));
        for (int i = 0; i < BATCH_MESSAGES; i++) {
            memset(payloads[i], 'a' + (b + i) % 26, PAYLOAD_BYTES);
            snprintf(payloads[i], 32, "%c-%d-%d", tag, b, i);
            m[i].payload = payloads[i];
            m[i].payload_len = PAYLOAD_BYTES;
        }
        sl_send_result_t r;
        assert_int_equal(sl_client_send_messages(c, sl_id_name("s"), sl_id_name(topic),
                                                 sl_partitioning_partition(0), m, BATCH_MESSAGES,
                                                 &r),
                         0);
        next = r.base_offset + BATCH_MESSAGES;
    }
    return next;
}

/* The offset of the first message node n serves from offset 0 of topic,
 * once it serves offset last (it has applied everything up to there). */
static uint64_t first_offset_when(const node_t *n, const char *topic, uint64_t last)
{
    sl_client_t *c = th_cluster_client(n);
    for (int p = 0; p < POLLS_MAX; p++) {
        sl_polled_messages_t out;
        int rc =
            sl_client_poll_messages(c, sl_consumer_single(sl_id_num(1)), sl_id_name("s"),
                                    sl_id_name(topic), 0, sl_poll_offset(last), 1, false, &out);
        if (rc == 0 && out.count == 1 && out.messages[0].offset == last) {
            assert_int_equal(sl_client_poll_messages(c, sl_consumer_single(sl_id_num(1)),
                                                     sl_id_name("s"), sl_id_name(topic), 0,
                                                     sl_poll_offset(0), 1, false, &out),
                             0);
            assert_int_equal(out.count, 1);
            uint64_t first = out.messages[0].offset;
            sl_client_close(c);
            return first;
        }
        pause_ms(100);
    }
    fail_msg("the node on port %u never served offset %llu of s/%s", n->tcp,
             (unsigned long long)last, topic);
    return 0;
}

/* Waits until every live node serves offset last of topic with the first
 * offset `first` (it has applied the deletions up to there); returns it. */
static uint64_t wait_all_first(th_cluster_t *c, const char *topic, uint64_t last, uint64_t first)
{
    for (int i = 0; i < NODES; i++) {
        if (!c->nodes[i].alive)
            continue;
        for (int p = 0; p < POLLS_MAX; p++) {
            uint64_t got = first_offset_when(&c->nodes[i], topic, last);
            if (got == first)
                break;
            if (p + 1 == POLLS_MAX)
                fail_msg("node %d serves s/%s from offset %llu, expected %llu", i, topic,
                         (unsigned long long)got, (unsigned long long)first);
            pause_ms(100);
        }
    }
    return first;
}

/* Waits until partition 0 of topic on node n holds `segments` segments. */
static void wait_segments(const node_t *n, const char *topic, uint32_t segments)
{
    sl_client_t *c = th_cluster_client(n);
    uint32_t have = 0;
    for (int p = 0; p < POLLS_MAX; p++) {
        const sl_topic_t *t = NULL;
        if (sl_client_get_topic(c, sl_id_name("s"), sl_id_name(topic), &t) == 0 && t &&
            t->partitions && (have = t->partitions[0].segments_count) == segments) {
            sl_client_close(c);
            return;
        }
        pause_ms(100);
    }
    fail_msg("the node on port %u holds %u segments of s/%s, expected %u", n->tcp, have, topic,
             segments);
}

/* --- segment files ------------------------------------------------------------------------ */

typedef struct seg_file {
    char name[64];
    char *bytes;
    size_t len;
} seg_file_t;

typedef struct seg_files {
    seg_file_t f[64];
    int count;
    int logs;
} seg_files_t;

static void files_of(const node_t *n, uint32_t topic, seg_files_t *out)
{
    char dir[512];
    snprintf(dir, sizeof(dir), "%s/data/streams/0/topics/%u/partitions/0", n->srv.data_dir, topic);
    struct dirent **names = NULL;
    int k = scandir(dir, &names, NULL, alphasort);
    assert_true(k > 0);
    memset(out, 0, sizeof(*out));
    for (int i = 0; i < k; i++) {
        const char *name = names[i]->d_name;
        size_t nl = strlen(name);
        bool log = nl > 4 && strcmp(name + nl - 4, ".log") == 0;
        bool index = nl > 6 && strcmp(name + nl - 6, ".index") == 0;
        if ((log || index) && out->count < 64) {
            seg_file_t *f = &out->f[out->count++];
            out->logs += log;
            int w = snprintf(f->name, sizeof(f->name), "%s", name);
            assert_true(w > 0 && (size_t)w < sizeof(f->name));
            char path[800];
            snprintf(path, sizeof(path), "%s/%s", dir, name);
            FILE *fp = fopen(path, "rb");
            assert_non_null(fp);
            struct stat st;
            assert_int_equal(fstat(fileno(fp), &st), 0);
            f->len = (size_t)st.st_size;
            f->bytes = malloc(f->len + 1);
            assert_non_null(f->bytes);
            assert_int_equal(fread(f->bytes, 1, f->len, fp), f->len);
            fclose(fp);
        }
        free(names[i]);
    }
    free(names);
}

static void files_free(seg_files_t *s)
{
    for (int i = 0; i < s->count; i++)
        free(s->f[i].bytes);
}

/* Every node's segment files of partition 0 of topic have the same names
 * and bytes (the nodes stopped, their partitions flushed); returns how many
 * .log files each holds. */
static int assert_same_files(th_cluster_t *c, uint32_t topic)
{
    seg_files_t first, other;
    files_of(&c->nodes[0], topic, &first);
    for (int i = 1; i < NODES; i++) {
        files_of(&c->nodes[i], topic, &other);
        if (other.count != first.count)
            fail_msg("topic %u: node 0 holds %d segment files, node %d %d", topic, first.count, i,
                     other.count);
        for (int k = 0; k < first.count; k++) {
            if (strcmp(first.f[k].name, other.f[k].name) != 0)
                fail_msg("topic %u: node 0 holds %s where node %d holds %s", topic, first.f[k].name,
                         i, other.f[k].name);
            if (first.f[k].len != other.f[k].len ||
                memcmp(first.f[k].bytes, other.f[k].bytes, first.f[k].len) != 0)
                fail_msg("topic %u: %s differs between node 0 (%zu bytes) and node %d (%zu)", topic,
                         first.f[k].name, first.f[k].len, i, other.f[k].len);
        }
        files_free(&other);
    }
    int logs = first.logs;
    files_free(&first);
    return logs;
}

static void assert_logged(th_server_t *srv, const char *what, bool expected)
{
    const char *log = th_log(srv);
    if ((strstr(log, what) != NULL) != expected)
        fail_msg("\"%s\" %s the log", what, expected ? "not in" : "in");
}

/* DeleteSegments on the leader, riding out 58 until the partition's
 * primary is there. */
static void delete_segments(const node_t *leader, const char *topic, uint32_t count)
{
    sl_client_t *l = th_cluster_producer(leader);
    assert_int_equal(sl_client_delete_segments(l, sl_id_name("s"), sl_id_name(topic), 0, count), 0);
    sl_client_close(l);
}

/* --- the tests ---------------------------------------------------------------------------- */

static void test_delete_segments_ordered(void **state)
{
    (void)state;
    th_cluster_t cluster;
    node_t *nodes = cluster.nodes;
    int leader = cluster_up(&cluster);
    uint32_t topic = create_topic(&cluster, leader, "seg", 0);
    sl_client_t *l = th_cluster_producer(&nodes[leader]);
    uint64_t next = send_batches(l, "seg", 'a', 40); /* about 2.6 MB: 3 segments */
    assert_int_equal(wait_all_first(&cluster, "seg", next - 1, 0), 0);

    /* A backup does not delete: 58 TransientNotAccepted, as a result under operation 68. */
    int backup = (leader + 1) % NODES, down = (leader + 2) % NODES;
    sl_client_t *b = th_cluster_client(&nodes[backup]);
    assert_int_equal(sl_client_delete_segments(b, sl_id_name("s"), sl_id_name("seg"), 0, 1),
                     -SL_ERR_TRANSIENT_NOT_ACCEPTED);
    sl_client_close(b);

    /* With a backup down, more segments fill and three are deleted: the
     * restarted backup deletes the same three where the log says, not the
     * three oldest it had sealed when it heard of the deletion. */
    th_cluster_stop_node(&cluster, down, SIGKILL);
    next = send_batches(l, "seg", 'b', 30); /* about 4.6 MB in all: 5 segments */
    sl_client_close(l);
    delete_segments(&nodes[leader], "seg", 3);
    /* The primary applied the deletion before it answered. */
    uint64_t first = first_offset_when(&nodes[leader], "seg", next - 1);
    assert_true(first > 0);
    assert_int_equal(wait_all_first(&cluster, "seg", next - 1, first), first);
    th_cluster_restart_or_skip(&cluster, down);
    assert_int_equal(wait_all_first(&cluster, "seg", next - 1, first), first);
    /* Nothing to delete is a committed no-op. */
    delete_segments(&nodes[leader], "seg", 0);

    th_cluster_stop_live(&cluster, SIGTERM);
    int logs = assert_same_files(&cluster, topic);
    assert_true(logs >= 2);
    for (int i = 0; i < NODES; i++)
        assert_logged(&nodes[i].srv, "segments below offset", true);
    th_cluster_stop(&cluster);
}

static void test_retention_by_primary(void **state)
{
    (void)state;
    th_cluster_t cluster;
    node_t *nodes = cluster.nodes;
    int leader = cluster_up(&cluster);
    uint32_t topic = create_topic(&cluster, leader, "exp", 3u * 1000u * 1000u);
    sl_client_t *l = th_cluster_producer(&nodes[leader]);
    uint64_t next = send_batches(l, "exp", 'e', 50); /* about 3.3 MB: 4 segments */
    sl_client_close(l);
    /* Every sealed segment expires 3 s after its newest message: every node
     * then holds the active segment alone, and serves from its start. */
    for (int i = 0; i < NODES; i++)
        wait_segments(&nodes[i], "exp", 1);
    uint64_t first = first_offset_when(&nodes[leader], "exp", next - 1);
    assert_true(first > 0);
    assert_int_equal(wait_all_first(&cluster, "exp", next - 1, first), first);

    th_cluster_stop_live(&cluster, SIGTERM);
    assert_int_equal(assert_same_files(&cluster, topic), 1);
    for (int i = 0; i < NODES; i++) {
        assert_logged(&nodes[i].srv, "segments below offset", true);
        /* The single node's own pass never runs in a cluster. */
        assert_logged(&nodes[i].srv, "retention: deleted", false);
    }
    th_cluster_stop(&cluster);
}

static void test_primary_killed_after_delete(void **state)
{
    (void)state;
    th_cluster_t cluster;
    node_t *nodes = cluster.nodes;
    int leader = cluster_up(&cluster);
    uint32_t topic = create_topic(&cluster, leader, "seg", 0);
    sl_client_t *l = th_cluster_producer(&nodes[leader]);
    uint64_t next = send_batches(l, "seg", 'a', 20);
    /* A backup restarted in between (SIGTERM: its journal written where the
     * others wrote none) still ends with the same files. */
    int backup = (leader + 1) % NODES;
    assert_int_equal(wait_all_first(&cluster, "seg", next - 1, 0), 0);
    th_cluster_stop_node(&cluster, backup, SIGTERM);
    th_cluster_restart_or_skip(&cluster, backup);
    next = send_batches(l, "seg", 'b', 20);
    assert_int_equal(wait_all_first(&cluster, "seg", next - 1, 0), 0);
    sl_client_close(l);
    delete_segments(&nodes[leader], "seg", 1);
    th_cluster_stop_node(&cluster, leader, SIGKILL);

    int next_leader = th_cluster_agreed_leader(&cluster, leader);
    l = th_cluster_producer(&nodes[next_leader]);
    next = send_batches(l, "seg", 'c', 20);
    sl_client_close(l);
    delete_segments(&nodes[next_leader], "seg", 1);
    uint64_t first = first_offset_when(&nodes[next_leader], "seg", next - 1);
    assert_true(first > 0);
    assert_int_equal(wait_all_first(&cluster, "seg", next - 1, first), first);
    th_cluster_restart_or_skip(&cluster, leader);
    assert_int_equal(wait_all_first(&cluster, "seg", next - 1, first), first);

    th_cluster_stop_live(&cluster, SIGTERM);
    assert_true(assert_same_files(&cluster, topic) >= 2);
    th_cluster_stop(&cluster);
}

static void test_topic_recreated(void **state)
{
    (void)state;
    th_cluster_t cluster;
    node_t *nodes = cluster.nodes;
    int leader = cluster_up(&cluster);
    uint32_t topic = create_topic(&cluster, leader, "re", 0);
    sl_client_t *l = th_cluster_producer(&nodes[leader]);
    uint64_t next = send_batches(l, "re", 'a', 20);
    assert_int_equal(wait_all_first(&cluster, "re", next - 1, 0), 0);
    assert_int_equal(sl_client_delete_topic(l, sl_id_name("s"), sl_id_name("re")), 0);
    sl_client_close(l);
    /* The same name and ids again: the partition's group id is reused. */
    assert_int_equal(create_topic(&cluster, leader, "re", 0), topic);
    l = th_cluster_producer(&nodes[leader]);
    next = send_batches(l, "re", 'z', 5);
    sl_client_close(l);
    assert_int_equal(next, 5 * BATCH_MESSAGES); /* from offset 0: nothing of before */
    for (int i = 0; i < NODES; i++) {
        assert_int_equal(first_offset_when(&nodes[i], "re", next - 1), 0);
        sl_client_t *c = th_cluster_client(&nodes[i]);
        sl_polled_messages_t out;
        assert_int_equal(sl_client_poll_messages(c, sl_consumer_single(sl_id_num(1)),
                                                 sl_id_name("s"), sl_id_name("re"), 0,
                                                 sl_poll_offset(0), 1000, false, &out),
                         0);
        assert_int_equal(out.count, next);
        for (uint32_t k = 0; k < out.count; k++) {
            assert_int_equal(out.messages[k].offset, k);
            assert_int_equal(out.messages[k].payload[0], 'z');
        }
        sl_client_close(c);
    }
    th_cluster_stop_live(&cluster, SIGTERM);
    assert_int_equal(assert_same_files(&cluster, topic), 1);
    th_cluster_stop(&cluster);
}

/* One DeleteSegments of `count` segments of partition 0 of s/topic with request number
 * `request` on a raw session (stamped: the same bytes each time), sent again while the node
 * answers 58 (the partition's primary not there yet; 58 applied nothing); returns the result. */
static uint32_t raw_delete(raw_session_t *r, const char *topic, uint32_t count, uint64_t request)
{
    sl_buf_t body;
    sl_buf_init(&body, 0);
    sl_delete_segments_request_t q = {.stream_id = sl_ident_name("s"),
                                      .topic_id = sl_ident_name(topic),
                                      .partition_id = 0,
                                      .segments_count = count};
    assert_int_equal(sl_delete_segments_request_encode(&body, &q), 0);
    raw_reply_t rep;
    for (int p = 0; p < POLLS_MAX; p++) {
        rep = raw_call(r, SL_OP_DELETE_SEGMENTS, 0, request, r->session, sl_buf_span(&body), true);
        assert_false(rep.closed || rep.evicted);
        assert_int_equal(rep.status, 0);
        assert_int_equal(rep.header.operation, SL_OP_TRUNCATE_PARTITION);
        if (rep.result != SL_ERR_TRANSIENT_NOT_ACCEPTED &&
            rep.result != SL_ERR_TRANSIENT_NOT_COMMITTED)
            break;
        pause_ms(100);
    }
    sl_buf_free(&body);
    return rep.result;
}

/* How many segments partition 0 of topic holds on node n now. */
static uint32_t segments_on(const node_t *n, const char *topic)
{
    sl_client_t *c = th_cluster_client(n);
    const sl_topic_t *t = NULL;
    assert_int_equal(sl_client_get_topic(c, sl_id_name("s"), sl_id_name(topic), &t), 0);
    assert_non_null(t);
    assert_non_null(t->partitions);
    uint32_t count = t->partitions[0].segments_count;
    sl_client_close(c);
    return count;
}

static void raw_session_on(raw_session_t *r, const node_t *n, const sl_u128_t *client)
{
    for (int p = 0; p < POLLS_MAX; p++) {
        raw_open(r, n->tcp);
        if (client)
            r->client = *client;
        raw_reply_t rep = raw_login(r, "iggy", "iggy");
        if (!rep.closed && !rep.evicted && rep.status == 0 && rep.result == 0)
            return;
        raw_close(r);
        pause_ms(100);
    }
    fail_msg("no raw session could log in on port %u", n->tcp);
}

static void test_delete_segments_replayed(void **state)
{
    (void)state;
    th_cluster_t cluster;
    node_t *nodes = cluster.nodes;
    int leader = cluster_up(&cluster);
    create_topic(&cluster, leader, "dup", 0);
    sl_client_t *l = th_cluster_producer(&nodes[leader]);
    uint64_t next = send_batches(l, "dup", 'a', 70); /* about 4.6 MB: 4 sealed segments + 1 */
    sl_client_close(l);
    assert_int_equal(wait_all_first(&cluster, "dup", next - 1, 0), 0);
    for (int i = 0; i < NODES; i++)
        wait_segments(&nodes[i], "dup", 5);

    /* The first request deletes the oldest segment; the same request again
     * (same client id, number and bytes) deletes nothing more. */
    raw_session_t r;
    raw_session_on(&r, &nodes[leader], NULL);
    sl_u128_t client = r.client;
    assert_int_equal(raw_delete(&r, "dup", 1, 7), 0);
    uint64_t first = first_offset_when(&nodes[leader], "dup", next - 1);
    assert_true(first > 0);
    for (int i = 0; i < NODES; i++)
        wait_segments(&nodes[i], "dup", 4);
    assert_int_equal(raw_delete(&r, "dup", 1, 7), 0);
    assert_int_equal(raw_delete(&r, "dup", 1, 7), 0);
    /* The primary applied each before it answered. */
    assert_int_equal(segments_on(&nodes[leader], "dup"), 4);
    /* A request the client has since gone past is not applied again either. */
    assert_int_equal(raw_delete(&r, "dup", 0, 8), 0);
    assert_int_equal(raw_delete(&r, "dup", 1, 7), SL_ERR_REQUEST_ALREADY_APPLIED);
    /* Every node has applied the replays (an op after them is there) and
     * holds the four segments left. */
    l = th_cluster_producer(&nodes[leader]);
    next = send_batches(l, "dup", 'b', 1);
    sl_client_close(l);
    assert_int_equal(wait_all_first(&cluster, "dup", next - 1, first), first);
    for (int i = 0; i < NODES; i++)
        wait_segments(&nodes[i], "dup", 4);
    raw_close(&r);

    /* The primary dies; on the next one the same client replays its last
     * request: every replica remembered it when it applied it. */
    th_cluster_stop_node(&cluster, leader, SIGKILL);
    int next_leader = th_cluster_agreed_leader(&cluster, leader);
    raw_session_on(&r, &nodes[next_leader], &client);
    assert_int_equal(raw_delete(&r, "dup", 0, 8), 0);
    assert_int_equal(raw_delete(&r, "dup", 1, 7), SL_ERR_REQUEST_ALREADY_APPLIED);
    /* A new number is a new request: one more segment goes. */
    assert_int_equal(raw_delete(&r, "dup", 1, 9), 0);
    assert_int_equal(raw_delete(&r, "dup", 1, 9), 0);
    assert_int_equal(segments_on(&nodes[next_leader], "dup"), 3);
    raw_close(&r);
    l = th_cluster_producer(&nodes[next_leader]);
    next = send_batches(l, "dup", 'c', 1);
    sl_client_close(l);
    uint64_t second = first_offset_when(&nodes[next_leader], "dup", next - 1);
    assert_true(second > first);
    assert_int_equal(wait_all_first(&cluster, "dup", next - 1, second), second);
    for (int i = 0; i < NODES; i++)
        if (nodes[i].alive)
            wait_segments(&nodes[i], "dup", 3);
    th_cluster_stop(&cluster);
}

/* `count` batches of one small message each to partition 0 of topic (a partition op each,
 * far below a segment); returns the offset after the last. */
static uint64_t send_small(sl_client_t *c, const char *topic, int count)
{
    uint64_t next = 0;
    for (int b = 0; b < count; b++) {
        char payload[32];
        int n = snprintf(payload, sizeof(payload), "small-%d", b);
        sl_send_message_t m = {.payload = payload, .payload_len = (uint32_t)n};
        sl_send_result_t r;
        assert_int_equal(sl_client_send_messages(c, sl_id_name("s"), sl_id_name(topic),
                                                 sl_partitioning_partition(0), &m, 1, &r),
                         0);
        next = r.base_offset + 1;
    }
    return next;
}

/* The newest checkpoint partition 0 of topic has on node n (its replica directory's
 * snapshot.<op> files), 0 when none. */
static uint64_t newest_checkpoint(const node_t *n, uint32_t topic)
{
    char dir[512];
    snprintf(dir, sizeof(dir), "%s/data/streams/0/topics/%u/partitions/0/replica", n->srv.data_dir,
             topic);
    struct dirent **names = NULL;
    int k = scandir(dir, &names, NULL, alphasort);
    assert_true(k > 0);
    uint64_t newest = 0;
    for (int i = 0; i < k; i++) {
        unsigned long long op = 0;
        char rest[8] = "";
        if (sscanf(names[i]->d_name, "snapshot.%llu%7s", &op, rest) == 1 && op > newest)
            newest = op;
        free(names[i]);
    }
    free(names);
    return newest;
}

static void test_delete_segments_replayed_after_checkpoint(void **state)
{
    (void)state;
    th_cluster_t cluster;
    node_t *nodes = cluster.nodes;
    int leader = cluster_up(&cluster);
    uint32_t topic = create_topic(&cluster, leader, "ckp", 0);
    sl_client_t *l = th_cluster_producer(&nodes[leader]);
    uint64_t next = send_batches(l, "ckp", 'a', 70); /* ops 1..70: 4 sealed segments + 1 */
    sl_client_close(l);
    assert_int_equal(wait_all_first(&cluster, "ckp", next - 1, 0), 0);
    for (int i = 0; i < NODES; i++)
        wait_segments(&nodes[i], "ckp", 5);

    /* Op 71: the oldest segment goes. */
    raw_session_t r;
    raw_session_on(&r, &nodes[leader], NULL);
    sl_u128_t client = r.client;
    assert_int_equal(raw_delete(&r, "ckp", 1, 7), 0);
    raw_close(&r);
    uint64_t first = first_offset_when(&nodes[leader], "ckp", next - 1);
    assert_true(first > 0);
    for (int i = 0; i < NODES; i++)
        wait_segments(&nodes[i], "ckp", 4);

    /* Past two partition checkpoints (every 128 ops), so the deletion is behind the newest
     * checkpoint of every node and no restart replays it from the log. */
    l = th_cluster_producer(&nodes[leader]);
    next = send_small(l, "ckp", 300);
    sl_client_close(l);
    assert_int_equal(wait_all_first(&cluster, "ckp", next - 1, first), first);
    for (int i = 0; i < NODES; i++) {
        for (int p = 0; p < POLLS_MAX && newest_checkpoint(&nodes[i], topic) < 256; p++)
            pause_ms(100);
        assert_true(newest_checkpoint(&nodes[i], topic) >= 256);
    }

    /* Every node restarts: none holds the record in memory any more. */
    th_cluster_stop_live(&cluster, SIGKILL);
    for (int i = 0; i < NODES; i++)
        th_cluster_restart_or_skip(&cluster, i);
    leader = th_cluster_agreed_leader(&cluster, -1);
    assert_int_equal(wait_all_first(&cluster, "ckp", next - 1, first), first);

    /* The same request again deletes nothing more (the record came back with the
     * checkpoint); an older number gets 59; a new one deletes again. */
    raw_session_on(&r, &nodes[leader], &client);
    assert_int_equal(raw_delete(&r, "ckp", 1, 7), 0);
    assert_int_equal(segments_on(&nodes[leader], "ckp"), 4);
    assert_int_equal(raw_delete(&r, "ckp", 1, 6), SL_ERR_REQUEST_ALREADY_APPLIED);
    assert_int_equal(raw_delete(&r, "ckp", 1, 8), 0);
    assert_int_equal(segments_on(&nodes[leader], "ckp"), 3);
    raw_close(&r);
    for (int i = 0; i < NODES; i++)
        wait_segments(&nodes[i], "ckp", 3);
    th_cluster_stop(&cluster);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_delete_segments_ordered),
        cmocka_unit_test(test_retention_by_primary),
        cmocka_unit_test(test_primary_killed_after_delete),
        cmocka_unit_test(test_topic_recreated),
        cmocka_unit_test(test_delete_segments_replayed),
        cmocka_unit_test(test_delete_segments_replayed_after_checkpoint),
    };
    /* TEST_FILTER=<cmocka pattern> runs only the tests it names. */
    if (getenv("TEST_FILTER"))
        cmocka_set_test_filter(getenv("TEST_FILTER"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
