/* The bound on memory held by unflushed journals (store/partition.h, sl_journal_bound_t): the
 * byte count and the list of partitions with journaled data, oldest first. Flushing early when
 * the bound is passed is append.c's (it owns the flush). */
#include "store/partition_internal.h"

#include <string.h>

void sl_journal_bound_init(sl_journal_bound_t *b, uint64_t max)
{
    memset(b, 0, sizeof(*b));
    b->max = max;
}

void sl_journal_held_add(sl_partition_t *p, size_t held)
{
    p->journal_held += held;
    if (p->cfg.bound)
        p->cfg.bound->held += held;
}

void sl_journal_held_sub(sl_partition_t *p, size_t held)
{
    sl_assert(p->journal_held >= held);
    p->journal_held -= held;
    if (p->cfg.bound) {
        sl_assert(p->cfg.bound->held >= held);
        p->cfg.bound->held -= held;
    }
}

static void link_newest(sl_journal_bound_t *b, sl_partition_t *p)
{
    p->bound_older = b->newest;
    p->bound_newer = NULL;
    if (b->newest)
        b->newest->bound_newer = p;
    else
        b->oldest = p;
    b->newest = p;
    b->partitions++;
    p->bound_listed = true;
}

static void unlink_partition(sl_journal_bound_t *b, sl_partition_t *p)
{
    if (p->bound_older)
        p->bound_older->bound_newer = p->bound_newer;
    else
        b->oldest = p->bound_newer;
    if (p->bound_newer)
        p->bound_newer->bound_older = p->bound_older;
    else
        b->newest = p->bound_older;
    p->bound_older = p->bound_newer = NULL;
    sl_assert(b->partitions > 0);
    b->partitions--;
    p->bound_listed = false;
}

void sl_journal_bound_update(sl_partition_t *p)
{
    /* An empty journal holds nothing. */
    sl_assert(p->journal_count > 0 || p->journal_held == 0);
    sl_journal_bound_t *b = p->cfg.bound;
    if (!b)
        return;
    bool want = p->journal_count > 0;
    if (want && !p->bound_listed)
        link_newest(b, p);
    else if (!want && p->bound_listed)
        unlink_partition(b, p);
}
