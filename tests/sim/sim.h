/* The consensus simulator (tests/sim): one process runs a cluster of
 * src/vsr replicas and simulated clients over a simulated network, disk and
 * clock, every choice drawn from one seeded PRNG, so a seed replays exactly.
 * In the spirit of TigerBeetle's VOPR and FoundationDB's simulation (ideas,
 * not code).
 *
 * sim.c      the world: the run loop, the fault schedule, liveness, the CLI
 * net.c      packets: loss, delay, duplication, reordering, partitions
 * disk.c     one replica's storage: a journal ring that tears, loses and
 *            corrupts; the state record; checkpoint artifacts; wiping
 * machine.c  the replicated test machine (a small key-value store)
 * client.c   lockstep clients: register, requests, retries, evictions
 * check.c    the checkers run at every apply, restore and reply
 * partition.c  --partitions: sessionless partition groups beside the first
 *            group on the same nodes, network and disks (issue 13) */
#ifndef SL_SIM_H
#define SL_SIM_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "base/bytes.h"
#include "vsr/replica.h"

/* --- PRNG: xoshiro256** seeded through splitmix64 ------------------------------------------ */

typedef struct prng {
    uint64_t s[4];
} prng_t;

static inline uint64_t prng_rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

static inline uint64_t prng_next(prng_t *p)
{
    uint64_t result = prng_rotl(p->s[1] * 5, 7) * 9;
    uint64_t t = p->s[1] << 17;
    p->s[2] ^= p->s[0];
    p->s[3] ^= p->s[1];
    p->s[1] ^= p->s[2];
    p->s[0] ^= p->s[3];
    p->s[2] ^= t;
    p->s[3] = prng_rotl(p->s[3], 45);
    return result;
}

static inline void prng_seed(prng_t *p, uint64_t seed)
{
    for (int i = 0; i < 4; i++) {
        seed += 0x9E3779B97F4A7C15ull;
        uint64_t z = seed;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        p->s[i] = z ^ (z >> 31);
    }
}

/* Uniform in [0, n); n > 0. */
static inline uint64_t prng_below(prng_t *p, uint64_t n)
{
    return prng_next(p) % n;
}

/* Uniform in [lo, hi]. */
static inline uint64_t prng_range(prng_t *p, uint64_t lo, uint64_t hi)
{
    return lo + prng_below(p, hi - lo + 1);
}

/* True with probability ppm / 1e6. */
static inline bool prng_chance(prng_t *p, uint32_t ppm)
{
    return prng_below(p, 1000000) < ppm;
}

/* --- limits ------------------------------------------------------------------------------------
 */

#define SIM_REPLICAS_MAX  5
#define SIM_CLIENTS_MAX   8
#define SIM_PGROUPS_MAX   4 /* partition groups (--partitions) */
#define SIM_PCLIENTS_MAX  8 /* their producers */
#define SIM_PAYLOAD_MAX   24
#define SIM_NODES_MAX     (SIM_REPLICAS_MAX + SIM_CLIENTS_MAX + SIM_PCLIENTS_MAX)
#define SIM_KEYS          8
#define SIM_ARTIFACT_SETS 3
/* Simulated time: one tick is 10 ms. */
#define SIM_TICK_US 10000u

typedef struct sim sim_t;

/* --- network -------------------------------------------------------------------------------------
 */

typedef struct packet {
    uint64_t at;  /* delivery tick */
    uint64_t seq; /* send order: ties deliver in it */
    uint8_t from;
    uint8_t to; /* node: replicas 0..n-1, then clients */
    uint32_t len;
    uint8_t *data;
} packet_t;

typedef struct net {
    packet_t *heap;
    size_t len;
    size_t cap;
    uint64_t seq;
    /* per run */
    uint32_t loss_ppm;
    uint32_t dup_ppm;
    uint32_t delay_min;
    uint32_t delay_max;
    bool blocked[SIM_NODES_MAX][SIM_NODES_MAX]; /* from -> to cut */
    uint64_t sent;
    uint64_t dropped;
} net_t;

void net_init(net_t *n);
void net_free(net_t *n);
/* Queues a copy, subject to the faults in force. */
void net_send(sim_t *s, uint8_t from, uint8_t to, const uint8_t *data, uint32_t len);
/* The next packet due at or before tick (the caller frees data), or false. */
bool net_pop(net_t *n, uint64_t tick, packet_t *out);

/* --- disk
 * ------------------------------------------------------------------------------------------- */

typedef struct disk_slot {
    uint8_t *data; /* durable bytes; len 0: never written */
    uint32_t len;
    bool pending; /* a write in flight */
    uint8_t *pdata;
    uint32_t plen;
    uint64_t done_at;
} disk_slot_t;

typedef struct disk_artifacts {
    bool used;
    uint64_t op;
    uint64_t seq;
    uint8_t *bytes[2];
    size_t len[2];
} disk_artifacts_t;

typedef struct disk {
    sim_t *sim;
    uint8_t replica;
    uint32_t slots_count;
    disk_slot_t *slots;
    uint8_t *state;
    size_t state_len;
    disk_artifacts_t artifacts[SIM_ARTIFACT_SETS];
    uint64_t artifact_seq;
    bool fault_prone; /* may tear, corrupt and be wiped (at most f replicas a run) */
    void *host;       /* partition groups: the replica's pxfer_t (its transfer hooks) */
} disk_t;

void disk_init(disk_t *d, sim_t *s, uint8_t replica, uint32_t slots, bool fault_prone);
void disk_free(disk_t *d);
sl_vsr_storage_t disk_storage(disk_t *d);
/* Completes the writes due at tick (the replica is up). */
void disk_complete(disk_t *d, sl_vsr_replica_t *r, uint64_t tick);
/* The replica crashed: every write in flight lands, is lost or tears. */
void disk_crash(disk_t *d);
void disk_wipe(disk_t *d);
/* Flips a byte of a durable journal entry or artifact; false when there was
 * nothing to corrupt. */
bool disk_corrupt(disk_t *d);

/* --- the replicated machine
 * ----------------------------------------------------------------------------- */

typedef struct machine {
    sim_t *sim;
    uint8_t replica;
    uint64_t applied; /* op of the last applied prepare */
    uint64_t history; /* hash of everything applied */
    uint64_t values[SIM_KEYS];
} machine_t;

void machine_init(machine_t *m, sim_t *s, uint8_t replica);
sl_vsr_machine_t machine_iface(machine_t *m);
uint64_t machine_digest(const machine_t *m);

/* Request bodies: [kind u8][key u8][value u64]. */
enum { OP_SET = 1, OP_ADD = 2, OP_GET = 3 };
#define SIM_OPERATION 128u /* an operation byte of the metadata range */
#define SIM_BODY_LEN  10u

/* --- clients
 * -------------------------------------------------------------------------------------------- */

typedef struct client {
    uint8_t index;
    uint8_t node;
    sl_u128_t id;
    bool registered;
    uint64_t session;
    uint64_t next_request;
    uint32_t requests_left;
    /* the request in flight (lockstep) */
    bool outstanding;
    uint8_t operation;
    uint64_t request;
    uint8_t body[SIM_BODY_LEN];
    uint32_t body_len;
    uint64_t sent_at;
    uint64_t retry_at; /* a transient answer: resend then (0: none) */
    uint8_t target;
    uint64_t wake_at;
    /* a request parked while the client registers again */
    bool parked;
    uint64_t parked_request;
    uint8_t parked_body[SIM_BODY_LEN];
    uint64_t completed;
    /* checker: op at which each request number committed */
    uint64_t *committed_ops;
    uint64_t committed_cap;
} client_t;

void client_init(client_t *c, sim_t *s, uint8_t index);
void client_tick(sim_t *s, client_t *c);
void client_on_frame(sim_t *s, client_t *c, const uint8_t *frame, uint32_t len);

/* --- the checker
 * ---------------------------------------------------------------------------------------------- */

typedef struct committed {
    bool have;
    uint64_t content; /* hash of the prepare's fields and body */
    uint64_t reply;   /* hash of the reply body */
    uint32_t reply_len;
    uint64_t digest; /* machine digest after applying */
    sl_u128_t client;
    uint64_t request;
    uint8_t operation;
} committed_t;

void check_apply(sim_t *s, uint8_t replica, const sl_vsr_prepare_t *p, sl_span_t body,
                 sl_span_t reply, uint64_t digest);
void check_restore(sim_t *s, uint8_t replica, uint64_t op, uint64_t digest);
void check_reset(sim_t *s, uint8_t replica);
void check_client_reply(sim_t *s, const client_t *c, uint64_t op, uint64_t request,
                        uint8_t operation, sl_span_t body);

/* --- partition groups (partition.c)
 * ----------------------------------------------------------------------- */

/* A partition replica's machine: a byte log of batches. The primary's
 * prepare hook stamps each batch [base u64][prepare timestamp u64][payload]
 * with its base offset (the end of the log after op - 1: the head's end, or
 * the applied end); accept re-derives both and refuses a mismatch; apply
 * appends the payload and checks the chain. */
typedef struct pmachine {
    sim_t *sim;
    uint8_t group;
    uint8_t replica;
    uint64_t applied; /* op of the last applied prepare */
    uint64_t history; /* hash of everything applied */
    uint8_t *log;
    uint64_t len;
    uint64_t cap;
} pmachine_t;

/* A partition replica's state transfer through the core's host hooks
 * (sl_vsr_storage_t offer / serve / stage / install), shaped like sluiced's:
 * the byte log is cut into "segments" of `segment` bytes, each offered as a
 * SEGMENT_LOG artifact (frontier = its base) sealed at the checkpoint's log
 * length while the log goes on growing behind it, plus a CONSUMER_OFFSETS
 * artifact (the checkpoint's applied op, history and log length). What is
 * staged lives in memory a crash drops (sluiced's staging directory that a
 * restart discards). */
typedef struct pxfer {
    pmachine_t *m;
    uint32_t segment;
    /* the last offer */
    uint64_t offer_op; /* 0: none */
    sl_vsr_artifact_t *offer;
    uint32_t offer_count, offer_cap;
    uint8_t offsets[24];
    /* what is staged */
    uint64_t stage_op;
    uint8_t *stage;
    uint64_t stage_len, stage_cap;
    uint8_t stage_offsets[24];
    bool stage_have_offsets;
    uint32_t stage_next; /* the lowest artifact index that may come next */
    /* Installs answered SL_VSR_INSTALL_PENDING before the staged set installs,
     * as sluiced's do while a worker verifies the staged segments. */
    uint32_t stage_pending;
} pxfer_t;

/* The checker's record of one op of a partition group (the first apply). */
typedef struct pop_record {
    bool have;
    uint64_t content; /* prepare fields and body */
    uint64_t base;
    uint64_t digest; /* machine state after it */
    sl_u128_t client;
    uint64_t request;
} pop_record_t;

/* A batch a producer got acknowledged: where the reply says it is. */
typedef struct pack {
    uint64_t base;
    uint32_t len;
    uint8_t client;
    uint64_t request;
} pack_t;

typedef struct pbus_ctx {
    sim_t *sim;
    uint8_t group;
    uint8_t replica;
} pbus_ctx_t;

typedef struct pgroup {
    uint8_t index;
    sl_vsr_config_t cfg;
    sl_vsr_replica_t *replicas[SIM_REPLICAS_MAX];
    disk_t disks[SIM_REPLICAS_MAX];
    pmachine_t machines[SIM_REPLICAS_MAX];
    sl_vsr_bus_t buses[SIM_REPLICAS_MAX];
    pbus_ctx_t bus_ctx[SIM_REPLICAS_MAX];
    pxfer_t xfers[SIM_REPLICAS_MAX];
    /* checker */
    pop_record_t *ops;
    uint64_t ops_cap;
    uint64_t committed_max;
    uint64_t last_applied[SIM_REPLICAS_MAX];
    uint8_t *truth; /* the log as first applied, byte for byte */
    uint64_t truth_len;
    uint64_t truth_cap;
    pack_t *acks;
    size_t nacks;
    size_t acks_cap;
} pgroup_t;

/* A producer of one partition group: no Register, lockstep, at-least-once
 * (a retried batch may commit twice; each copy is a batch of its own). */
typedef struct pclient {
    uint8_t index;
    uint8_t node;
    uint8_t group;
    sl_u128_t id;
    uint64_t next_request;
    uint32_t requests_left;
    bool outstanding;
    uint64_t request;
    uint8_t body[SIM_PAYLOAD_MAX];
    uint32_t body_len;
    uint64_t sent_at;
    uint64_t retry_at;
    uint64_t wake_at;
    uint8_t target;
} pclient_t;

void pgroups_init(sim_t *s, const bool *fault_prone);
void pgroups_free(sim_t *s);
void pgroups_open(sim_t *s, uint8_t replica);
void pgroups_crash(sim_t *s, uint8_t replica, bool wipe);
/* A fault-prone node's disk: flips a byte in one of its partition groups'. */
bool pgroups_corrupt(sim_t *s, uint8_t replica);
/* A frame for replica `to` from a replica: delivered to its partition
 * group's replica when its group is one; false for the first group's. */
bool pgroups_route(sim_t *s, uint8_t to, const uint8_t *frame, uint32_t len);
/* Whether node `from` is a producer; then its request is delivered. */
bool pgroups_request(sim_t *s, uint8_t from, uint8_t to, const uint8_t *frame, uint32_t len);
void pgroups_client_frame(sim_t *s, uint8_t node, const uint8_t *frame, uint32_t len);
/* Disk completions, ticks, producers and random take-overs of one tick. */
void pgroups_step(sim_t *s, uint64_t realtime_us[SIM_REPLICAS_MAX]);
bool pgroups_converged(sim_t *s);
/* At convergence: every acknowledged batch on a quorum, byte for byte. */
void pgroups_check_final(sim_t *s);
void pgroups_describe(sim_t *s, FILE *out);
/* Prepares the partition groups' accept hooks refused (closed replicas too). */
uint64_t pgroups_refused(sim_t *s);

/* --- the world
 * -----------------------------------------------------------------------------------------------
 */

typedef struct sim_options {
    uint64_t seed;
    uint8_t replicas; /* 3 or 5; 0: chosen by the seed */
    uint32_t bugs;    /* SL_VSR_BUG_* */
    bool verbose;
    uint64_t fault_ticks;    /* length of the fault phase */
    uint64_t liveness_ticks; /* bound on recovery once faults stop */
    uint64_t dump_at;        /* --dump-at: print every replica's state at this tick */
    bool partitions;         /* --partitions: partition groups beside the first group */
} sim_options_t;

enum { PHASE_FAULTS, PHASE_LIVENESS };

struct sim {
    sim_options_t opt;
    prng_t prng;
    uint64_t tick;
    int phase;
    uint8_t n;
    sl_vsr_config_t cfg;

    sl_vsr_replica_t *replicas[SIM_REPLICAS_MAX];
    bool up[SIM_REPLICAS_MAX];
    uint64_t restart_at[SIM_REPLICAS_MAX];
    int64_t skew_us[SIM_REPLICAS_MAX];
    disk_t disks[SIM_REPLICAS_MAX];
    machine_t machines[SIM_REPLICAS_MAX];
    sl_vsr_bus_t buses[SIM_REPLICAS_MAX];

    net_t net;
    client_t clients[SIM_CLIENTS_MAX];
    uint8_t nclients;

    /* --partitions */
    pgroup_t pgroups[SIM_PGROUPS_MAX];
    uint8_t npgroups;
    pclient_t pclients[SIM_PCLIENTS_MAX];
    uint8_t npclients;
    uint32_t take_over_ppm;

    /* checker state */
    committed_t *committed;
    uint64_t committed_cap;
    uint64_t committed_max;
    uint64_t last_applied[SIM_REPLICAS_MAX];

    /* fault schedule of this run */
    uint32_t crash_ppm;
    uint32_t partition_ppm;
    uint32_t corrupt_ppm;
    uint64_t partition_until;

    /* outcome */
    bool failed;
    char failure[512];
    struct {
        uint64_t crashes, wipes, partitions, corruptions, replies, view_changes;
        uint64_t state_transfers;
        uint64_t take_overs, batches_acked, prepares_refused;
        /* partition groups: prepare hook calls whose head was the applied
         * state / a journaled body; accept calls that said yes; state
         * transfers installed */
        uint64_t heads_applied, heads_journal, accepts, pstate_transfers, pchunks_served;
    } stats;
};

/* Records the first violation of a run (later ones are ignored). */
void sim_fail(sim_t *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sim_log(sim_t *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
