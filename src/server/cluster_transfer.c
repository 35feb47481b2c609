/* State transfer of a partition group's checkpoint: segments and consumer offsets
 * (server/cluster_transfer.h). */
#include "server/cluster_transfer.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <sluice/error.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/clock.h"
#include "base/io.h"
#include "base/log.h"
#include "base/xxh3.h"
#include "server/cluster_snapshot.h"
#include "store/offsets.h"
#include "store/segment.h"

/* The CONSUMER_OFFSETS artifact a receiver accepts: a snapshot of 65536 offsets is 850 kB. */
#define OFFSETS_MAX (16u << 20)
/* Bytes read at a time to hash a segment. */
#define HASH_CHUNK (1u << 20)

/* A segment of an offer being prepared: its length sealed when the offer was asked for. */
typedef struct hash_item {
    uint64_t start, len, sum;
    bool known; /* hashed: by an earlier offer, or by the job */
} hash_item_t;

/* The hash of the newest segment as far as it was hashed, so the next offer hashes only
 * what was appended since (64-byte aligned for the state; owned by the transfer state, or
 * lent to the job that hashes). */
typedef struct hash_tail {
    sl_xxh3_state_t state;
    uint64_t start, len; /* len 0: nothing hashed */
    /* The files it was hashed from: a purge (a new generation) or an install (a new epoch)
     * may put other bytes under the same segment name. */
    uint64_t generation, epoch;
} hash_tail_t;

/* The hashing of an offer's segments on the worker pool (server/work_pool.h): the loop asks
 * for an offer, the segments are listed at their lengths then, and the offer is ready once a
 * worker has read and hashed the ones not hashed before. The job carries copies (the
 * directory, the items) and the tail it was lent; nothing of the partition. */
typedef struct hash_job {
    sl_work_t work;
    struct sl_ptransfer *owner; /* loop thread only; NULL once the transfer state is freed */
    uint64_t op;
    uint64_t generation; /* the partition's purge generation when the lengths were taken */
    uint64_t epoch;      /* the transfer state's, when they were */
    bool ok;             /* every item hashed */
    hash_tail_t *tail;   /* lent: the newest segment's hash so far, or NULL */
    char dir[PATH_MAX];
    uint32_t count;
    hash_item_t items[];
} hash_job_t;

/* A staged segment complete on disk, verified against its manifest entry. */
typedef struct verify_item {
    uint64_t start, len, checksum;
    bool ok;
} verify_item_t;

/* The verification of staged segments on the worker pool: the loop stages chunk after chunk,
 * and each segment whose last chunk is written is re-read and hashed by a worker (what is
 * verified is what is on disk) while the next ones arrive; install waits for it. The job
 * carries copies (the staging directory, the items); nothing of the partition. */
typedef struct verify_job {
    sl_work_t work;
    struct sl_ptransfer *owner; /* loop thread only; NULL once the transfer state is freed */
    uint64_t seq;               /* the staging it verifies (stage_seq) */
    uint64_t op;
    char dir[PATH_MAX];
    uint32_t count;
    verify_item_t items[];
} verify_job_t;

typedef struct offer {
    uint64_t op; /* 0: none */
    sl_vsr_artifact_t *list;
    uint32_t count, cap;
    sl_buf_t offsets; /* the CONSUMER_OFFSETS artifact's bytes */
} offer_t;

struct sl_ptransfer {
    sl_partition_t *p;
    uint64_t group;
    uint64_t created_revision;
    bool enforce_fsync;
    offer_t offers[2]; /* the newest and the one before */
    uint32_t newest;
    sl_buf_t chunk; /* what serve returns */
    /* Hashing off the loop (NULL pool: on the loop, as a test harness without one has it). */
    sl_work_pool_t *pool;
    hash_job_t *job;   /* hashing on a worker, or NULL */
    hash_job_t *ready; /* hashed, not yet offered, or NULL */
    hash_tail_t *tail; /* NULL while lent to the job (or out of memory) */
    uint64_t epoch;    /* installs received: a job of an older epoch hashed replaced files */
    /* receiving */
    bool receiving;
    uint64_t stage_op;
    int stage_fd; /* the segment being staged, -1: none */
    uint64_t stage_start;
    sl_buf_t stage_offsets;
    bool have_offsets;
    uint32_t next_index;
    /* Verifying staged segments off the loop (NULL pool: on the loop, at their last chunk). */
    uint64_t stage_seq;     /* stagings begun: a job of an older one is let go */
    verify_job_t *verify;   /* on a worker, or NULL */
    verify_item_t *waiting; /* complete segments not handed to a worker yet */
    uint32_t waiting_count, waiting_cap;
    uint32_t verified;  /* segments of this staging that verified */
    bool verify_failed; /* one did not: the transfer starts over */
    bool install_waits; /* install answered pending (logged once a staging) */
};

static bool staging_path(const sl_ptransfer_t *x, char out[PATH_MAX])
{
    int n = snprintf(out, PATH_MAX, "%s/%s", sl_partition_dir(x->p), SL_PTRANSFER_STAGING);
    return n > 0 && n < PATH_MAX;
}

sl_ptransfer_t *sl_ptransfer_new(sl_partition_t *p, uint64_t group, uint64_t created_revision,
                                 bool enforce_fsync, sl_work_pool_t *pool)
{
    sl_ptransfer_t *x = calloc(1, sizeof(*x));
    if (!x)
        return NULL;
    x->p = p;
    x->group = group;
    x->created_revision = created_revision;
    x->enforce_fsync = enforce_fsync;
    x->stage_fd = -1;
    x->pool = pool;
    x->tail = aligned_alloc(_Alignof(hash_tail_t), sizeof(hash_tail_t));
    if (x->tail)
        memset(x->tail, 0, sizeof(*x->tail));
    for (int i = 0; i < 2; i++)
        sl_buf_init(&x->offers[i].offsets, OFFSETS_MAX);
    sl_buf_init(&x->chunk, 0);
    sl_buf_init(&x->stage_offsets, OFFSETS_MAX);
    return x;
}

void sl_ptransfer_free(sl_ptransfer_t *x)
{
    if (!x)
        return;
    for (int i = 0; i < 2; i++) {
        free(x->offers[i].list);
        sl_buf_free(&x->offers[i].offsets);
    }
    if (x->stage_fd >= 0)
        sl_io_close(x->stage_fd);
    if (x->job)
        x->job->owner = NULL; /* the pool hands it back to hash_done, which frees it */
    if (x->verify)
        x->verify->owner = NULL; /* likewise, to verify_done */
    free(x->waiting);
    if (x->ready)
        free(x->ready->tail);
    free(x->ready);
    free(x->tail);
    sl_buf_free(&x->chunk);
    sl_buf_free(&x->stage_offsets);
    free(x);
}

bool sl_ptransfer_receiving(const sl_ptransfer_t *x)
{
    return x && x->receiving;
}

/* --- serving ---------------------------------------------------------------------------- */

static int open_segment(const sl_ptransfer_t *x, uint64_t start)
{
    char path[PATH_MAX];
    if (!sl_segment_path(path, sl_partition_dir(x->p), start, SL_SEGMENT_LOG_EXT))
        return -ENAMETOOLONG;
    return sl_io_open(path, O_RDONLY | O_CLOEXEC, 0);
}

/* XXH3-64 of the first len bytes of segment start in dir, through buf (HASH_CHUNK bytes),
 * continuing tail when it holds that segment's first tail->len <= len bytes; the tail then
 * holds the hash up to len. false when the bytes cannot be read. Runs on a worker (or on
 * the loop without a pool): it touches only its arguments. */
static bool hash_segment(const char *dir, uint64_t start, uint64_t len, uint8_t *buf,
                         hash_tail_t *tail, uint64_t *out)
{
    char path[PATH_MAX];
    if (!sl_segment_path(path, dir, start, SL_SEGMENT_LOG_EXT))
        return false;
    int fd = sl_io_open(path, O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0)
        return false;
    sl_xxh3_state_t own;
    sl_xxh3_state_t *st = &own;
    uint64_t at = 0;
    if (tail && tail->len > 0 && tail->start == start && tail->len <= len) {
        st = &tail->state;
        at = tail->len;
    } else {
        if (tail) {
            st = &tail->state;
            tail->start = start;
            tail->len = 0;
        }
        sl_xxh3_reset(st);
    }
    bool ok = true;
    while (ok && at < len) {
        size_t n = len - at < HASH_CHUNK ? (size_t)(len - at) : HASH_CHUNK;
        ok = sl_io_pread(fd, buf, n, (off_t)at) == (ssize_t)n;
        if (ok)
            sl_xxh3_update(st, buf, n);
        at += ok ? n : 0;
    }
    sl_io_close(fd);
    if (tail)
        tail->len = ok ? len : 0;
    *out = sl_xxh3_digest(st);
    return ok;
}

/* The hash of a segment as an earlier offer sealed it, or a hashed job not offered yet,
 * when it is the same length. */
static bool known_hash(const sl_ptransfer_t *x, uint64_t start, uint64_t len, uint64_t *out)
{
    for (int i = 0; i < 2; i++) {
        const offer_t *o = &x->offers[i];
        for (uint32_t k = 0; o->op != 0 && k < o->count; k++) {
            const sl_vsr_artifact_t *a = &o->list[k];
            if (a->kind == SL_VSR_ARTIFACT_SEGMENT_LOG && a->frontier == start && a->len == len) {
                *out = a->checksum;
                return true;
            }
        }
    }
    for (uint32_t k = 0; x->ready && k < x->ready->count; k++) {
        const hash_item_t *h = &x->ready->items[k];
        if (h->known && h->start == start && h->len == len) {
            *out = h->sum;
            return true;
        }
    }
    return false;
}

/* Whether segment start of the partition is still there with at least len bytes. */
static bool segment_holds(const sl_ptransfer_t *x, uint64_t start, uint64_t len)
{
    char path[PATH_MAX];
    struct stat st;
    return sl_segment_path(path, sl_partition_dir(x->p), start, SL_SEGMENT_LOG_EXT) &&
           stat(path, &st) == 0 && (uint64_t)st.st_size >= len;
}

/* An offer kept for op whose segments are all still there at their sealed lengths: a second
 * requester of the same checkpoint gets it unchanged, so the first one's artifact indexes and
 * lengths stay what it was told. */
static bool offer_intact(const sl_ptransfer_t *x, const offer_t *o)
{
    for (uint32_t k = 0; k < o->count; k++) {
        const sl_vsr_artifact_t *a = &o->list[k];
        if (a->kind == SL_VSR_ARTIFACT_SEGMENT_LOG && !segment_holds(x, a->frontier, a->len))
            return false;
    }
    return true;
}

/* A hashed job that can still be offered for op: the same checkpoint, no purge since, every
 * segment still there at its length. */
static bool ready_for(const sl_ptransfer_t *x, uint64_t op)
{
    const hash_job_t *j = x->ready;
    if (!j || j->op != op || j->generation != sl_partition_purge_generation(x->p) ||
        j->epoch != x->epoch)
        return false;
    for (uint32_t k = 0; k < j->count; k++)
        if (!segment_holds(x, j->items[k].start, j->items[k].len))
            return false;
    return true;
}

/* The offer of checkpoint op from hashed items and the checkpoint's snapshot, kept in the
 * older slot (or the one of op). */
static int offer_build(sl_ptransfer_t *x, uint64_t op, sl_span_t snapshot, const hash_item_t *items,
                       uint32_t n, const sl_vsr_artifact_t **list, uint32_t *count)
{
    uint32_t slot = x->offers[x->newest].op == op ? x->newest : 1u - x->newest;
    offer_t *o = &x->offers[slot];
    if (n + 1 > o->cap) {
        sl_vsr_artifact_t *l = realloc(o->list, (n + 1) * sizeof(*l));
        if (!l)
            return -ENOMEM;
        o->list = l;
        o->cap = n + 1;
    }
    o->op = 0;
    for (uint32_t i = 0; i < n; i++) {
        sl_assert(items[i].known);
        o->list[i] = (sl_vsr_artifact_t){SL_VSR_ARTIFACT_SEGMENT_LOG, items[i].start, items[i].len,
                                         items[i].sum};
    }
    sl_buf_reset(&o->offsets);
    sl_put_span(&o->offsets, snapshot);
    sl_put_u64(&o->offsets, sl_partition_purge_generation(x->p));
    if (!sl_buf_ok(&o->offsets))
        return -ENOMEM;
    o->list[n] = (sl_vsr_artifact_t){SL_VSR_ARTIFACT_CONSUMER_OFFSETS, op, o->offsets.len,
                                     sl_xxh3_64(o->offsets.data, o->offsets.len)};
    o->count = n + 1;
    o->op = op;
    x->newest = slot;
    *list = o->list;
    *count = o->count;
    return 0;
}

/* The item the tail serves: the segment it holds the start of (the newest one last time,
 * sealed since or grown), else the newest segment (which the next offer will find grown);
 * UINT32_MAX when that one is hashed already. */
static uint32_t tail_item(const hash_job_t *job)
{
    for (uint32_t i = 0; job->tail && job->tail->len > 0 && i < job->count; i++)
        if (!job->items[i].known && job->items[i].start == job->tail->start &&
            job->items[i].len >= job->tail->len)
            return i;
    return job->count > 0 && !job->items[job->count - 1].known ? job->count - 1 : UINT32_MAX;
}

static void hash_run(sl_work_t *w)
{
    hash_job_t *job = (hash_job_t *)w;
    uint8_t *buf = malloc(HASH_CHUNK);
    job->ok = buf != NULL;
    uint32_t t = tail_item(job);
    for (uint32_t i = 0; job->ok && i < job->count; i++) {
        hash_item_t *h = &job->items[i];
        if (h->known)
            continue;
        job->ok = hash_segment(job->dir, h->start, h->len, buf, i == t ? job->tail : NULL, &h->sum);
        h->known = job->ok;
    }
    free(buf);
}

static void hash_done(sl_work_t *w, bool ran)
{
    hash_job_t *job = (hash_job_t *)w;
    sl_ptransfer_t *x = job->owner;
    if (!x) {
        free(job->tail);
        free(job);
        return;
    }
    x->job = NULL;
    sl_assert(x->tail == NULL);
    x->tail = job->tail;
    job->tail = NULL;
    if (ran && job->ok && job->epoch != x->epoch) {
        free(job); /* an install replaced the files meanwhile */
        return;
    }
    if (!ran || !job->ok) {
        /* Not run (shutdown) or a segment gone meanwhile (retention): the next request
         * for an offer starts over. */
        sl_log_info("cluster: partition group %" PRIx64 ": the offer of checkpoint %" PRIu64
                    " was not hashed%s",
                    x->group, job->op, ran ? " (a segment could not be read)" : "");
        free(job);
        return;
    }
    free(x->ready);
    x->ready = job;
    sl_log_info("cluster: partition group %" PRIx64 ": the offer of checkpoint %" PRIu64
                " is ready: %u segments, hashed on a worker",
                x->group, job->op, job->count);
}

/* The segments as they are now (an empty active segment left out: the receiver makes its
 * own), each with its hash when an earlier offer or job has it. NULL when out of memory or a
 * segment cannot be described. */
static hash_job_t *list_segments(const sl_ptransfer_t *x, uint64_t op, uint32_t *unknown)
{
    uint32_t segments = sl_partition_segments(x->p);
    size_t items = segments ? segments : 1;
    hash_job_t *job = calloc(1, sizeof(*job) + items * sizeof(hash_item_t));
    if (!job)
        return NULL;
    job->op = op;
    job->generation = sl_partition_purge_generation(x->p);
    job->epoch = x->epoch;
    *unknown = 0;
    for (uint32_t i = 0; i < segments; i++) {
        sl_segment_info_t si;
        if (!sl_partition_segment_info(x->p, i, &si)) {
            free(job);
            return NULL;
        }
        if (si.size == 0 && i + 1 == segments && i > 0)
            continue;
        hash_item_t *h = &job->items[job->count++];
        *h = (hash_item_t){.start = si.start_offset, .len = si.size};
        h->known = known_hash(x, h->start, h->len, &h->sum);
        *unknown += !h->known;
    }
    return job;
}

int sl_ptransfer_offer(sl_ptransfer_t *x, uint64_t op, sl_span_t snapshot,
                       const sl_vsr_artifact_t **list, uint32_t *count)
{
    for (int i = 0; i < 2; i++) {
        offer_t *kept = &x->offers[i];
        if (kept->op == op && op != 0 && offer_intact(x, kept)) {
            *list = kept->list;
            *count = kept->count;
            return 0;
        }
    }
    if (op != 0 && ready_for(x, op)) {
        int rc = offer_build(x, op, snapshot, x->ready->items, x->ready->count, list, count);
        free(x->ready);
        x->ready = NULL;
        return rc;
    }
    /* Still hashing (the requester asks again; the one asked for may be a newer checkpoint:
     * the segments hashed by then are known to the next job). */
    if (x->job)
        return -EAGAIN;
    /* The segments must hold at least what the checkpoint names: flushed (a checkpoint
     * synced them already; whatever came since is flushed too, and so served). */
    int rc = sl_partition_flush(x->p);
    if (rc != 0)
        return rc;
    /* A replica whose own segments end before its checkpoint (it is waiting
     * for a transfer itself) has nothing to offer. */
    if (snapshot.len < 8 || sl_partition_next_offset(x->p) < sl_load_u64(snapshot.ptr))
        return -SL_ERR_STATE_FILE_CORRUPTED;
    uint32_t unknown = 0;
    hash_job_t *job = list_segments(x, op, &unknown);
    if (!job)
        return -ENOMEM;
    free(x->ready); /* stale: what it hashed is in job's items now */
    x->ready = NULL;
    if (unknown > 0 && x->pool) {
        /* Reading and hashing a multi-GB partition would hold the loop: a worker does it,
         * and this offer is refused as transient meanwhile. */
        snprintf(job->dir, sizeof(job->dir), "%s", sl_partition_dir(x->p));
        job->work = (sl_work_t){.run = hash_run, .done = hash_done};
        job->owner = x;
        if (x->tail && (x->tail->generation != job->generation || x->tail->epoch != x->epoch)) {
            x->tail->len = 0;
            x->tail->generation = job->generation;
            x->tail->epoch = x->epoch;
        }
        job->tail = x->tail;
        x->tail = NULL;
        x->job = job;
        sl_log_info("cluster: partition group %" PRIx64 ": hashing %u of %u segments for the "
                    "offer of checkpoint %" PRIu64 " on a worker",
                    x->group, unknown, job->count, op);
        sl_work_pool_submit(x->pool, &job->work);
        return -EAGAIN;
    }
    /* Without a pool (or nothing to hash): here. */
    rc = 0;
    for (uint32_t i = 0; rc == 0 && i < job->count; i++) {
        hash_item_t *h = &job->items[i];
        if (h->known)
            continue;
        sl_buf_reset(&x->chunk);
        uint8_t *buf = sl_buf_extend(&x->chunk, HASH_CHUNK);
        if (!buf || !hash_segment(sl_partition_dir(x->p), h->start, h->len, buf, NULL, &h->sum))
            rc = -EIO;
        h->known = rc == 0;
    }
    if (rc == 0)
        rc = offer_build(x, op, snapshot, job->items, job->count, list, count);
    free(job);
    return rc;
}

sl_span_t sl_ptransfer_serve(sl_ptransfer_t *x, uint64_t op, uint32_t index, uint64_t offset,
                             uint32_t len)
{
    const offer_t *o = NULL;
    for (int i = 0; i < 2; i++)
        if (x->offers[i].op == op && op != 0)
            o = &x->offers[i];
    if (!o || index >= o->count || offset >= o->list[index].len)
        return sl_span(NULL, 0);
    const sl_vsr_artifact_t *a = &o->list[index];
    uint64_t n = a->len - offset < len ? a->len - offset : len;
    if (a->kind == SL_VSR_ARTIFACT_CONSUMER_OFFSETS)
        return sl_span(o->offsets.data + offset, (size_t)n);
    /* Bytes a later flush wrote after what was offered are never read: the offered length
     * bounds every chunk. */
    int fd = open_segment(x, a->frontier);
    if (fd < 0)
        return sl_span(NULL, 0);
    sl_buf_reset(&x->chunk);
    uint8_t *buf = sl_buf_extend(&x->chunk, (size_t)n);
    bool ok = buf && sl_io_pread(fd, buf, (size_t)n, (off_t)offset) == (ssize_t)n;
    sl_io_close(fd);
    return ok ? sl_span(buf, (size_t)n) : sl_span(NULL, 0);
}

/* --- receiving ---------------------------------------------------------------------------- */

static void stage_close(sl_ptransfer_t *x)
{
    if (x->stage_fd >= 0)
        sl_io_close(x->stage_fd);
    x->stage_fd = -1;
}

/* Drops whatever was staged and makes the staging directory empty. */
static int stage_begin(sl_ptransfer_t *x, uint64_t op)
{
    char dir[PATH_MAX];
    stage_close(x);
    x->receiving = true;
    x->stage_op = op;
    x->have_offsets = false;
    x->next_index = 0;
    /* A job still verifying the last staging's files is let go when it is done. */
    x->stage_seq++;
    x->waiting_count = 0;
    x->verified = 0;
    x->verify_failed = false;
    x->install_waits = false;
    sl_buf_reset(&x->stage_offsets);
    if (!staging_path(x, dir) || sl_store_remove_tree(dir) != 0)
        return -SL_ERR_CANNOT_DELETE_FILE;
    int rc = sl_io_mkdir(dir, sl_io_dir_mode());
    return rc == 0 || rc == -EEXIST ? 0 : -SL_ERR_CANNOT_CREATE_PARTITION_DIRECTORY;
}

/* Whether the staged segment of dir starting at start is exactly the manifest's len bytes with
 * its checksum: re-read and hashed, so what is verified is what is on disk. buf holds
 * HASH_CHUNK bytes (NULL: false). On a worker, or on the loop without a pool. */
static bool staged_verifies(const char *dir, uint64_t start, uint64_t len, uint64_t checksum,
                            uint8_t *buf)
{
    char path[PATH_MAX];
    struct stat st;
    uint64_t sum = 0;
    return buf != NULL && sl_segment_path(path, dir, start, SL_SEGMENT_LOG_EXT) &&
           stat(path, &st) == 0 && (uint64_t)st.st_size == len &&
           hash_segment(dir, start, len, buf, NULL, &sum) && sum == checksum;
}

static void verify_run(sl_work_t *w)
{
    verify_job_t *job = (verify_job_t *)w;
    uint8_t *buf = malloc(HASH_CHUNK);
    for (uint32_t i = 0; i < job->count; i++) {
        verify_item_t *v = &job->items[i];
        v->ok = staged_verifies(job->dir, v->start, v->len, v->checksum, buf);
    }
    free(buf);
}

static void verify_pump(sl_ptransfer_t *x);

static void verify_done(sl_work_t *w, bool ran)
{
    verify_job_t *job = (verify_job_t *)w;
    sl_ptransfer_t *x = job->owner;
    if (!x) {
        free(job);
        return;
    }
    x->verify = NULL;
    if (!ran) {
        /* The pool is going away (shutdown): nothing more is submitted to it. */
        x->verify_failed = true;
        free(job);
        return;
    }
    if (job->seq == x->stage_seq) {
        uint32_t ok = 0;
        for (uint32_t i = 0; i < job->count; i++) {
            const verify_item_t *v = &job->items[i];
            ok += v->ok;
            if (!v->ok)
                sl_log_warn("cluster: partition group %" PRIx64 ": staged segment %" PRIu64
                            " does not verify",
                            x->group, v->start);
        }
        x->verified += ok;
        x->verify_failed = x->verify_failed || ok != job->count;
        if (ok == job->count)
            sl_log_info("cluster: partition group %" PRIx64 ": %u staged segments of checkpoint "
                        "%" PRIu64 " verified on a worker",
                        x->group, job->count, job->op);
    }
    free(job);
    verify_pump(x);
}

/* Hands the complete segments that wait to a worker, when none is busy with this transfer's. */
static void verify_pump(sl_ptransfer_t *x)
{
    if (x->verify || x->waiting_count == 0 || x->verify_failed)
        return;
    verify_job_t *job = calloc(1, sizeof(*job) + x->waiting_count * sizeof(verify_item_t));
    if (!job || !staging_path(x, job->dir)) {
        free(job);
        x->verify_failed = true;
        return;
    }
    job->work = (sl_work_t){.run = verify_run, .done = verify_done};
    job->owner = x;
    job->seq = x->stage_seq;
    job->op = x->stage_op;
    job->count = x->waiting_count;
    memcpy(job->items, x->waiting, x->waiting_count * sizeof(verify_item_t));
    x->waiting_count = 0;
    x->verify = job;
    sl_log_info("cluster: partition group %" PRIx64 ": verifying %u staged segments of "
                "checkpoint %" PRIu64 " on a worker",
                x->group, job->count, job->op);
    sl_work_pool_submit(x->pool, &job->work);
}

/* A staged segment complete: verified here without a pool, else queued for a worker. */
static int staged_complete(sl_ptransfer_t *x, const sl_vsr_artifact_t *a)
{
    stage_close(x);
    if (!x->pool) {
        char dir[PATH_MAX];
        sl_buf_reset(&x->chunk);
        uint8_t *buf = sl_buf_extend(&x->chunk, HASH_CHUNK);
        if (!staging_path(x, dir) || !staged_verifies(dir, a->frontier, a->len, a->checksum, buf)) {
            sl_log_warn("cluster: partition group %" PRIx64 ": staged segment %" PRIu64
                        " does not verify",
                        x->group, a->frontier);
            return -SL_ERR_INVALID_FORMAT;
        }
        x->verified++;
        return 0;
    }
    if (x->waiting_count == x->waiting_cap) {
        uint32_t cap = x->waiting_cap ? 2 * x->waiting_cap : 16;
        verify_item_t *w = realloc(x->waiting, cap * sizeof(*w));
        if (!w)
            return -ENOMEM;
        x->waiting = w;
        x->waiting_cap = cap;
    }
    x->waiting[x->waiting_count++] =
        (verify_item_t){.start = a->frontier, .len = a->len, .checksum = a->checksum};
    verify_pump(x);
    return 0;
}

int sl_ptransfer_stage(sl_ptransfer_t *x, uint64_t op, uint32_t index, const sl_vsr_artifact_t *a,
                       uint64_t offset, sl_span_t bytes)
{
    if (a == NULL)
        return stage_begin(x, op);
    if (!x->receiving || op != x->stage_op || index < x->next_index || x->have_offsets ||
        x->verify_failed)
        return -SL_ERR_INVALID_FORMAT;
    if (a->kind == SL_VSR_ARTIFACT_CONSUMER_OFFSETS) {
        if (a->len > OFFSETS_MAX || a->frontier != op || offset != x->stage_offsets.len)
            return -SL_ERR_INVALID_FORMAT;
        sl_put_span(&x->stage_offsets, bytes);
        if (!sl_buf_ok(&x->stage_offsets))
            return -ENOMEM;
        if (offset + bytes.len == a->len) {
            if (sl_xxh3_64(x->stage_offsets.data, x->stage_offsets.len) != a->checksum)
                return -SL_ERR_INVALID_FORMAT;
            x->have_offsets = true;
            x->next_index = index + 1;
        }
        return 0;
    }
    if (a->kind != SL_VSR_ARTIFACT_SEGMENT_LOG)
        return -SL_ERR_INVALID_FORMAT;
    if (offset == 0) {
        char dir[PATH_MAX], path[PATH_MAX];
        stage_close(x);
        if (!staging_path(x, dir) || !sl_segment_path(path, dir, a->frontier, SL_SEGMENT_LOG_EXT))
            return -SL_ERR_CANNOT_WRITE_TO_FILE;
        x->stage_fd = sl_io_open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, sl_io_file_mode());
        if (x->stage_fd < 0) {
            x->stage_fd = -1;
            return -SL_ERR_CANNOT_WRITE_TO_FILE;
        }
        x->stage_start = a->frontier;
    } else if (x->stage_fd < 0 || x->stage_start != a->frontier) {
        return -SL_ERR_INVALID_FORMAT;
    }
    if (sl_io_pwrite(x->stage_fd, bytes.ptr, bytes.len, (off_t)offset) != (ssize_t)bytes.len)
        return -SL_ERR_CANNOT_WRITE_TO_FILE;
    if (offset + bytes.len == a->len) {
        int rc = staged_complete(x, a);
        if (rc != 0)
            return rc;
        x->next_index = index + 1;
    }
    return 0;
}

/* The snapshot part of a CONSUMER_OFFSETS artifact (cluster_transfer.h) and the generation
 * its segments are of; false when it does not decode (logged). */
static bool offsets_split(uint64_t group, sl_span_t bytes, sl_span_t *snapshot,
                          uint64_t *generation)
{
    sl_psnapshot_t s;
    char err[160];
    if (bytes.len < 8) {
        snprintf(err, sizeof(err), "%zu bytes", bytes.len);
    } else {
        *snapshot = sl_span(bytes.ptr, bytes.len - 8);
        *generation = sl_load_u64(bytes.ptr + bytes.len - 8);
        if (sl_psnapshot_decode(*snapshot, &s, err, sizeof(err)) == 0)
            return true;
    }
    sl_log_error("cluster: partition group %" PRIx64 ": a state transfer's CONSUMER_OFFSETS "
                 "artifact does not decode: %s",
                 group, err);
    return false;
}

/* The partition's consumer offsets become the snapshot's: the others are deleted. */
static int offsets_apply(sl_ptransfer_t *x, sl_span_t snapshot)
{
    /* Decoded (offsets_split) before: the offsets follow the 12-byte head. */
    uint32_t n = sl_load_u32(snapshot.ptr + 8);
    for (uint32_t i = sl_offsets_count(x->p); i > 0; i--) {
        sl_offsets_kind_t kind;
        uint32_t id;
        uint64_t offset;
        if (!sl_offsets_at(x->p, i - 1, &kind, &id, &offset))
            continue;
        bool keep = false;
        for (uint32_t k = 0; k < n && !keep; k++) {
            const uint8_t *e = snapshot.ptr + 12 + (size_t)k * 13;
            keep = e[0] == (uint8_t)kind && sl_load_u32(e + 1) == id;
        }
        if (!keep && sl_offsets_delete(x->p, kind, id) != 0)
            return -SL_ERR_CANNOT_DELETE_CONSUMER_OFFSET_FILE;
    }
    for (uint32_t k = 0; k < n; k++) {
        const uint8_t *e = snapshot.ptr + 12 + (size_t)k * 13;
        int rc = sl_offsets_store(x->p, (sl_offsets_kind_t)e[0], sl_load_u32(e + 1),
                                  sl_load_u64(e + 5), true, false);
        if (rc != 0)
            return rc;
    }
    return 0;
}

int sl_ptransfer_install(sl_ptransfer_t *x, uint64_t op, const sl_vsr_artifact_t *list,
                         uint32_t count, sl_buf_t *snapshot)
{
    char dir[PATH_MAX];
    sl_span_t snap;
    uint64_t generation;
    if (!x->receiving || op != x->stage_op || !x->have_offsets || x->next_index != count ||
        !offsets_split(x->group, sl_buf_span(&x->stage_offsets), &snap, &generation) ||
        !staging_path(x, dir) || x->verify_failed)
        return -SL_ERR_INVALID_FORMAT;
    /* Every segment staged; the worker has not verified them all yet. */
    if (x->verify || x->waiting_count > 0) {
        if (!x->install_waits)
            sl_log_info("cluster: partition group %" PRIx64 ": checkpoint %" PRIu64
                        " is staged; its install waits for the worker's verification",
                        x->group, op);
        x->install_waits = true;
        return SL_VSR_INSTALL_PENDING;
    }
    uint32_t segments = 0;
    for (uint32_t i = 0; i < count; i++)
        segments += list[i].kind == SL_VSR_ARTIFACT_SEGMENT_LOG && list[i].len > 0;
    if (segments != x->verified) {
        sl_log_error("cluster: partition group %" PRIx64 ": %u segments verified of the %u the "
                     "manifest of checkpoint %" PRIu64 " lists: not installed",
                     x->group, x->verified, segments, op);
        return -SL_ERR_INVALID_FORMAT;
    }
    uint64_t *starts = calloc(count ? count : 1, sizeof(*starts));
    if (!starts)
        return -ENOMEM;
    uint32_t n = 0;
    for (uint32_t i = 0; i < count; i++) {
        if (list[i].kind != SL_VSR_ARTIFACT_SEGMENT_LOG)
            continue;
        if (list[i].len == 0) {
            /* Never staged (an empty artifact): an empty file stands for it. */
            char path[PATH_MAX];
            int fd =
                sl_segment_path(path, dir, list[i].frontier, SL_SEGMENT_LOG_EXT)
                    ? sl_io_open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, sl_io_file_mode())
                    : -1;
            if (fd < 0) {
                free(starts);
                return -SL_ERR_CANNOT_WRITE_TO_FILE;
            }
            sl_io_close(fd);
        }
        starts[n++] = list[i].frontier;
    }
    /* The commit point: from here a crash rolls forward at the next boot
     * (sl_ptransfer_roll_at_open, then sl_ptransfer_boot). */
    int rc =
        sl_partition_install_commit(dir, generation, starts, n, sl_buf_span(&x->stage_offsets));
    free(starts);
    if (rc != 0) {
        sl_log_error("cluster: partition group %" PRIx64 ": cannot commit a state transfer: %s",
                     x->group, sl_strerror(rc));
        return rc;
    }
    sl_buf_t blob;
    sl_buf_init(&blob, 0);
    bool rolled = false;
    char err[PATH_MAX + 256];
    rc = sl_partition_install_roll(sl_partition_dir(x->p), dir, x->created_revision, true, &blob,
                                   &rolled);
    sl_buf_free(&blob);
    if (rc == 0)
        rc = sl_partition_reload(x->p, sl_clock_realtime_us(), err, sizeof(err));
    if (rc == 0)
        rc = offsets_apply(x, snap);
    if (rc == 0)
        rc = sl_partition_install_done(dir);
    if (rc != 0) {
        /* Committed: the next boot finishes it. Until then this replica stays out. */
        sl_log_error("cluster: partition group %" PRIx64 ": a committed state transfer did not "
                     "install (a restart finishes it): %s",
                     x->group, sl_strerror(rc));
        return rc;
    }
    x->receiving = false;
    /* Other files under the same names now: what was hashed of the old ones is stale. */
    x->epoch++;
    free(x->ready);
    x->ready = NULL;
    sl_put_span(snapshot, snap);
    sl_log_info("cluster: partition group %" PRIx64 ": installed checkpoint %" PRIu64
                ": %u segments, next offset %" PRIu64 ", purge generation %" PRIu64,
                x->group, op, n, sl_partition_next_offset(x->p), generation);
    return 0;
}

int sl_ptransfer_roll_at_open(const char *partition_dir, uint64_t created_revision)
{
    char dir[PATH_MAX];
    int n = snprintf(dir, sizeof(dir), "%s/%s", partition_dir, SL_PTRANSFER_STAGING);
    if (n <= 0 || n >= (int)sizeof(dir))
        return -SL_ERR_INVALID_CONFIGURATION;
    sl_buf_t blob;
    sl_buf_init(&blob, 0);
    bool rolled = false;
    char marker[PATH_MAX + 16];
    snprintf(marker, sizeof(marker), "%s/%s", dir, SL_PARTITION_INSTALL_MARKER);
    int rc = 0;
    /* Only a committed install is touched here; an uncommitted staging waits for the group's
     * open, which discards it. */
    struct stat st;
    if (stat(marker, &st) == 0 || errno != ENOENT) {
        rc = sl_partition_install_roll(partition_dir, dir, created_revision, true, &blob, &rolled);
        if (rolled)
            sl_log_warn("partition %s: a state transfer interrupted by a restart was rolled "
                        "forward",
                        partition_dir);
    }
    sl_buf_free(&blob);
    return rc;
}

int sl_ptransfer_boot(sl_ptransfer_t *x)
{
    char dir[PATH_MAX];
    if (!staging_path(x, dir))
        return -SL_ERR_INVALID_CONFIGURATION;
    sl_buf_t blob;
    sl_buf_init(&blob, 0);
    bool rolled = false;
    int rc = sl_partition_install_roll(sl_partition_dir(x->p), dir, x->created_revision, false,
                                       &blob, &rolled);
    sl_span_t snap;
    uint64_t generation;
    if (rc == 0 && rolled) {
        rc = offsets_split(x->group, sl_buf_span(&blob), &snap, &generation)
                 ? offsets_apply(x, snap)
                 : -SL_ERR_STATE_FILE_CORRUPTED;
        if (rc == 0)
            rc = sl_partition_install_done(dir);
    }
    sl_buf_free(&blob);
    return rc;
}
