/* The simulator's world and its command line.
 *
 *   sl_sim --seed N [--replicas 3|5] [--bug NAME] [--verbose]   one seed, in process
 *   sl_sim --seeds A-B | --seeds COUNT [--jobs J] [...]          many, one child each
 *   sl_sim ... --expect-failure      succeed only if some seed fails (injected bugs)
 *
 * A run has two phases. In the fault phase clients send requests while the
 * network loses, delays, duplicates and reorders packets, links are cut one
 * way or both, replicas crash and restart at any tick (writes in flight
 * landing, lost or torn), and the fault-prone disks (at most f replicas a
 * run) get bytes flipped at rest or are wiped. Then faults stop, every
 * replica restarts and the network heals: within liveness_ticks the cluster
 * must elect a primary, answer every outstanding request and bring every
 * replica to the same commit with the same state. The checkers (check.c)
 * run at every apply, restore and reply. */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sim.h"
#include "vsr/handshake.h"
#include "wire/header.h"

/* --- reporting ------------------------------------------------------------------------------ */

void sim_fail(sim_t *s, const char *fmt, ...)
{
    if (s->failed)
        return;
    s->failed = true;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->failure, sizeof(s->failure), fmt, ap);
    va_end(ap);
}

void sim_log(sim_t *s, const char *fmt, ...)
{
    if (!s->opt.verbose)
        return;
    fprintf(stderr, "[%6llu] ", (unsigned long long)s->tick);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* --- buses ------------------------------------------------------------------------------------ */

typedef struct bus_ctx {
    sim_t *sim;
    uint8_t replica;
} bus_ctx_t;

static bus_ctx_t bus_ctx[SIM_REPLICAS_MAX];

static void bus_send(void *ctx, uint8_t replica, const uint8_t *frame, uint32_t size)
{
    bus_ctx_t *b = ctx;
    net_send(b->sim, b->replica, replica, frame, size);
}

static void bus_reply(void *ctx, sl_u128_t client, const uint8_t *frame, uint32_t size)
{
    bus_ctx_t *b = ctx;
    sim_t *s = b->sim;
    for (uint8_t i = 0; i < s->nclients; i++) {
        if (sl_u128_eq(s->clients[i].id, client))
            net_send(s, b->replica, s->clients[i].node, frame, size);
    }
}

static void bus_trace(void *ctx, const char *line)
{
    bus_ctx_t *b = ctx;
    sim_log(b->sim, "%s", line);
}

/* --- setup ------------------------------------------------------------------------------------ */

static void choose_config(sim_t *s)
{
    prng_t *p = &s->prng;
    sl_vsr_config_t *c = &s->cfg;
    sl_vsr_config_defaults(c, 0, s->n);
    c->cluster = sl_vsr_cluster_id(sl_span_str("sim"));
    c->pipeline_max = (uint32_t)prng_range(p, 1, 8);
    c->checkpoint_interval = (uint32_t)prng_range(p, 4, 32);
    c->journal_slots =
        c->checkpoint_interval + 2 * c->pipeline_max + (uint32_t)prng_range(p, 2, 32);
    c->clients_max = s->nclients + (uint32_t)prng_range(p, 0, 4);
    c->reply_max = 64;
    c->repair_chunk_max = (uint32_t)prng_range(p, 1, 16);
    c->state_chunk_max = (uint32_t)prng_range(p, 16, 256);
    c->state_max = 1u << 20;
    c->frame_max = 1u << 20;
    /* Timeouts above the network's round trip, as an operator would set
     * them (the resend timer retries what a round trip should answer). */
    uint32_t rtt = 2 * s->net.delay_max;
    c->commit_interval_ticks = (uint32_t)prng_range(p, 3, 8);
    c->resend_ticks = (uint32_t)prng_range(p, rtt + 2, rtt + 10);
    c->heartbeat_timeout_ticks = (uint32_t)prng_range(p, 30, 60) + 2 * rtt;
    c->view_change_timeout_ticks = (uint32_t)prng_range(p, 3 * c->resend_ticks, 100 + 2 * rtt);
    c->bugs = s->opt.bugs;
    /* The first group relays late (replica.h, late_relay; the server's
     * metadata group flushes and relays first): the partition groups
     * exercise both orders. */
    c->late_relay = true;
    const char *why;
    sl_assert(sl_vsr_config_check(c, &why) == 0);
}

static void open_replica(sim_t *s, uint8_t i)
{
    sl_vsr_config_t cfg = s->cfg;
    cfg.replica = i;
    cfg.nonce_seed = prng_next(&s->prng);
    sl_vsr_storage_t storage = disk_storage(&s->disks[i]);
    sl_vsr_machine_t machine = machine_iface(&s->machines[i]);
    if (sl_vsr_replica_open(&cfg, &storage, &s->buses[i], &machine, &s->replicas[i]) != 0) {
        sim_fail(s, "replica %u could not open its storage", i);
        return;
    }
    s->up[i] = true;
    if (s->opt.partitions)
        pgroups_open(s, i);
    sim_log(s, "replica %u up", i);
}

static void sim_init(sim_t *s, const sim_options_t *opt)
{
    memset(s, 0, sizeof(*s));
    s->opt = *opt;
    prng_seed(&s->prng, opt->seed);
    prng_t *p = &s->prng;
    s->n = opt->replicas ? opt->replicas : (prng_chance(p, 500000) ? 3 : 5);
    s->nclients = (uint8_t)prng_range(p, 2, SIM_CLIENTS_MAX);
    net_init(&s->net);
    s->net.loss_ppm = (uint32_t)prng_range(p, 0, 100000);
    s->net.dup_ppm = (uint32_t)prng_range(p, 0, 50000);
    s->net.delay_min = (uint32_t)prng_range(p, 0, 2);
    s->net.delay_max = s->net.delay_min + (uint32_t)prng_range(p, 0, 10);
    choose_config(s);
    s->crash_ppm = (uint32_t)prng_range(p, 0, 4000);
    s->partition_ppm = (uint32_t)prng_range(p, 0, 5000);
    s->corrupt_ppm = (uint32_t)prng_range(p, 0, 20000);
    /* At most f fault-prone disks, as the protocol tolerates. */
    uint8_t f = (uint8_t)((s->n - 1) / 2);
    uint8_t prone = (uint8_t)prng_range(p, 0, f);
    bool is_prone[SIM_REPLICAS_MAX] = {false};
    for (uint8_t k = 0; k < prone;) {
        uint8_t i = (uint8_t)prng_below(p, s->n);
        if (!is_prone[i]) {
            is_prone[i] = true;
            k++;
        }
    }
    for (uint8_t i = 0; i < s->n; i++) {
        disk_init(&s->disks[i], s, i, s->cfg.journal_slots, is_prone[i]);
        machine_init(&s->machines[i], s, i);
        bus_ctx[i] = (bus_ctx_t){s, i};
        s->buses[i] = (sl_vsr_bus_t){
            .ctx = &bus_ctx[i], .send = bus_send, .reply = bus_reply, .trace = bus_trace};
        s->skew_us[i] = (int64_t)prng_below(p, 2000000) - 1000000;
        sl_vsr_config_t cfg = s->cfg;
        cfg.replica = i;
        sl_vsr_storage_t storage = disk_storage(&s->disks[i]);
        sl_assert(sl_vsr_replica_format(&cfg, &storage) == 0);
    }
    for (uint8_t i = 0; i < s->nclients; i++)
        client_init(&s->clients[i], s, i);
    /* Drawn after everything above: the first group's scenario of a seed
     * is the same with or without --partitions up to here. */
    if (opt->partitions)
        pgroups_init(s, is_prone);
    for (uint8_t i = 0; i < s->n; i++)
        open_replica(s, i);
}

static void sim_free(sim_t *s)
{
    for (uint8_t i = 0; i < s->n; i++) {
        if (s->up[i])
            sl_vsr_replica_close(s->replicas[i]);
        disk_free(&s->disks[i]);
    }
    pgroups_free(s);
    for (uint8_t i = 0; i < s->nclients; i++)
        free(s->clients[i].committed_ops);
    net_free(&s->net);
    free(s->committed);
}

/* --- faults -------------------------------------------------------------------------------------
 */

static void crash(sim_t *s, uint8_t i)
{
    disk_crash(&s->disks[i]);
    sl_vsr_replica_close(s->replicas[i]);
    s->replicas[i] = NULL;
    s->up[i] = false;
    s->restart_at[i] = s->tick + prng_range(&s->prng, 1, 300);
    s->stats.crashes++;
    bool wipe = s->disks[i].fault_prone && prng_chance(&s->prng, 250000);
    if (wipe) {
        disk_wipe(&s->disks[i]);
        s->stats.wipes++;
        sim_log(s, "replica %u crashed, disk wiped", i);
    } else {
        sim_log(s, "replica %u crashed", i);
    }
    /* The node's partition replicas go down with it (its disk with theirs). */
    if (s->opt.partitions)
        pgroups_crash(s, i, wipe);
}

static void heal(sim_t *s)
{
    memset(s->net.blocked, 0, sizeof(s->net.blocked));
    s->partition_until = 0;
}

static void partition(sim_t *s)
{
    prng_t *p = &s->prng;
    heal(s);
    uint64_t mode = prng_below(p, 3);
    if (mode == 0) {
        /* the primary alone: it keeps a longer log of a view nobody follows */
        uint8_t primary = (uint8_t)prng_below(p, s->n);
        for (uint8_t i = 0; i < s->n; i++) {
            sl_vsr_info_t info;
            if (s->up[i]) {
                sl_vsr_replica_info(s->replicas[i], &info);
                if (info.primary)
                    primary = i;
            }
        }
        for (uint8_t a = 0; a < s->n; a++) {
            if (a != primary) {
                s->net.blocked[a][primary] = true;
                s->net.blocked[primary][a] = true;
            }
        }
        sim_log(s, "partition (primary %u isolated)", primary);
    } else if (mode == 1) {
        /* symmetric: a random side against the rest */
        bool side[SIM_REPLICAS_MAX];
        for (uint8_t i = 0; i < s->n; i++)
            side[i] = prng_chance(p, 500000);
        for (uint8_t a = 0; a < s->n; a++)
            for (uint8_t b = 0; b < s->n; b++)
                s->net.blocked[a][b] = side[a] != side[b];
        sim_log(s, "partition (symmetric)");
    } else {
        /* one way: a few links cut in one direction only */
        uint64_t cuts = prng_range(p, 1, s->n);
        for (uint64_t k = 0; k < cuts; k++) {
            uint8_t a = (uint8_t)prng_below(p, s->n), b = (uint8_t)prng_below(p, s->n);
            s->net.blocked[a][b] = a != b;
        }
        sim_log(s, "partition (one way)");
    }
    s->partition_until = s->tick + prng_range(p, 20, 500);
    s->stats.partitions++;
}

static void inject_faults(sim_t *s)
{
    prng_t *p = &s->prng;
    for (uint8_t i = 0; i < s->n; i++) {
        if (s->up[i] && prng_chance(p, s->crash_ppm))
            crash(s, i);
        if (s->disks[i].fault_prone && prng_chance(p, s->corrupt_ppm) &&
            disk_corrupt(&s->disks[i])) {
            s->stats.corruptions++;
            sim_log(s, "replica %u: disk corrupted", i);
        }
        if (s->opt.partitions && s->disks[i].fault_prone && prng_chance(p, s->corrupt_ppm) &&
            pgroups_corrupt(s, i)) {
            s->stats.corruptions++;
            sim_log(s, "replica %u: a partition group's disk corrupted", i);
        }
    }
    if (s->partition_until != 0 && s->tick >= s->partition_until) {
        heal(s);
        sim_log(s, "partition healed");
    } else if (s->partition_until == 0 && prng_chance(p, s->partition_ppm)) {
        partition(s);
    }
}

static void enter_liveness(sim_t *s)
{
    s->phase = PHASE_LIVENESS;
    heal(s);
    s->net.loss_ppm = 0;
    s->net.dup_ppm = 0;
    for (uint8_t i = 0; i < s->n; i++) {
        if (!s->up[i])
            s->restart_at[i] = s->tick;
    }
    sim_log(s, "faults stop; liveness phase");
}

/* --- the loop -----------------------------------------------------------------------------------
 */

static void deliver(sim_t *s, const packet_t *pk)
{
    if (pk->to >= s->n + s->nclients) {
        pgroups_client_frame(s, pk->to, pk->data, pk->len);
        return;
    }
    if (pk->to >= s->n) {
        client_on_frame(s, &s->clients[pk->to - s->n], pk->data, pk->len);
        return;
    }
    uint8_t i = pk->to;
    if (!s->up[i])
        return;
    if (pk->from < s->n) {
        /* Routed by the frame's group, as sluiced does. */
        if (s->opt.partitions && pgroups_route(s, i, pk->data, pk->len))
            return;
        sl_vsr_replica_on_frame(s->replicas[i], pk->data, pk->len);
        return;
    }
    if (s->opt.partitions && pgroups_request(s, pk->from, i, pk->data, pk->len))
        return;
    /* A client request: the host's admission decodes the header and stamps
     * the acting user. */
    sl_request_header_t h;
    if (sl_request_header_decode(pk->data, s->cfg.frame_max, &h) != SL_HDR_OK || h.size != pk->len)
        return;
    sl_vsr_request_t req = {.client = h.client,
                            .session = h.session,
                            .request = h.request,
                            .request_checksum = h.request_checksum,
                            .operation = h.operation,
                            .user_id = (uint32_t)h.client.lo,
                            .timestamp = h.timestamp,
                            .body = sl_span(pk->data + SL_HEADER_SIZE, pk->len - SL_HEADER_SIZE)};
    sl_vsr_replica_request(s->replicas[i], &req);
}

/* Converged: every replica normal in one view at the highest commit, with
 * equal state, and no client waiting. */
static bool converged(sim_t *s)
{
    uint32_t view = 0;
    uint64_t digest = 0;
    for (uint8_t i = 0; i < s->n; i++) {
        if (!s->up[i])
            return false;
        sl_vsr_info_t info;
        sl_vsr_replica_info(s->replicas[i], &info);
        if (info.status != SL_VSR_STATUS_NORMAL || info.syncing ||
            info.commit_min != s->committed_max || info.commit_max != s->committed_max)
            return false;
        uint64_t d = machine_digest(&s->machines[i]);
        if (i > 0 && (info.view != view || d != digest))
            return false;
        view = info.view;
        digest = d;
    }
    for (uint8_t i = 0; i < s->nclients; i++) {
        if (s->clients[i].outstanding || s->clients[i].parked || !s->clients[i].registered)
            return false;
    }
    return !s->opt.partitions || pgroups_converged(s);
}

static void describe(sim_t *s, FILE *out)
{
    for (uint8_t i = 0; i < s->n; i++) {
        if (!s->up[i]) {
            fprintf(out, "  replica %u: down\n", i);
            continue;
        }
        sl_vsr_info_t info;
        sl_vsr_replica_info(s->replicas[i], &info);
        fprintf(out,
                "  replica %u: %s%s%s view %u log_view %u op %llu commit %llu/%llu "
                "checkpoint %llu, %llu frames dropped%s\n",
                i, sl_vsr_status_name(info.status), info.primary ? " primary" : "",
                info.syncing ? " syncing" : "", info.view, info.log_view,
                (unsigned long long)info.op, (unsigned long long)info.commit_min,
                (unsigned long long)info.commit_max, (unsigned long long)info.checkpoint_op,
                (unsigned long long)info.frames_dropped,
                s->disks[i].fault_prone ? " (fault-prone disk)" : "");
        /* The first ops it has yet to apply: what it holds of each. */
        for (uint64_t op = info.commit_min + 1; op <= info.op && op <= info.commit_min + 24; op++) {
            sl_vsr_entry_info_t e;
            sl_vsr_replica_entry(s->replicas[i], op, &e);
            fprintf(out, "    op %llu: %s%s%s slot %s %llu id %016llx\n", (unsigned long long)op,
                    e.known ? "known" : "unknown", e.canonical ? " canonical" : "",
                    e.present ? " present" : "",
                    e.slot == 0   ? "empty"
                    : e.slot == 1 ? "valid"
                                  : "faulty",
                    (unsigned long long)e.slot_op, (unsigned long long)e.identity.lo);
        }
    }
    for (uint8_t i = 0; i < s->nclients; i++) {
        const client_t *c = &s->clients[i];
        if (c->outstanding || c->parked)
            fprintf(out, "  client %u: waiting on request %llu (op %u) at replica %u\n", i,
                    (unsigned long long)c->request, c->operation, c->target);
    }
}

static void step(sim_t *s)
{
    if (s->phase == PHASE_FAULTS && s->tick > s->opt.fault_ticks)
        enter_liveness(s);
    if (s->phase == PHASE_FAULTS)
        inject_faults(s);
    for (uint8_t i = 0; i < s->n && !s->failed; i++) {
        if (!s->up[i] && s->restart_at[i] <= s->tick)
            open_replica(s, i);
    }
    packet_t pk;
    while (!s->failed && net_pop(&s->net, s->tick, &pk)) {
        deliver(s, &pk);
        free(pk.data);
    }
    for (uint8_t i = 0; i < s->n; i++) {
        if (s->up[i])
            disk_complete(&s->disks[i], s->replicas[i], s->tick);
    }
    uint64_t realtime_us[SIM_REPLICAS_MAX];
    for (uint8_t i = 0; i < s->n; i++) {
        int64_t us = (int64_t)(s->tick * SIM_TICK_US) + 1000000000 + s->skew_us[i];
        realtime_us[i] = (uint64_t)us;
        if (s->up[i])
            sl_vsr_replica_tick(s->replicas[i], realtime_us[i]);
    }
    for (uint8_t i = 0; i < s->nclients; i++)
        client_tick(s, &s->clients[i]);
    if (s->opt.partitions && !s->failed)
        pgroups_step(s, realtime_us);
}

static void describe(sim_t *s, FILE *out);

/* Runs one seed; 0 when every check held. */
static int run_seed(const sim_options_t *opt, bool report)
{
    sim_t *s = calloc(1, sizeof(*s));
    sl_assert(s != NULL);
    sim_init(s, opt);
    uint64_t liveness_start = 0;
    for (s->tick = 1; !s->failed; s->tick++) {
        step(s);
        if (opt->dump_at != 0 && s->tick == opt->dump_at)
            describe(s, stderr);
        if (s->failed)
            break;
        if (s->phase == PHASE_LIVENESS) {
            if (liveness_start == 0)
                liveness_start = s->tick;
            if (converged(s)) {
                if (s->opt.partitions)
                    pgroups_check_final(s);
                break;
            }
            if (s->tick - liveness_start > opt->liveness_ticks)
                sim_fail(s, "LIVENESS: not converged %llu ticks after faults stopped",
                         (unsigned long long)opt->liveness_ticks);
        }
    }
    if (s->failed || report) {
        FILE *out = s->failed ? stderr : stdout;
        fprintf(out, "sim: seed %llu, %u replicas, %u clients: %s%s\n",
                (unsigned long long)opt->seed, s->n, s->nclients, s->failed ? "FAILED: " : "ok",
                s->failed ? s->failure : "");
        fprintf(out,
                "  %llu ops committed, %llu replies checked, %llu crashes, %llu wipes, "
                "%llu partitions, %llu corruptions, %llu ticks (%llu in liveness)\n",
                (unsigned long long)s->committed_max, (unsigned long long)s->stats.replies,
                (unsigned long long)s->stats.crashes, (unsigned long long)s->stats.wipes,
                (unsigned long long)s->stats.partitions, (unsigned long long)s->stats.corruptions,
                (unsigned long long)s->tick,
                (unsigned long long)(liveness_start ? s->tick - liveness_start : 0));
        if (s->opt.partitions)
            fprintf(out,
                    "  %u partition groups: %llu batches acknowledged, %llu take-overs, "
                    "%llu prepares refused, %llu accepted, heads %llu applied / %llu "
                    "journaled, %llu state transfers (%llu segment chunks served)\n",
                    s->npgroups, (unsigned long long)s->stats.batches_acked,
                    (unsigned long long)s->stats.take_overs, (unsigned long long)pgroups_refused(s),
                    (unsigned long long)s->stats.accepts,
                    (unsigned long long)s->stats.heads_applied,
                    (unsigned long long)s->stats.heads_journal,
                    (unsigned long long)s->stats.pstate_transfers,
                    (unsigned long long)s->stats.pchunks_served);
        describe(s, out);
        if (s->opt.partitions)
            pgroups_describe(s, out);
    }
    /* 1: a checker found a violation; 2: liveness only. */
    int rc = !s->failed ? 0 : strncmp(s->failure, "LIVENESS", 8) == 0 ? 2 : 1;
    sim_free(s);
    free(s);
    return rc;
}

/* --- many seeds
 * ------------------------------------------------------------------------------------ */

static const char *bug_names[] = {"commit-quorum", "nack-quorum", "canonical-by-op",
                                  "head-applied"};
#define BUGS (sizeof(bug_names) / sizeof(bug_names[0]))

static void print_replay(const sim_options_t *opt)
{
    fprintf(stderr, "sim: replay with: make sim SEED=%llu", (unsigned long long)opt->seed);
    bool args = false;
    if (opt->replicas) {
        fprintf(stderr, " SIM_ARGS='--replicas %u", opt->replicas);
        args = true;
    }
    for (unsigned i = 0; i < BUGS; i++) {
        if (opt->bugs & (1u << i)) {
            fprintf(stderr, "%s--bug %s", args ? " " : " SIM_ARGS='", bug_names[i]);
            args = true;
        }
    }
    if (opt->partitions) {
        fprintf(stderr, "%s--partitions", args ? " " : " SIM_ARGS='");
        args = true;
    }
    if (args)
        fputc('\'', stderr);
    fputc('\n', stderr);
}

/* The seeds of a many-seed run: ranges, in order (--seeds A-B, or a
 * --seed-list of seeds and ranges). */
#define SEED_RANGES_MAX 64
typedef struct seed_set {
    uint64_t first[SEED_RANGES_MAX];
    uint64_t last[SEED_RANGES_MAX];
    unsigned count;
    unsigned at; /* the range being walked */
    uint64_t next;
} seed_set_t;

static bool seed_set_add(seed_set_t *set, uint64_t first, uint64_t last)
{
    if (set->count == SEED_RANGES_MAX || first == 0 || last < first)
        return false;
    set->first[set->count] = first;
    set->last[set->count] = last;
    if (set->count++ == 0)
        set->next = first;
    return true;
}

/* "N,A-B,...": false on anything else. */
static bool seed_set_parse(seed_set_t *set, const char *list)
{
    const char *p = list;
    while (*p != '\0') {
        char *end;
        uint64_t first = strtoull(p, &end, 10), last = first;
        if (end == p)
            return false;
        if (*end == '-') {
            p = end + 1;
            last = strtoull(p, &end, 10);
            if (end == p)
                return false;
        }
        if (!seed_set_add(set, first, last) || (*end != ',' && *end != '\0'))
            return false;
        p = *end == ',' ? end + 1 : end;
    }
    return set->count > 0;
}

static bool seed_set_next(seed_set_t *set, uint64_t *seed)
{
    while (set->at < set->count && set->next > set->last[set->at]) {
        if (++set->at < set->count)
            set->next = set->first[set->at];
    }
    if (set->at == set->count)
        return false;
    *seed = set->next++;
    return true;
}

/* Runs the seeds of set in child processes, jobs at a time. Returns the
 * first failing seed's number via *failed_seed (0: none); a liveness stall
 * is a failure like any other (each child prints its own verdict). With
 * safety_only, only a checker violation or an assertion counts (an injected
 * bug must be caught by a check, not by a stall), and the run stops at the
 * first one. */
static uint64_t run_range(sim_options_t opt, seed_set_t *set, unsigned jobs, bool safety_only,
                          uint64_t *failed_seed, uint64_t *stalls)
{
    bool stop_on_failure = safety_only;
    *stalls = 0;
    uint64_t done = 0, failures = 0, next = 0;
    bool more = seed_set_next(set, &next);
    unsigned running = 0;
    pid_t pids[64];
    uint64_t seeds[64];
    *failed_seed = 0;
    time_t start = time(NULL);
    while (more || running > 0) {
        while (running < jobs && more && !(stop_on_failure && *failed_seed != 0)) {
            opt.seed = next;
            pid_t pid = fork();
            sl_assert(pid >= 0);
            if (pid == 0)
                _exit(run_seed(&opt, false));
            pids[running] = pid;
            seeds[running] = next;
            running++;
            more = seed_set_next(set, &next);
        }
        if (running == 0)
            break;
        int status;
        pid_t pid = wait(&status);
        if (pid < 0 && errno == EINTR)
            continue;
        sl_assert(pid > 0);
        unsigned k = 0;
        while (k < running && pids[k] != pid)
            k++;
        sl_assert(k < running);
        uint64_t seed = seeds[k];
        pids[k] = pids[running - 1];
        seeds[k] = seeds[running - 1];
        running--;
        done++;
        bool stalled = WIFEXITED(status) && WEXITSTATUS(status) == 2;
        *stalls += stalled ? 1 : 0;
        bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
        if (!ok) {
            failures++;
            if (WIFSIGNALED(status))
                fprintf(stderr, "sim: seed %llu FAILED: killed by signal %d (an assertion)\n",
                        (unsigned long long)seed, WTERMSIG(status));
            bool counts = !(safety_only && stalled);
            if (counts && (*failed_seed == 0 || seed < *failed_seed))
                *failed_seed = seed;
        }
        if (done % 1000 == 0)
            fprintf(stderr, "sim: %llu seeds run, %llu failed, %lld s\n", (unsigned long long)done,
                    (unsigned long long)failures, (long long)(time(NULL) - start));
    }
    return done;
}

static int usage(void)
{
    fprintf(stderr, "usage: sl_sim --seed N | --seeds A-B | --seeds COUNT | --seed-list N,A-B,...\n"
                    "       [--replicas 3|5]\n"
                    "       [--bug commit-quorum|nack-quorum|canonical-by-op|head-applied]\n"
                    "       [--jobs J] [--ticks FAULT_TICKS] [--expect-failure]\n"
                    "       [--dump-at TICK] [--partitions] [--verbose]\n");
    return 2;
}

int main(int argc, char **argv)
{
    sim_options_t opt = {.fault_ticks = 3000, .liveness_ticks = 3000};
    seed_set_t set;
    memset(&set, 0, sizeof(set));
    bool single = false, expect_failure = false;
    unsigned jobs = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--seed") && v) {
            opt.seed = strtoull(v, NULL, 0);
            single = true;
            i++;
        } else if (!strcmp(a, "--seeds") && v) {
            const char *dash = strchr(v, '-');
            uint64_t first = dash ? strtoull(v, NULL, 0) : 1;
            uint64_t last = dash ? strtoull(dash + 1, NULL, 0) : strtoull(v, NULL, 0);
            if (!seed_set_add(&set, first, last))
                return usage();
            i++;
        } else if (!strcmp(a, "--seed-list") && v) {
            if (!seed_set_parse(&set, v))
                return usage();
            i++;
        } else if (!strcmp(a, "--replicas") && v) {
            opt.replicas = (uint8_t)atoi(v);
            i++;
        } else if (!strcmp(a, "--bug") && v) {
            unsigned k = 0;
            while (k < BUGS && strcmp(v, bug_names[k]) != 0)
                k++;
            if (k == BUGS)
                return usage();
            opt.bugs |= 1u << k;
            i++;
        } else if (!strcmp(a, "--jobs") && v) {
            jobs = (unsigned)atoi(v);
            i++;
        } else if (!strcmp(a, "--ticks") && v) {
            opt.fault_ticks = strtoull(v, NULL, 0);
            i++;
        } else if (!strcmp(a, "--dump-at") && v) {
            opt.dump_at = strtoull(v, NULL, 0);
            i++;
        } else if (!strcmp(a, "--partitions")) {
            opt.partitions = true;
        } else if (!strcmp(a, "--expect-failure")) {
            expect_failure = true;
        } else if (!strcmp(a, "--verbose")) {
            opt.verbose = true;
        } else {
            return usage();
        }
    }
    if ((opt.replicas != 0 && opt.replicas != 3 && opt.replicas != 5) || jobs < 1 || jobs > 64)
        return usage();
    if (single) {
        int rc = run_seed(&opt, true);
        if (rc != 0)
            print_replay(&opt);
        return rc;
    }
    if (set.count == 0)
        return usage();
    uint64_t first = set.first[0], last = set.last[set.count - 1];
    time_t start = time(NULL);
    uint64_t failed_seed, stalls;
    uint64_t done = run_range(opt, &set, jobs, expect_failure, &failed_seed, &stalls);
    long long secs = (long long)(time(NULL) - start);
    if (expect_failure) {
        if (failed_seed == 0) {
            fprintf(stderr, "sim: injected bug NOT caught in seeds %llu-%llu\n",
                    (unsigned long long)first, (unsigned long long)last);
            return 1;
        }
        printf("sim: injected bug caught by a check at seed %llu (%llu seeds run, %lld s)\n",
               (unsigned long long)failed_seed, (unsigned long long)done, secs);
        return 0;
    }
    const char *sizes = opt.replicas == 3 ? "3" : opt.replicas == 5 ? "5" : "3 and 5";
    printf("sim: %llu seeds (%llu-%llu, %s replicas%s): %s, %llu stalled (liveness), %lld s\n",
           (unsigned long long)done, (unsigned long long)first, (unsigned long long)last, sizes,
           opt.partitions ? ", partition groups" : "",
           failed_seed == 0 ? "every seed passed" : "FAILED", (unsigned long long)stalls, secs);
    if (failed_seed != 0) {
        opt.seed = failed_seed;
        print_replay(&opt);
        return 1;
    }
    /* Neither a failed check nor a stall is tolerated: a stuck seed is a
     * liveness bug of the core (or of the simulator) to find and fix. */
    return 0;
}
