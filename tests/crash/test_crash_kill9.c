/* Crash durability against the real sluiced: a producer on an enforce_fsync topic sends
 * numbered messages in batches of 1..50 from one connection while a killer thread SIGKILLs the
 * server at a random moment; after each kill the server restarts on the same data directory
 * and the partition must hold every acknowledged message byte for byte at its acknowledged
 * offset, offsets contiguous from 0, no message twice, and of the one batch in flight at the
 * kill either nothing or all of it, in order, right after the acknowledged ones. A second test
 * checks that without enforce_fsync a clean SIGTERM still loses nothing (the shutdown flush).
 *
 * The random choices (batch sizes, kill delays) come from one seed, printed first; rerun with
 * SLUICE_CRASH_SEED=<seed> to replay a failure's choices (timing still varies). */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
// clang-format off
#include <cmocka.h>
// clang-format on
#include <sluice/client.h>
#include <sluice/error.h>

#include "crash_util.h"
#include "harness.h"

/* Kills per run, and the window after the producer starts in which each one lands. */
#define KILLS       20
#define KILL_MIN_MS 20u
#define KILL_MAX_MS 300u
#define BATCH_MAX   50u
/* Bounds the data (and so the time each check takes to read it all back): once reached, the
 * producer stops sending and waits for the kill. */
#define MESSAGES_MAX 120000u

static th_server_t srv;
static uint64_t rng;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void start_or_skip(const th_options_t *o)
{
    if (!th_start(&srv, o)) {
        fprintf(stderr, "io_uring unavailable: skipped\n");
        exit(77);
    }
}

static void restart(void)
{
    th_options_t o = {.data_dir = srv.data_dir};
    start_or_skip(&o);
}

/* --- the model of what the partition must hold ---------------------------------------- */

typedef struct model {
    uint64_t tag;         /* the run's id high half */
    uint64_t *numbers;    /* numbers[o]: the message number stored at offset o */
    uint64_t *read;       /* scratch for what a check reads back */
    uint64_t stored;      /* messages the partition must hold */
    uint64_t next_number; /* numbers are never reused, so ids stay unique */
    uint64_t pending_first;
    uint32_t pending_count; /* the batch in flight at the last kill; 0: none */
    /* for the summary */
    uint64_t acked_batches;
    uint32_t pending_kept;
    uint32_t pending_lost;
} model_t;

static const char *stream = "crash";
static const char *topic = "fsync";

/* After a kill: reads the partition back and holds it against the model; an in-flight batch
 * found whole joins the model. */
static void check_partition(model_t *m, sl_client_t *c)
{
    uint64_t n = cu_read_all(c, sl_id_name(stream), sl_id_name(topic), 0, m->tag, m->read,
                             MESSAGES_MAX + BATCH_MAX);
    bool pending_kept = m->pending_count && n == m->stored + m->pending_count;
    if (n != m->stored && !pending_kept)
        fail_msg("after the kill the partition holds %" PRIu64 " messages; %" PRIu64
                 " were acknowledged and %u were in flight",
                 n, m->stored, m->pending_count);
    for (uint64_t o = 0; o < m->stored; o++)
        if (m->read[o] != m->numbers[o])
            fail_msg("offset %" PRIu64 " holds message %" PRIu64 ", acknowledged was %" PRIu64, o,
                     m->read[o], m->numbers[o]);
    for (uint64_t o = m->stored; o < n; o++) {
        assert_int_equal(m->read[o], m->pending_first + (o - m->stored));
        m->numbers[o] = m->read[o];
    }
    /* Numbers rise along the offsets: no message is stored twice. */
    for (uint64_t o = 1; o < n; o++)
        assert_true(m->read[o] > m->read[o - 1]);
    if (m->pending_count)
        pending_kept ? m->pending_kept++ : m->pending_lost++;
    m->stored = n;
    m->pending_count = 0;
}

/* --- the killer ------------------------------------------------------------------------ */

typedef struct killer {
    pid_t pid;
    uint32_t delay_ms;
    pthread_t thread;
} killer_t;

static void *killer_main(void *arg)
{
    killer_t *k = arg;
    struct timespec ts = {k->delay_ms / 1000, (long)(k->delay_ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        continue;
    kill(k->pid, SIGKILL);
    return NULL;
}

/* What a lockstep client may report when the server dies under a request. */
static bool transport_error(int rc)
{
    return rc == -SL_ERR_CONNECTION_CLOSED || rc == -SL_ERR_DISCONNECTED ||
           rc == -SL_ERR_EMPTY_RESPONSE || rc == -SL_ERR_NOT_CONNECTED;
}

/* Sends batches until the killer strikes; every acknowledged batch joins the model. */
static void produce_until_killed(model_t *m, sl_client_t *c, uint32_t delay_ms)
{
    killer_t k = {.pid = srv.pid, .delay_ms = delay_ms};
    assert_int_equal(pthread_create(&k.thread, NULL, killer_main, &k), 0);
    while (m->next_number + BATCH_MAX <= MESSAGES_MAX) {
        uint32_t count = (uint32_t)cu_rand_range(&rng, 1, BATCH_MAX);
        uint64_t first = m->next_number;
        m->next_number += count;
        sl_send_result_t r;
        int rc = cu_send(c, sl_id_name(stream), sl_id_name(topic), 0, m->tag, first, count, &r);
        if (rc != 0) {
            if (!transport_error(rc))
                fail_msg("send of messages %" PRIu64 "..: %d (%s), not a dropped connection", first,
                         rc, sl_strerror(rc));
            m->pending_first = first;
            m->pending_count = count;
            break;
        }
        assert_true(r.confirmed);
        if (r.base_offset != m->stored)
            fail_msg("batch acknowledged at offset %" PRIu64 ", the next offset is %" PRIu64,
                     r.base_offset, m->stored);
        for (uint32_t i = 0; i < count; i++)
            m->numbers[m->stored + i] = first + i;
        m->stored += count;
        m->acked_batches++;
    }
    assert_int_equal(pthread_join(k.thread, NULL), 0);
    /* The process died of the kill, not of anything before it. */
    int status = th_stop(&srv, SIGKILL);
    if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
        fail_msg("sluiced ended with status %d before the kill:\n%s", status, th_log(&srv));
}

static void create_topic(sl_client_t *c, const char *name, const sl_topic_options_t *opt)
{
    const sl_stream_t *s = NULL;
    if (sl_client_create_stream(c, stream, &s) != 0)
        assert_int_equal(sl_client_get_stream(c, sl_id_name(stream), &s), 0);
    assert_int_equal(sl_client_create_topic(c, sl_id_name(stream), name, 1, opt, NULL), 0);
}

static void test_kill9_enforce_fsync(void **state)
{
    (void)state;
    uint64_t seed = cu_seed();
    rng = seed;
    fprintf(stderr, "kill9: seed %" PRIu64 " (SLUICE_CRASH_SEED=%" PRIu64 " replays it)\n", seed,
            seed);
    model_t m = {.tag = seed | 1u};
    m.numbers = calloc(MESSAGES_MAX + BATCH_MAX, sizeof(uint64_t));
    m.read = calloc(MESSAGES_MAX + BATCH_MAX, sizeof(uint64_t));
    assert_non_null(m.numbers);
    assert_non_null(m.read);
    double t0 = now_s();

    start_or_skip(NULL);
    sl_client_t *c = cu_connect(&srv);
    /* Small segments, so kills also land around rotations. */
    sl_topic_options_t opt = {.set = SL_TOPIC_OPT_ENFORCE_FSYNC | SL_TOPIC_OPT_SEGMENT_SIZE,
                              .enforce_fsync = true,
                              .segment_size = 1024 * 1024};
    create_topic(c, topic, &opt);
    for (int kill_no = 0; kill_no < KILLS; kill_no++) {
        uint32_t delay = (uint32_t)cu_rand_range(&rng, KILL_MIN_MS, KILL_MAX_MS);
        produce_until_killed(&m, c, delay);
        sl_client_close(c);
        restart();
        c = cu_connect(&srv);
        check_partition(&m, c);
    }
    /* The last state survives a clean stop too, and sends continue at the right offset. */
    cu_send_ok(c, sl_id_name(stream), sl_id_name(topic), 0, m.tag, m.next_number, 3, m.stored);
    sl_client_close(c);
    cu_stop_clean(&srv);

    fprintf(stderr,
            "kill9: %d kills in %.1f s; %" PRIu64 " messages in %" PRIu64
            " acknowledged batches; in-flight batches kept %u, lost %u\n",
            KILLS, now_s() - t0, m.stored, m.acked_batches, m.pending_kept, m.pending_lost);
    assert_true(m.stored > 0);
    th_cleanup(&srv);
    free(m.numbers);
    free(m.read);
}

/* Without enforce_fsync acknowledged batches may sit in memory, but a clean stop flushes
 * them: after SIGTERM and a restart everything is there, several times over. */
static void test_sigterm_without_fsync(void **state)
{
    (void)state;
    uint64_t tag = cu_seed() | 1u;
    start_or_skip(NULL);
    sl_client_t *c = cu_connect(&srv);
    create_topic(c, "buffered", NULL);
    enum { ROUNDS = 3, BATCHES = 60 };
    uint64_t *read = calloc(ROUNDS * BATCHES * BATCH_MAX, sizeof(uint64_t));
    assert_non_null(read);
    uint64_t stored = 0;
    const sl_stream_t *s = NULL;
    const sl_topic_t *t = NULL;
    assert_int_equal(sl_client_get_stream(c, sl_id_name(stream), &s), 0);
    uint32_t stream_id = s->id;
    assert_int_equal(sl_client_get_topic(c, sl_id_name(stream), sl_id_name("buffered"), &t), 0);
    uint32_t topic_id = t->id;
    char dir[1024], log_path[1100];
    cu_partition_dir(&srv, stream_id, topic_id, 0, dir, sizeof(dir));
    for (int round = 0; round < ROUNDS; round++) {
        for (int b = 0; b < BATCHES; b++) {
            uint32_t count = (uint32_t)(1 + (stored * 7 + (uint64_t)b) % BATCH_MAX);
            cu_send_ok(c, sl_id_name(stream), sl_id_name("buffered"), 0, tag, stored, count,
                       stored);
            stored += count;
        }
        sl_client_close(c);
        /* Below the default flush gate (1024 messages / 1 MiB) some batches are only in
         * memory now; the stop must write them. */
        uint64_t starts[8];
        size_t segments = cu_segments(dir, starts, 8);
        assert_int_equal(segments, 1);
        cu_segment_path(dir, starts[0], ".log", log_path, sizeof(log_path));
        uint64_t before = cu_file_size(log_path);
        cu_stop_clean(&srv);
        assert_true(cu_file_size(log_path) > before);
        restart();
        c = cu_connect(&srv);
        uint64_t n = cu_read_all(c, sl_id_name(stream), sl_id_name("buffered"), 0, tag, read,
                                 ROUNDS * BATCHES * BATCH_MAX);
        assert_int_equal(n, stored);
        for (uint64_t o = 0; o < n; o++)
            assert_int_equal(read[o], o); /* message o at offset o, once */
    }
    sl_client_close(c);
    cu_stop_clean(&srv);
    th_cleanup(&srv);
    free(read);
}

/* Members of a consumer group whose connections died with a SIGKILLed process must not
 * outlive it for good: once 1.2 x heartbeat.interval has passed after the restart without
 * them logging in again, the group is empty and a new member gets every partition (before
 * the fix the dead members kept theirs forever, since only live connections are ever found
 * stale, and nobody read those partitions). Offsets the group stored stay. */
static bool group_empty_within(sl_client_t *c, uint32_t ms)
{
    for (uint32_t waited = 0; waited <= ms; waited += 50) { /* a liveness bound, not a timing */
        const sl_consumer_group_t *g = NULL;
        assert_int_equal(sl_client_get_consumer_group(c, sl_id_name(stream), sl_id_name("grouped"),
                                                      sl_id_name("readers"), &g),
                         0);
        assert_non_null(g);
        if (g->members_count == 0)
            return true;
        struct timespec ts = {0, 50 * 1000000L};
        nanosleep(&ts, NULL);
    }
    return false;
}

static void test_group_members_after_kill9(void **state)
{
    (void)state;
    start_or_skip(&(th_options_t){.extra_config = "[heartbeat]\ninterval = \"2 s\"\n"});
    sl_client_t *admin = cu_connect(&srv);
    sl_topic_options_t opt = {.set = SL_TOPIC_OPT_ENFORCE_FSYNC, .enforce_fsync = true};
    create_topic(admin, "grouped", &opt);
    assert_int_equal(
        sl_client_create_partitions(admin, sl_id_name(stream), sl_id_name("grouped"), 1), 0);
    assert_int_equal(sl_client_create_consumer_group(admin, sl_id_name(stream),
                                                     sl_id_name("grouped"), "readers", NULL),
                     0);
    cu_send_ok(admin, sl_id_name(stream), sl_id_name("grouped"), 1, 7, 0, 5, 0);
    sl_client_t *members[2];
    for (int i = 0; i < 2; i++) {
        members[i] = cu_connect(&srv);
        assert_int_equal(sl_client_join_consumer_group(members[i], sl_id_name(stream),
                                                       sl_id_name("grouped"),
                                                       sl_id_name("readers")),
                         0);
    }
    const sl_assignment_t *a = NULL;
    uint32_t owner = 2;
    for (int i = 0; i < 2; i++) {
        assert_int_equal(sl_client_sync_consumer_group(members[i], sl_id_name(stream),
                                                       sl_id_name("grouped"), sl_id_name("readers"),
                                                       &a),
                         0);
        for (uint32_t k = 0; a && k < a->partitions_count; k++)
            if (a->partitions[k] == 1)
                owner = (uint32_t)i;
    }
    assert_true(owner < 2);
    assert_int_equal(sl_client_store_consumer_offset(
                         members[owner], sl_consumer_in_group(sl_id_name("readers")),
                         sl_id_name(stream), sl_id_name("grouped"), 1, 2, SL_ACK_LEVEL_NONE),
                     0);
    int status = th_stop(&srv, SIGKILL);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    for (int i = 0; i < 2; i++)
        sl_client_close(members[i]);
    sl_client_close(admin);

    restart();
    admin = cu_connect(&srv);
    if (!group_empty_within(admin, 30000))
        fail_msg("the members of the killed process are still in the group 30 s after the "
                 "restart");
    sl_client_t *m = cu_connect(&srv);
    assert_int_equal(sl_client_join_consumer_group(m, sl_id_name(stream), sl_id_name("grouped"),
                                                   sl_id_name("readers")),
                     0);
    assert_int_equal(sl_client_sync_consumer_group(m, sl_id_name(stream), sl_id_name("grouped"),
                                                   sl_id_name("readers"), &a),
                     0);
    assert_non_null(a);
    assert_int_equal(a->partitions_count, 2);
    /* The group's offset survived: the next poll continues after it. */
    sl_polled_messages_t out;
    assert_int_equal(sl_client_poll_messages(m, sl_consumer_in_group(sl_id_name("readers")),
                                             sl_id_name(stream), sl_id_name("grouped"), 1,
                                             sl_poll_next(), 10, false, &out),
                     0);
    assert_int_equal(out.count, 2);
    assert_int_equal(out.messages[0].offset, 3);
    sl_client_close(m);
    /* The release is journaled: another restart (clean this time) agrees. */
    sl_client_close(admin);
    cu_stop_clean(&srv);
    restart();
    admin = cu_connect(&srv);
    const sl_consumer_group_t *g = NULL;
    assert_int_equal(sl_client_get_consumer_group(admin, sl_id_name(stream), sl_id_name("grouped"),
                                                  sl_id_name("readers"), &g),
                     0);
    assert_int_equal(g->members_count, 0);
    sl_client_close(admin);
    cu_stop_clean(&srv);
    th_cleanup(&srv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kill9_enforce_fsync),
        cmocka_unit_test(test_sigterm_without_fsync),
        cmocka_unit_test(test_group_members_after_kill9),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
