/* Partitions' first segments created off the loop thread (store/partition.h,
 * sl_partition_creator_t; docs/architecture.md, "First segments created off the loop"): a
 * ring of its own on which the directory's mkdirat and the two files' openat (O_CREAT |
 * O_EXCL) run as linked io_uring requests, executed by the kernel's io-wq workers, so the
 * loop thread spends no time in the file system's inode allocator. The ring's eventfd is a
 * completion source of the loop (sl_loop_event_t); each creation whose requests have all
 * completed is handed to sl_partition_created there. At most SL_SEGMENT_CREATE_MAX creations
 * are in flight; past that begin says no and the partition creates its files itself, as
 * without a creator. wait reaps completions until none is in flight, blocking the loop
 * thread for what remains of them: the store calls it before a close, a purge or a flush that
 * must not be deferred, so a delete never runs while its partition's files are created.
 * Loop thread only. Single-node servers only: a cluster's replicas create their segments on
 * the loop as before (their topics write an index entry per batch). */
#ifndef SL_SERVER_SEGMENT_CREATE_H
#define SL_SERVER_SEGMENT_CREATE_H

#include <stdbool.h>
#include <stdint.h>

#include "base/assert.h"
#include "store/partition.h"

#define SL_SEGMENT_CREATE_MAX 64u

typedef struct sl_segment_creator sl_segment_creator_t;

typedef struct sl_segment_create_stats {
    uint64_t begun;     /* creations started on the ring */
    uint64_t refused;   /* begin said no: SL_SEGMENT_CREATE_MAX in flight */
    uint64_t completed; /* creations handed back with both files */
    uint64_t fell_back; /* creations handed back without them (created on the loop then) */
    uint64_t waits;     /* calls of wait that found creations in flight */
} sl_segment_create_stats_t;

/* A creator for partitions under data_dir (whose components below data_dir are created
 * as needed). 0 or -errno (the ring or the eventfd could not be set up: the caller then
 * leaves partitions without a creator). */
SL_WUR int sl_segment_creator_create(const char *data_dir, sl_segment_creator_t **out);
/* Completes what is in flight, then frees the creator. */
void sl_segment_creator_destroy(sl_segment_creator_t *c);
/* The hook partitions are configured with (points into c). */
const sl_partition_creator_t *sl_segment_creator_hook(sl_segment_creator_t *c);
/* The eventfd to register as a loop completion source, and what its on_event calls. */
int sl_segment_creator_event_fd(const sl_segment_creator_t *c);
void sl_segment_creator_reap(sl_segment_creator_t *c);
/* Test hooks (server/test_faults.h): each creation first waits delay_ms on the ring (an
 * IORING_OP_TIMEOUT linked in front, off the loop thread; 0: none); on_loop: begin says no,
 * so the partitions create their files on the loop through src/base/io.h, where an armed
 * fault plan sees them. */
void sl_segment_creator_set_test(sl_segment_creator_t *c, uint32_t delay_ms, bool on_loop);
/* Stop taking creations (begin says no): set while the server stops. */
void sl_segment_creator_close_door(sl_segment_creator_t *c);
uint32_t sl_segment_creator_in_flight(const sl_segment_creator_t *c);
void sl_segment_creator_stats(const sl_segment_creator_t *c, sl_segment_create_stats_t *out);

#endif
