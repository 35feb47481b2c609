/* The sluice command-line tool across a failover, through the real binary
 * (SLUICE_CLI) against three sluiced in cluster mode on loopback
 * (docs/cli.md, "Clusters"; docs/cluster.md). Pointed at a backup, every
 * command settles on the leader and works. The leader is then killed with
 * SIGKILL:
 *   - a `message poll --follow` that had settled on it carries on from
 *     another node (it reconnects through the roster and settles again)
 *     and prints the messages sent after the failover;
 *   - commands pointed at the surviving backup, run one after another
 *     while the survivors elect, end in success once there is a leader;
 *     before that each one fails only with the documented transient
 *     outcomes: exit 1 with 58 TransientNotAccepted (no leader yet) or
 *     exit 3 (connection, a timeout);
 *   - a command pointed at the dead node fails with exit 3 (cannot
 *     connect), at once.
 *
 * Every wait polls with a deadline of a count of tries; nothing asserts on
 * how long anything took. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

// clang-format off
#include <cmocka.h>
// clang-format on

#include <sluice/client.h>

#include "cluster.h"
#include "harness.h"

#define NODES 3
/* Tries 200 ms apart while the survivors elect: 90 s. */
#define TRIES_MAX 450

static void pause_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static char home[256];

/* A run of the tool: its pid, and its standard output and error in files. */
typedef struct run {
    pid_t pid;
    char out_path[320], err_path[320];
    int code; /* exit status; 128 + signal */
    bool reaped;
    int status;
    char *out, *err;
} run_t;

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = calloc(1, (size_t)n + 1);
    assert_non_null(s);
    assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    return s;
}

/* Starts `sluice --server 127.0.0.1:port -u iggy -p iggy args...`. */
static void start(run_t *r, uint16_t port, const char *const *args)
{
    const char *cli = getenv("SLUICE_CLI");
    assert_non_null(cli);
    memset(r, 0, sizeof(*r));
    const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(r->out_path, sizeof(r->out_path), "%s/sluice-cli-out-XXXXXX", tmp);
    snprintf(r->err_path, sizeof(r->err_path), "%s/sluice-cli-err-XXXXXX", tmp);
    int out = mkstemp(r->out_path), err = mkstemp(r->err_path);
    assert_true(out >= 0 && err >= 0);
    char server[32];
    snprintf(server, sizeof(server), "127.0.0.1:%u", port);
    const char *argv[32] = {cli, "--server", server, "-u", "iggy", "-p", "iggy"};
    size_t n = 7;
    for (; *args; args++) {
        assert_true(n < 31);
        argv[n++] = *args;
    }
    argv[n] = NULL;
    r->pid = fork();
    assert_true(r->pid >= 0);
    if (r->pid == 0) {
        int in = open("/dev/null", O_RDONLY);
        dup2(in, 0);
        dup2(out, 1);
        dup2(err, 2);
        setenv("HOME", home, 1); /* no contexts, no stored session */
        execv(cli, (char *const *)argv);
        _exit(127);
    }
    close(out);
    close(err);
}

/* Whether the run has ended (reaped then). */
static bool ended(run_t *r)
{
    if (!r->reaped && waitpid(r->pid, &r->status, WNOHANG) == r->pid)
        r->reaped = true;
    return r->reaped;
}

/* Waits for the run (60 s at most) and reads its outputs. */
static void finish(run_t *r)
{
    for (int i = 0; i < 600 && !ended(r); i++)
        pause_ms(100);
    if (!ended(r)) {
        kill(r->pid, SIGKILL);
        waitpid(r->pid, &r->status, 0);
    }
    int status = r->status;
    r->code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r->out = slurp(r->out_path);
    r->err = slurp(r->err_path);
    unlink(r->out_path);
    unlink(r->err_path);
}

static void run_free(run_t *r)
{
    free(r->out);
    free(r->err);
}

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})

static run_t cli(uint16_t port, const char *const *args)
{
    run_t r;
    start(&r, port, args);
    finish(&r);
    return r;
}

static void expect(run_t r, int code, const char *needle)
{
    if (r.code != code || (needle && !strstr(r.out, needle)))
        fail_msg("exit %d (expected %d, \"%s\")\nstdout:\n%s\nstderr:\n%s", r.code, code,
                 needle ? needle : "", r.out, r.err);
    run_free(&r);
}

/* Runs the command against port until it succeeds; every failure before
 * must be a documented transient one (58 with exit 1, or exit 3). A
 * failure of exit 1 that names `after_timeout` (an "already exists") is
 * accepted when an exit 3 came before it: the timed-out try committed.
 * Returns how many tries failed. */
static int until_ok(uint16_t port, const char *const *args, const char *after_timeout)
{
    bool timed_out = false;
    for (int t = 0; t < TRIES_MAX; t++) {
        run_t r = cli(port, args);
        bool ok = r.code == 0 ||
                  (r.code == 1 && timed_out && after_timeout && strstr(r.err, after_timeout));
        bool transient = (r.code == 1 && strstr(r.err, "(58)")) || r.code == 3;
        if (ok) {
            run_free(&r);
            return t;
        }
        if (!transient)
            fail_msg("try %d: exit %d is not a documented transient failure\nstdout:\n%s\n"
                     "stderr:\n%s",
                     t, r.code, r.out, r.err);
        timed_out = timed_out || r.code == 3;
        run_free(&r);
        pause_ms(200);
    }
    fail_msg("no success in %d tries", TRIES_MAX);
    return -1;
}

static void test_cli_through_failover(void **state)
{
    (void)state;
    const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(home, sizeof(home), "%s/sluice-cli-home-XXXXXX", tmp);
    assert_non_null(mkdtemp(home));
    th_cluster_t cluster;
    th_cluster_options_t co = {.nodes = NODES,
                               .name = "it-cli",
                               .timing = "heartbeat_timeout = \"2 s\"\n"
                                         "commit_broadcast_interval = \"100 ms\"\n"};
    if (!th_cluster_start(&cluster, &co))
        exit(77);
    int leader = th_cluster_wait_leader_other(&cluster, -1, 900);
    assert_true(leader >= 0);
    int backup = (leader + 1) % NODES;
    uint16_t b = cluster.nodes[backup].tcp, l = cluster.nodes[leader].tcp;

    /* Pointed at a backup: each command settles on the leader. The first
     * may meet the partition group's take-over (58). */
    expect(cli(b, ARGS("stream", "create", "cs")), 0, NULL);
    expect(cli(b, ARGS("topic", "create", "cs", "ct", "1")), 0, NULL);
    until_ok(b, ARGS("message", "send", "cs", "ct", "-p", "0", "before"), NULL);
    expect(cli(b, ARGS("cluster", "metadata", "-o", "list")), 0, "|leader|healthy");

    /* A follower settled on the leader (through the backup). */
    run_t follow;
    start(&follow, b,
          ARGS("message", "poll", "cs", "ct", "0", "--first", "--follow", "--follow-seconds", "120",
               "--interval-ms", "50"));
    for (int t = 0; t < TRIES_MAX; t++) {
        char *seen = slurp(follow.out_path);
        bool got = strstr(seen, "before") != NULL;
        free(seen);
        if (got)
            break;
        if (t == TRIES_MAX - 1 || ended(&follow)) {
            if (!ended(&follow))
                kill(follow.pid, SIGKILL);
            finish(&follow);
            fail_msg("the follower printed no \"before\"\nstdout:\n%s\nstderr:\n%s", follow.out,
                     follow.err);
        }
        pause_ms(200);
    }

    th_cluster_stop_node(&cluster, leader, SIGKILL);
    /* At the dead node: cannot connect, exit 3. */
    expect(cli(l, ARGS("stream", "list")), 3, NULL);
    /* At the backup while the survivors elect. */
    int failed = until_ok(b, ARGS("stream", "create", "after"), "already exists");
    printf("# the first write after the kill failed %d times before a leader took it\n", failed);
    until_ok(b, ARGS("message", "send", "cs", "ct", "-p", "0", "after-failover"), NULL);
    run_t r = cli(b, ARGS("message", "poll", "cs", "ct", "0", "--first", "-m", "10"));
    assert_int_equal(r.code, 0);
    assert_non_null(strstr(r.out, "before"));
    assert_non_null(strstr(r.out, "after-failover"));
    run_free(&r);

    /* The follower printed what was sent after the failover. */
    bool got = false;
    for (int t = 0; t < TRIES_MAX && !got; t++) {
        char *seen = slurp(follow.out_path);
        got = strstr(seen, "after-failover") != NULL;
        free(seen);
        if (!got && ended(&follow))
            break;
        if (!got)
            pause_ms(200);
    }
    if (!ended(&follow))
        kill(follow.pid, SIGTERM);
    finish(&follow);
    if (!got)
        fail_msg("the follower did not carry on after the failover (exit %d)\nstdout:\n%s\n"
                 "stderr:\n%s",
                 follow.code, follow.out, follow.err);
    assert_int_equal(follow.code, 0); /* SIGTERM ends --follow with 0 */
    run_free(&follow);
    th_cluster_stop(&cluster);
    rmdir(home);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cli_through_failover),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
