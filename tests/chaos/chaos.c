/* The chaos run (`make chaos`; docs/reliability.md "Chaos"): three real
 * sluiced on loopback with --format-cluster, every link between two nodes
 * through a cutting proxy, producers on an enforce_fsync topic and a plain
 * one, a consumer group storing offsets with Quorum acks, and a metadata
 * writer, all through libsluice settled on the leader (chaos_load.c).
 * Meanwhile, for CHAOS_CYCLES cycles, a node is killed with SIGKILL at a
 * random moment (the metadata primary 7 times in 10, else a backup) and
 * restarted over its data directory, and the run waits until the cluster
 * commits again. Then the cases: a backup cut both ways and the primary cut
 * both ways, outbound only and inbound only, and a slow disk (every sync
 * 200 ms late, server/test_faults.h) on a backup; while a quorum is healthy
 * the run waits for commits to flow and counts them. At the end every
 * acknowledged message must be at its offset on the leader byte for byte,
 * offsets contiguous, no group offset below one acknowledged, and every
 * acknowledged metadata write there and on every node.
 *
 * CHAOS_SEED (or --seed) replays a run's kill schedule: the moments, the
 * downtimes and primary-or-backup. CHAOS_CASES picks cases (above: the
 * list of cases()); CHAOS_CHECK_EACH=1 runs the checks after every cycle
 * and case (the load paused meanwhile). CHAOS_CHECK=metadata checks only what
 * the metadata group replicates (main before partition groups: messages
 * and offsets live on the node that took them; the message checks are then
 * printed, not failed). Nothing waits on a clock: every wait is a count of
 * polls, and what took how long is printed, never asserted. */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sluice/error.h>

#include "chaos.h"
#include "crash_util.h"

#define LEADER_POLLS 900 /* 100 ms apart: 90 s for a view change on a loaded machine */
#define FLOW_POLLS   1200
#define FLOW_COMMITS 10u /* metadata commits that show the cluster commits */

typedef struct run {
    th_cluster_t cluster;
    chaos_load_t load;
    uint64_t rng;
    bool messages;     /* the message checks fail the run */
    const char *cases; /* the cases to run (CHAOS_CASES); NULL: all */
    bool check_each;   /* CHAOS_CHECK_EACH: the checks after every cycle and case */
    int failures;      /* cases that did not hold */
    uint64_t offsets_back;
} run_t;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t meta_acks(run_t *r)
{
    uint64_t m, meta, o;
    chaos_acks(&r->load, &m, &meta, &o);
    return meta;
}

/* Waits until FLOW_COMMITS more metadata writes are acknowledged (bounded
 * by polls); returns how many were. */
static uint64_t wait_commits(run_t *r)
{
    uint64_t from = meta_acks(r);
    for (int p = 0; p < FLOW_POLLS && meta_acks(r) - from < FLOW_COMMITS; p++)
        chaos_pause_ms(100);
    return meta_acks(r) - from;
}

static void print_acks(run_t *r, const char *what)
{
    uint64_t m, meta, o;
    chaos_acks(&r->load, &m, &meta, &o);
    const chaos_load_t *l = &r->load;
    uint64_t send_errors = 0;
    for (int t = 0; t < CHAOS_TOPICS; t++)
        send_errors += atomic_load(&l->producers[t].errors);
    printf("  %s: acknowledged so far %" PRIu64 " batches, %" PRIu64 " metadata writes, %" PRIu64
           " offset stores; failed (each retried on a new client) %" PRIu64 " sends, %" PRIu64
           " metadata writes, %" PRIu64 " polls or stores; the consumer read %" PRIu64
           " messages (%" PRIu64 " not numbered ones)\n",
           what, m, meta, o, send_errors, atomic_load(&l->meta.errors),
           atomic_load(&l->consumer.errors), atomic_load(&l->consumer.polled),
           atomic_load(&l->consumer.malformed));
    for (int t = 0; t < CHAOS_TOPICS; t++)
        if (atomic_load(&l->producers[t].last_error))
            printf("    the last failed send to %s: %s\n", l->producers[t].topic,
                   sl_strerror(atomic_load(&l->producers[t].last_error)));
}

/* CHAOS_CHECK_EACH: the load stopped, the checks on the leader now, the
 * load started again where it was; says which fault lost what. */
static void check_now(run_t *r, const char *after)
{
    if (!r->check_each)
        return;
    chaos_stop(&r->load);
    int leader = th_cluster_wait_leader(&r->cluster, 0, LEADER_POLLS);
    chaos_result_t x = {0};
    if (leader >= 0)
        chaos_check(&r->load, leader, r->messages, &x);
    printf("  checked after %s: leader %d; of %" PRIu64 " acknowledged messages %" PRIu64
           " lost, %" PRIu64 " other bytes; %" PRIu64 " gaps; %" PRIu64
           " group offsets back; %" PRIu64 " metadata writes lost\n",
           after, leader, x.messages, x.lost, x.wrong, x.gaps, x.offsets_back, x.meta_lost);
    chaos_start(&r->load);
}

static bool case_on(const run_t *r, const char *name)
{
    return !r->cases || strstr(r->cases, name) != NULL;
}

/* One cycle: a random moment, a kill, a restart, the cluster serving. */
static void cycle(run_t *r, int k)
{
    th_cluster_t *c = &r->cluster;
    long wait_ms = (long)cu_rand_range(&r->rng, 300, 3000);
    bool primary = cu_rand_range(&r->rng, 0, 9) < 7;
    uint64_t pick = cu_rand_range(&r->rng, 0, 1);
    long down_ms = (long)cu_rand_range(&r->rng, 0, 1500);
    chaos_pause_ms(wait_ms);
    int leader = th_cluster_wait_leader(c, 0, LEADER_POLLS);
    int target = primary && leader >= 0 ? leader : (leader + 1 + (int)pick) % c->count;
    if (leader < 0)
        target = (int)pick;
    th_cluster_stop_node(c, target, SIGKILL);
    double t0 = now_s();
    uint64_t at_kill = meta_acks(r);
    chaos_pause_ms(down_ms);
    uint64_t while_down = meta_acks(r) - at_kill;
    if (!th_cluster_restart(c, target)) {
        fprintf(stderr, "chaos: node %d does not start again\n", target);
        exit(1);
    }
    int now = th_cluster_wait_leader(c, 0, LEADER_POLLS);
    uint64_t flowed = wait_commits(r);
    double served = now_s() - t0;
    uint64_t back = now >= 0 && r->messages ? chaos_check_offsets(&r->load, now) : 0;
    r->offsets_back += back;
    printf("cycle %d: kill -9 node %d (%s) after %ld ms, down %ld ms (%" PRIu64
           " metadata commits meanwhile); leader now %d; %" PRIu64
           " commits %.1f s after the kill (restart included)%s\n",
           k + 1, target, target == leader ? "primary" : "backup", wait_ms, down_ms, while_down,
           now, flowed, served, back ? "; a group offset went back" : "");
    if (now < 0 || flowed < FLOW_COMMITS) {
        printf("  the cluster did not serve again\n");
        r->failures++;
    }
    fflush(stdout);
    check_now(r, "the cycle");
}

/* Cuts node i (`how`), and while the cut holds waits for a leader among
 * the others (when want_commits) and commits; restores and waits for the
 * whole cluster to serve. */
static void cut_case(run_t *r, const char *name, int i, th_cut_t how, bool want_commits)
{
    th_cluster_t *c = &r->cluster;
    double t0 = now_s();
    th_cluster_cut(c, i, how);
    int leader = th_cluster_wait_leader(c, 1u << i, want_commits ? LEADER_POLLS : 100);
    uint64_t flowed = want_commits ? wait_commits(r) : 0;
    if (!want_commits) {
        uint64_t from = meta_acks(r);
        chaos_pause_ms(5000); /* a look, not a bound: what commits while it holds */
        flowed = meta_acks(r) - from;
    }
    double held = now_s() - t0;
    th_cluster_cut(c, i, TH_CUT_NONE);
    int after = th_cluster_wait_leader(c, 0, LEADER_POLLS);
    uint64_t healed = wait_commits(r);
    printf("%s (node %d): leader of the others %d, %" PRIu64 " commits during the cut (%.1f s); "
           "healed: leader %d, %" PRIu64 " commits\n",
           name, i, leader, flowed, held, after, healed);
    if ((want_commits && (leader < 0 || flowed < FLOW_COMMITS)) || after < 0 ||
        healed < FLOW_COMMITS) {
        printf("  did not hold: %s\n", want_commits ? "commits stopped while a quorum was healthy"
                                                    : "the cluster did not serve after healing");
        r->failures++;
    }
    fflush(stdout);
    check_now(r, name);
}

static void slow_disk_case(run_t *r)
{
    th_cluster_t *c = &r->cluster;
    int leader = th_cluster_wait_leader(c, 0, LEADER_POLLS);
    int backup = (leader + 1) % c->count;
    uint64_t before = 0, o = 0, m = 0;
    chaos_acks(&r->load, &before, &m, &o);
    double t0 = now_s();
    th_cluster_fault(c, backup, "slow syncs delay=200");
    uint64_t flowed = wait_commits(r);
    uint64_t batches = 0;
    chaos_acks(&r->load, &batches, &m, &o);
    double held = now_s() - t0;
    bool armed = strstr(th_log(&c->nodes[backup].srv), "test faults: armed 'slow syncs") != NULL;
    th_cluster_fault(c, backup, "");
    printf("slow disk on backup node %d (every sync +200 ms%s): %" PRIu64
           " metadata commits and %" PRIu64 " batches acknowledged in %.1f s\n",
           backup, armed ? "" : ", NOT ARMED", flowed, batches - before, held);
    if (!armed || flowed < FLOW_COMMITS) {
        printf("  did not hold: commits stopped with one slow backup\n");
        r->failures++;
    }
    fflush(stdout);
    check_now(r, "the slow disk");
}

/* The cases CHAOS_CASES names (all when unset): backup-cut, primary-cut,
 * primary-unheard, primary-deaf, slow-disk; "none" runs none. */
static void cases(run_t *r)
{
    th_cluster_t *c = &r->cluster;
    int leader = th_cluster_wait_leader(c, 0, LEADER_POLLS);
    if (leader < 0) {
        r->failures++;
        return;
    }
    if (case_on(r, "backup-cut"))
        cut_case(r, "two-way cut of a backup", (leader + 1) % c->count, TH_CUT_BOTH, true);
    leader = th_cluster_wait_leader(c, 0, LEADER_POLLS);
    if (case_on(r, "primary-cut"))
        cut_case(r, "two-way cut of the primary", leader, TH_CUT_BOTH, true);
    leader = th_cluster_wait_leader(c, 0, LEADER_POLLS);
    if (case_on(r, "primary-unheard"))
        cut_case(r, "one-way cut, the primary unheard", leader, TH_CUT_OUTBOUND, true);
    leader = th_cluster_wait_leader(c, 0, LEADER_POLLS);
    if (case_on(r, "primary-deaf"))
        cut_case(r, "one-way cut, the primary deaf", leader, TH_CUT_INBOUND, false);
    if (case_on(r, "slow-disk"))
        slow_disk_case(r);
}

static void print_result(const run_t *r, const chaos_result_t *x)
{
    printf("checks on the leader:\n");
    printf("  messages: %" PRIu64 " batches, %" PRIu64 " messages acknowledged; %" PRIu64
           " lost, %" PRIu64 " other bytes at their offset; partitions hold %" PRIu64
           " messages, %" PRIu64 " offset gaps, %" PRIu64 " not numbered messages%s\n",
           x->batches, x->messages, x->lost, x->wrong, x->partition_msgs, x->gaps, x->foreign,
           r->messages ? "" : " (not failed: CHAOS_CHECK=metadata)");
    printf("  group offsets: %" PRIu64 " below an acknowledged store at the end, %" PRIu64
           " after the cycles%s\n",
           x->offsets_back, r->offsets_back,
           r->messages ? "" : " (not failed: CHAOS_CHECK=metadata)");
    printf("  metadata: %" PRIu64 " creates acknowledged; %" PRIu64
           " acknowledged writes not on the leader; %" PRIu64 " nodes that did not converge\n",
           x->meta_acked, x->meta_lost, x->meta_diverged);
}

static const char *option(int argc, char **argv, const char *flag, const char *env)
{
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], flag) == 0)
            return argv[i + 1];
    const char *v = getenv(env);
    return v && v[0] ? v : NULL;
}

int main(int argc, char **argv)
{
    static run_t r;
    const char *seed_text = option(argc, argv, "--seed", "CHAOS_SEED");
    const char *cycles_text = option(argc, argv, "--cycles", "CHAOS_CYCLES");
    const char *check = option(argc, argv, "--check", "CHAOS_CHECK");
    const char *each = option(argc, argv, "--check-each", "CHAOS_CHECK_EACH");
    r.cases = option(argc, argv, "--cases", "CHAOS_CASES");
    r.check_each = each && strcmp(each, "0") != 0;
    uint64_t seed = seed_text ? strtoull(seed_text, NULL, 0) : cu_seed();
    int cycles = cycles_text ? atoi(cycles_text) : 3;
    r.messages = !check || strcmp(check, "metadata") != 0;
    r.rng = seed ? seed : 1;
    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("chaos: seed %" PRIu64 " (CHAOS_SEED=%" PRIu64 " replays the schedule), %d cycles, "
           "checks: %s\n",
           seed, seed, cycles, r.messages ? "messages and metadata" : "metadata");
    th_cluster_options_t o = {
        .name = "chaos",
        .timing = "heartbeat_timeout = \"2 s\"\ncommit_broadcast_interval = \"250 ms\"\n",
        .proxies = true,
        .faults = true,
    };
    if (!th_cluster_start(&r.cluster, &o))
        return 77;
    if (th_cluster_wait_leader(&r.cluster, 0, LEADER_POLLS) < 0 ||
        !chaos_setup(&r.load, &r.cluster, seed)) {
        fprintf(stderr, "chaos: the new cluster takes no writes\n");
        th_cluster_stop(&r.cluster);
        return 1;
    }
    chaos_start(&r.load);
    double t0 = now_s();
    for (int k = 0; k < cycles; k++)
        cycle(&r, k);
    print_acks(&r, "after the cycles");
    cases(&r);
    chaos_stop(&r.load);
    print_acks(&r, "at the end");
    /* A node that died of itself (a crash, an assertion, a sanitizer
     * report) fails the run whatever the checks say; its log shows why. */
    for (int i = 0; i < r.cluster.count; i++) {
        if (r.cluster.nodes[i].alive && !th_alive(&r.cluster.nodes[i].srv)) {
            printf("node %d died without being killed; its log:\n%s\n", i,
                   th_log(&r.cluster.nodes[i].srv));
            r.cluster.nodes[i].alive = false;
            r.failures++;
        }
    }
    int leader = th_cluster_wait_leader(&r.cluster, 0, LEADER_POLLS);
    chaos_result_t x = {0};
    if (leader >= 0)
        chaos_check(&r.load, leader, r.messages, &x);
    print_result(&r, &x);
    bool lost = leader < 0 || x.meta_lost || x.meta_diverged ||
                (r.messages &&
                 (x.lost || x.wrong || x.gaps || x.foreign || x.offsets_back || r.offsets_back));
    printf("chaos: %s (seed %" PRIu64 ", %d cycles, %d cases failed, %.0f s)\n",
           lost || r.failures ? "FAILED" : "passed", seed, cycles, r.failures, now_s() - t0);
    th_cluster_stop(&r.cluster);
    return lost || r.failures ? 1 : 0;
}
