/* A consensus replica's storage held in memory (vsr/replica.h,
 * sl_vsr_storage_t): the journal ring, the state record and the last two
 * checkpoints' artifacts, in malloc'd copies, without faults. It is what
 * sluiced runs the metadata group on until the durable storage over
 * metadata/ (server/vsr_storage.h) is merged: swapping it is the one call in
 * server/cluster.c that creates the storage.
 *
 * Nothing survives the process: a restarted node has a lost disk, which
 * the core handles (it rejoins without voting and catches up by repair or
 * state transfer; docs/architecture.md, "Restarts and lost disks").
 *
 * Journal writes land at once, but their completions wait until the host
 * calls sl_vsr_memstore_complete after the replica call that made them
 * returned: the interface must not call back into the replica from inside a
 * storage call. Loop thread only. */
#ifndef SL_SERVER_VSR_MEMSTORE_H
#define SL_SERVER_VSR_MEMSTORE_H

#include <stdint.h>

#include "base/assert.h"
#include "vsr/replica.h"

typedef struct sl_vsr_memstore sl_vsr_memstore_t;

/* slots: the replica's cfg.journal_slots. 0 or -ENOMEM. */
SL_WUR int sl_vsr_memstore_create(uint32_t slots, sl_vsr_memstore_t **out);
void sl_vsr_memstore_destroy(sl_vsr_memstore_t *ms);
sl_vsr_storage_t sl_vsr_memstore_iface(sl_vsr_memstore_t *ms);
/* Reports every write completed so far to r (write_done, ok), including
 * those the reports themselves cause. Returns how many were reported. */
uint32_t sl_vsr_memstore_complete(sl_vsr_memstore_t *ms, sl_vsr_replica_t *r);

#endif
