/* The chaos run (tests/chaos, `make chaos`, docs/reliability.md "Chaos"):
 * the load it puts on a 3-node cluster and the checks at the end. The
 * workers are threads of this process; each holds its own libsluice
 * client, settled on the leader, and opens a new one (through any node)
 * after any failure, so a refusal or a dead node costs a reconnect, never
 * the run. What each worker had acknowledged is kept for the checks. */
#ifndef SL_CHAOS_H
#define SL_CHAOS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "cluster.h"

#define CHAOS_STREAM     "chaos"
#define CHAOS_PARTITIONS 2u
#define CHAOS_GROUP      "chaos-readers"
#define CHAOS_TOPICS     2

/* One batch the cluster acknowledged: messages first .. first + count - 1
 * at offsets base_offset .. of that partition. */
typedef struct chaos_batch {
    uint32_t partition;
    uint32_t count;
    uint64_t base_offset;
    uint64_t first;
} chaos_batch_t;

/* Every live node's client port, for workers to dial (read without a
 * lock: a stale port only costs a refused dial). */
typedef struct chaos_load chaos_load_t;

typedef struct chaos_producer {
    chaos_load_t *load;
    const char *topic;
    uint64_t tag; /* the message ids' high half: which topic a message is of */
    pthread_t thread;
    uint64_t rng;
    uint64_t next_number, batches; /* kept across chaos_stop / chaos_start */
    chaos_batch_t *acked;          /* the thread's own until joined */
    size_t acked_count, acked_cap;
    atomic_uint_fast64_t acks;   /* batches acknowledged */
    atomic_uint_fast64_t errors; /* sends that failed (each retried) */
    atomic_int last_error;       /* the last failure's code (negative), 0 before any */
} chaos_producer_t;

typedef struct chaos_consumer {
    chaos_load_t *load;
    pthread_t thread;
    atomic_uint_fast64_t committed[CHAOS_PARTITIONS]; /* highest offset stored with an ack, +1 */
    atomic_uint_fast64_t commits, polled, malformed, errors;
} chaos_consumer_t;

/* Metadata writes: stream chaos-m-<n> created, then deleted 8 numbers
 * later; what was acknowledged of each. */
#define CHAOS_META_MAX 100000u
typedef struct chaos_meta {
    chaos_load_t *load;
    pthread_t thread;
    uint8_t state[CHAOS_META_MAX]; /* CHAOS_META_* bits */
    atomic_uint_fast64_t next;     /* numbers below were tried */
    uint64_t number;               /* the thread's place, kept across chaos_start */
    bool deleting;
    atomic_uint_fast64_t acks, errors;
} chaos_meta_t;

enum {
    CHAOS_META_CREATED = 1, /* the create was acknowledged */
    CHAOS_META_DELETE_TRIED = 2,
    CHAOS_META_DELETED = 4, /* the delete was acknowledged */
};

struct chaos_load {
    th_cluster_t *cluster;
    atomic_bool stop;
    chaos_producer_t producers[CHAOS_TOPICS];
    chaos_consumer_t consumer;
    chaos_meta_t meta;
};

/* The topics (one with enforce_fsync) and the consumer group, on the
 * leader; false when the cluster does not take them. */
bool chaos_setup(chaos_load_t *load, th_cluster_t *c, uint64_t seed);
/* Starts the workers; after chaos_stop, starts them again where they were. */
void chaos_start(chaos_load_t *load);
void chaos_stop(chaos_load_t *load);
/* Acknowledgements of every kind so far (a rising count: the cluster
 * commits). */
uint64_t chaos_acks(chaos_load_t *load, uint64_t *messages, uint64_t *meta, uint64_t *offsets);

/* What the checks found. */
typedef struct chaos_result {
    uint64_t batches, messages;     /* acknowledged */
    uint64_t lost, wrong;           /* acknowledged messages absent, or other bytes there */
    uint64_t gaps, partition_msgs;  /* offsets not contiguous; messages the partitions hold */
    uint64_t foreign;               /* messages that are no numbered message of the topic */
    uint64_t offsets_back;          /* stored group offsets below one acknowledged */
    uint64_t meta_acked, meta_lost; /* acknowledged creates (deletes) not seen (still seen) */
    uint64_t meta_diverged;         /* nodes whose chaos streams differ from the leader's */
} chaos_result_t;

/* Checks everything acknowledged against the leader's answers (after
 * chaos_stop). messages: the message and offset checks count, so a
 * shortfall is asked again for 20 s (the leader may apply late) and each
 * backup is asked too; else they are made once and only reported. */
void chaos_check(chaos_load_t *load, int leader, bool messages, chaos_result_t *out);
/* The group offsets on the leader against the acknowledged ones now;
 * returns how many went back. */
uint64_t chaos_check_offsets(chaos_load_t *load, int leader);

void chaos_pause_ms(long ms);

#endif
