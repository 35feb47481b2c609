/* The partition registry (server/partitions.h) against a real metadata state and a temporary
 * data directory: what one committed operation costs it, counted in topics visited,
 * partitions opened and directories moved to the trash rather than in time (issue 10: no
 * request may stall the loop thread). */
#include "meta_testutil.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/partitions.h"
#include "wire/cmd_streams.h"
#include "wire/cmd_topics.h"

#define S(name) sl_ident_name(name)
#define NONE    sl_span(NULL, 0)
#define STREAMS 200u

typedef struct fixture {
    tm_t t;
    sl_partitions_t ps;
    char dir[64];
} fixture_t;

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static uint32_t entries(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    uint32_t n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

static uint32_t stream_id(fixture_t *f, const char *name)
{
    sl_ident_t id = S(name);
    const sl_meta_stream_t *st = sl_meta_stream_find(f->t.m, &id);
    assert_non_null(st);
    return st->id;
}

/* STREAMS streams of one topic of one partition each, opened at boot. */
static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof(*f));
    tm_init(&f->t);
    snprintf(f->dir, sizeof(f->dir), "/tmp/sluice-parts-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    for (uint32_t i = 0; i < STREAMS; i++) {
        char name[32];
        snprintf(name, sizeof(name), "s%u", i);
        assert_int_equal(tm_code(&f->t, SL_OP_CREATE_STREAM, 0, tm_body_stream(&f->t, name)), 0);
        assert_int_equal(
            tm_code(&f->t, SL_OP_CREATE_TOPIC_WITH_ASSIGNMENTS, 0,
                    tm_body_topic(&f->t, S(name), 1, "t", NONE)),
            0);
    }
    sl_partitions_init(&f->ps, f->dir, 0);
    sl_partitions_sync(&f->ps, f->t.m, true);
    assert_int_equal(f->ps.count, STREAMS);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    sl_partitions_close(&f->ps);
    tm_free(&f->t);
    assert_int_equal(sl_store_remove_tree(f->dir), 0);
    free(f);
    return 0;
}

/* A CreateTopic, a CreatePartitions and an UpdateTopic in one stream visit that stream's
 * topics, not the server's (every commit used to walk every stream and topic). */
static void test_sync_one_stream(void **state)
{
    fixture_t *f = *state;
    uint32_t id = stream_id(f, "s7");
    sl_partitions_counters_t before = f->ps.stats;
    assert_int_equal(tm_code(&f->t, SL_OP_CREATE_TOPIC_WITH_ASSIGNMENTS, 0,
                             tm_body_topic(&f->t, S("s7"), 3, "u", NONE)),
                     0);
    sl_partitions_sync_stream(&f->ps, f->t.m, id);
    sl_ident_t u = S("u");
    assert_int_equal(tm_code(&f->t, SL_OP_CREATE_PARTITIONS_WITH_ASSIGNMENTS, 0,
                             tm_body_partitions(&f->t, S("s7"), u, 1000)),
                     0);
    sl_partitions_sync_stream(&f->ps, f->t.m, id);
    uint64_t visited = f->ps.stats.topics_visited - before.topics_visited;
    assert_true(visited <= 8); /* two syncs of a stream of two topics */
    assert_int_equal(f->ps.stats.opened - before.opened, 1003);
    assert_int_equal(f->ps.count, STREAMS + 1);
    /* The new partitions have no directory yet: they touch the disk at their first write. */
    char dir[256];
    snprintf(dir, sizeof(dir), "%s/streams/%u/topics/1/partitions", f->dir, id);
    assert_false(exists(dir));
    sl_topic_rt_t *rt = sl_partitions_topic(&f->ps, id, 1);
    assert_non_null(rt);
    assert_int_equal(rt->partitions_count, 1003);
    for (uint32_t p = 0; p < rt->partitions_count; p++)
        assert_non_null(rt->partitions[p]);
    /* The full sync (boot) visits every topic: what each commit used to cost. */
    before = f->ps.stats;
    sl_partitions_sync(&f->ps, f->t.m, false);
    assert_true(f->ps.stats.topics_visited - before.topics_visited >= STREAMS);
}

/* A DeleteStream is one rename of the stream's directory into the trash, whatever it holds,
 * and the tree is gone from streams/ before the sync returns; the trash is emptied by the
 * discard hook (here, on this thread). */
static void test_delete_stream_to_trash(void **state)
{
    fixture_t *f = *state;
    uint32_t id = stream_id(f, "s3");
    assert_int_equal(tm_code(&f->t, SL_OP_CREATE_TOPIC_WITH_ASSIGNMENTS, 0,
                             tm_body_topic(&f->t, S("s3"), 50, "many", NONE)),
                     0);
    sl_partitions_sync_stream(&f->ps, f->t.m, id);
    /* Give the partitions directories, as writes would. */
    char dir[256];
    for (uint32_t p = 0; p < 50; p++) {
        snprintf(dir, sizeof(dir), "%s/streams/%u/topics/1/partitions/%u", f->dir, id, p);
        char cmd[300];
        snprintf(cmd, sizeof(cmd), "mkdir -p %s", dir);
        assert_int_equal(system(cmd), 0);
    }
    sl_partitions_counters_t before = f->ps.stats;
    assert_int_equal(tm_code(&f->t, SL_OP_DELETE_STREAM, 0, tm_body_stream_ref(&f->t, S("s3"))), 0);
    sl_partitions_sync_stream(&f->ps, f->t.m, id);
    assert_int_equal(f->ps.stats.trashed - before.trashed, 1);
    assert_true(f->ps.stats.topics_visited - before.topics_visited <= 2);
    snprintf(dir, sizeof(dir), "%s/streams/%u", f->dir, id);
    assert_false(exists(dir));
    assert_int_equal(f->ps.count, STREAMS - 1);
    snprintf(dir, sizeof(dir), "%s/trash", f->dir);
    assert_int_equal(entries(dir), 0); /* no discard hook: removed at once */
}

/* A hook that keeps what it is handed: the server's worker is not here. */
static char kept[4][512];
static uint32_t kept_count;
static void keep(void *ctx, const char *path)
{
    (void)ctx;
    if (kept_count < 4)
        snprintf(kept[kept_count], sizeof(kept[0]), "%s", path);
    kept_count++;
}

/* What the hook was handed is left to it: it sits in the trash until removed, and a boot
 * hands the trash's leftovers to the hook again. */
static void test_trash_left_to_the_hook(void **state)
{
    fixture_t *f = *state;
    f->ps.discard = keep;
    kept_count = 0;
    uint32_t id = stream_id(f, "s9");
    char dir[256];
    snprintf(dir, sizeof(dir), "%s/streams/%u/topics/0/partitions/0", f->dir, id);
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "mkdir -p %s", dir);
    assert_int_equal(system(cmd), 0);
    sl_ident_t t = S("t");
    assert_int_equal(tm_code(&f->t, SL_OP_DELETE_TOPIC, 0, tm_body_topic_ref(&f->t, S("s9"), t)), 0);
    sl_partitions_sync_stream(&f->ps, f->t.m, id);
    assert_int_equal(kept_count, 1);
    assert_true(exists(kept[0]));
    assert_false(exists(dir));
    kept_count = 0;
    sl_partitions_sweep_trash(&f->ps);
    assert_int_equal(kept_count, 1);
    f->ps.discard = NULL;
}

/* A purge of a topic of 1000 partitions that never held anything writes nothing at all: no
 * purge.gen, no segment, not even the partitions' directories. */
static void test_purge_empty_costs_nothing(void **state)
{
    fixture_t *f = *state;
    uint32_t id = stream_id(f, "s5");
    assert_int_equal(tm_code(&f->t, SL_OP_CREATE_TOPIC_WITH_ASSIGNMENTS, 0,
                             tm_body_topic(&f->t, S("s5"), 1000, "wide", NONE)),
                     0);
    sl_partitions_sync_stream(&f->ps, f->t.m, id);
    sl_buf_t body;
    sl_buf_init(&body, 0);
    sl_purge_topic_request_t q = {.stream_id = S("s5"), .topic_id = S("wide")};
    assert_int_equal(sl_purge_topic_request_encode(&body, &q), 0);
    assert_int_equal(tm_code(&f->t, SL_OP_PURGE_TOPIC, 0, sl_buf_span(&body)), 0);
    sl_buf_free(&body);
    sl_partitions_counters_t before = f->ps.stats;
    sl_partitions_purge(&f->ps, f->t.m, id, 1);
    assert_true(f->ps.stats.topics_visited - before.topics_visited <= 2);
    char dir[256];
    snprintf(dir, sizeof(dir), "%s/streams/%u/topics/1", f->dir, id);
    assert_false(exists(dir));
    sl_topic_rt_t *rt = sl_partitions_topic(&f->ps, id, 1);
    for (uint32_t p = 0; p < rt->partitions_count; p++)
        assert_int_equal(sl_partition_purge_generation(rt->partitions[p]), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_sync_one_stream, setup, teardown),
        cmocka_unit_test_setup_teardown(test_delete_stream_to_trash, setup, teardown),
        cmocka_unit_test_setup_teardown(test_trash_left_to_the_hook, setup, teardown),
        cmocka_unit_test_setup_teardown(test_purge_empty_costs_nothing, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
