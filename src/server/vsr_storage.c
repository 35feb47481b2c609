/* The files under one replica's directory: the journal ring, the ping-pong state record and
 * the checkpoint artifacts (server/vsr_storage.h), behind src/vsr's sl_vsr_storage_t. All
 * I/O goes through base/io.h so tests can tear, fail and fill it. */
#include "server/vsr_storage.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <sluice/error.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "base/io.h"
#include "base/log.h"
#include "base/xxh3.h"
#include "server/trip_trace.h"

#define JOURNAL_FILE   "journal.ring"
#define JOURNAL_MAGIC  "SLVSRJR1"
#define STATE_MAGIC    "SLVSRST1"
#define ARTIFACT_MAGIC "SLVSRAR1"
#define FORMAT_VERSION 1u

/* The geometry block that opens the journal header and both state copies:
 * magic[8] version u32 reserved u32 cluster u128 group u64 slot_size u32 slot_count u32. */
#define GEOMETRY_SIZE 48u
/* A state copy: geometry, sequence u64, record length u32, reserved u32, the record, then the
 * XXH3-64 of everything before it. */
#define STATE_HEAD     64u
#define STATE_FILE_MAX (STATE_HEAD + SL_VSR_STORAGE_STATE_MAX + 8u)
/* An artifact file: magic[8] version u32 kind u32 cluster u128 group u64 op u64 sequence u64
 * length u64, the XXH3-64 of those 64 bytes, then the artifact's bytes. */
#define ARTIFACT_HEAD 72u
/* Sets of artifacts kept: the newest, the one before (what a durable record names while the
 * record naming the newest is not written yet) and one more, for a record that failed to
 * name the one before (tests/sim's disk keeps the same three). */
#define ARTIFACT_SETS 3

_Static_assert(GEOMETRY_SIZE + 8u <= SL_VSR_STORAGE_JOURNAL_HEADER,
               "the journal header page holds the geometry and its checksum");

static const char *const state_files[2] = {"state.a", "state.b"};
static const char *const artifact_names[2] = {"snapshot", "clients"};

typedef struct completion {
    uint32_t slot;
    bool ok; /* its pwrite succeeded */
} completion_t;

typedef struct artifact_set {
    bool used;
    uint64_t op;
    uint64_t seq; /* write order: the higher, the newer */
} artifact_set_t;

typedef struct artifact_cache {
    bool valid;
    uint64_t op;
    sl_buf_t file; /* the whole file: header, then the artifact */
} artifact_cache_t;

struct sl_vsr_storage_dir {
    char dir[PATH_MAX];
    sl_vsr_storage_options_t opt;
    int journal_fd;
    int state_fd[2];
    int state_newest; /* copy holding the newest record, -1: none */
    sl_buf_t state;   /* that record (what read_state returns) */
    sl_buf_t image;   /* a state copy being written or read */
    sl_buf_t slot_read;
    completion_t *queue;
    completion_t *delivering;
    uint32_t queued;
    uint8_t *inflight; /* per slot: a write whose completion is not delivered yet */
    /* Per slot: this open created the ring and nothing was written there since, so it reads
     * as never written without a read (a new group's open scans every slot). */
    uint8_t *unwritten;
    artifact_set_t sets[ARTIFACT_SETS];
    uint64_t artifact_seq;
    artifact_cache_t cache[2];
    sl_vsr_storage_info_t info;
};

/* --- helpers ---------------------------------------------------------------------------- */

__attribute__((format(printf, 4, 5))) static int fail(char *err, size_t err_len, int code,
                                                      const char *fmt, ...)
{
    if (err != NULL && err_len > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, err_len, fmt, ap);
        va_end(ap);
    }
    return code;
}

/* <dir>/<name> into out; false when it does not fit. */
static bool join(const sl_vsr_storage_dir_t *st, char out[PATH_MAX], const char *name)
{
    int n = snprintf(out, PATH_MAX, "%s/%s", st->dir, name);
    return n > 0 && n < PATH_MAX;
}

static uint64_t journal_size(const sl_vsr_storage_options_t *o)
{
    return SL_VSR_STORAGE_JOURNAL_HEADER + (uint64_t)o->slot_count * o->slot_size;
}

static off_t slot_offset(const sl_vsr_storage_dir_t *st, uint32_t slot)
{
    return (off_t)(SL_VSR_STORAGE_JOURNAL_HEADER + (uint64_t)slot * st->opt.slot_size);
}

uint32_t sl_vsr_storage_slot_size(uint64_t prepare_max)
{
    uint64_t need = prepare_max + SL_VSR_STORAGE_SLOT_HEADER;
    uint64_t size = (need + 4095u) / 4096u * 4096u;
    return size > UINT32_MAX ? 0 : (uint32_t)size;
}

static void geometry_put(const sl_vsr_storage_dir_t *st, uint8_t *p, const char *magic)
{
    memcpy(p, magic, 8);
    sl_store_u32(p + 8, FORMAT_VERSION);
    sl_store_u32(p + 12, 0);
    sl_store_u128(p + 16, st->opt.cluster);
    sl_store_u64(p + 32, st->opt.group);
    sl_store_u32(p + 40, st->opt.slot_size);
    sl_store_u32(p + 44, st->opt.slot_count);
}

/* A verified geometry block against the options: 0, or the refusal in err. */
static int geometry_check(const sl_vsr_storage_dir_t *st, const uint8_t *p, const char *file,
                          char *err, size_t err_len)
{
    sl_u128_t cluster = sl_load_u128(p + 16);
    uint64_t group = sl_load_u64(p + 32);
    uint32_t version = sl_load_u32(p + 8);
    uint32_t size = sl_load_u32(p + 40), count = sl_load_u32(p + 44);
    if (version != FORMAT_VERSION)
        return fail(err, err_len, -SL_ERR_STATE_FILE_CORRUPTED,
                    "%s/%s: format version %" PRIu32 ", this build reads %u", st->dir, file,
                    version, FORMAT_VERSION);
    if (!sl_u128_eq(cluster, st->opt.cluster) || group != st->opt.group)
        return fail(err, err_len, -SL_ERR_STATE_FILE_CORRUPTED,
                    "%s/%s belongs to cluster %016" PRIx64 "%016" PRIx64 " group %" PRIu64
                    ", not cluster %016" PRIx64 "%016" PRIx64 " group %" PRIu64,
                    st->dir, file, cluster.hi, cluster.lo, group, st->opt.cluster.hi,
                    st->opt.cluster.lo, st->opt.group);
    if (size != st->opt.slot_size || count != st->opt.slot_count)
        return fail(err, err_len, -SL_ERR_STATE_FILE_CORRUPTED,
                    "%s/%s was formatted for %" PRIu32 " journal slots of %" PRIu32
                    " bytes, not %" PRIu32 " of %" PRIu32,
                    st->dir, file, count, size, st->opt.slot_count, st->opt.slot_size);
    return 0;
}

/* --- the journal ring ------------------------------------------------------------------- */

/* Creates journal.ring whole under a temporary name, so it exists only complete. */
static int journal_create(sl_vsr_storage_dir_t *st, char *err, size_t err_len)
{
    char path[PATH_MAX], tmp[PATH_MAX];
    if (!join(st, path, JOURNAL_FILE) || !join(st, tmp, JOURNAL_FILE ".tmp"))
        return fail(err, err_len, -SL_ERR_INVALID_CONFIGURATION, "%s: path too long", st->dir);
    sl_io_unlink(tmp);
    int fd = sl_io_open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, sl_io_file_mode());
    if (fd < 0)
        return fail(err, err_len, -SL_ERR_CANNOT_WRITE_TO_FILE, "cannot create %s: %s", tmp,
                    strerror(-fd));
    uint8_t page[SL_VSR_STORAGE_JOURNAL_HEADER];
    memset(page, 0, sizeof(page));
    geometry_put(st, page, JOURNAL_MAGIC);
    sl_store_u64(page + GEOMETRY_SIZE, sl_xxh3_64(page, GEOMETRY_SIZE));
    int rc = sl_io_pwrite_all(fd, page, sizeof(page), 0);
    if (rc == 0)
        rc = sl_io_ftruncate(fd, (off_t)journal_size(&st->opt));
    if (rc == 0 && st->opt.preallocate) {
        rc = sl_io_fallocate(fd, 0, 0, (off_t)journal_size(&st->opt));
        if (rc == -EOPNOTSUPP) {
            sl_log_info("%s: the filesystem cannot preallocate: the ring stays sparse", tmp);
            rc = 0;
        }
    }
    if (rc == 0)
        rc = sl_io_fsync(fd);
    if (rc == 0)
        rc = sl_io_rename(tmp, path);
    if (rc < 0) {
        sl_io_close(fd);
        sl_io_unlink(tmp);
        return fail(err, err_len, -SL_ERR_CANNOT_WRITE_TO_FILE, "cannot create %s: %s", path,
                    strerror(-rc));
    }
    st->journal_fd = fd;
    st->info.fresh = true;
    memset(st->unwritten, 1, st->opt.slot_count);
    return 0;
}

/* Opens journal.ring (creating it when absent) and checks its header and size. *created says
 * whether the directory needs an fsync. */
static int journal_open(sl_vsr_storage_dir_t *st, bool *created, char *err, size_t err_len)
{
    char path[PATH_MAX];
    if (!join(st, path, JOURNAL_FILE))
        return fail(err, err_len, -SL_ERR_INVALID_CONFIGURATION, "%s: path too long", st->dir);
    int fd = sl_io_open(path, O_RDWR | O_CLOEXEC, 0);
    if (fd == -ENOENT && st->state_newest >= 0)
        /* A record names a log this directory no longer has: an empty journal would read as
         * ops never written, and the replica could nack ops it acknowledged. Only a whole lost
         * directory (no record either) rejoins safely, as a lost disk. */
        return fail(err, err_len, -SL_ERR_STATE_FILE_CORRUPTED,
                    "%s is missing next to a state record in %s/%s (remove the whole "
                    "directory to rejoin the cluster as a lost disk)",
                    path, st->dir, state_files[st->state_newest]);
    if (fd == -ENOENT) {
        *created = true;
        return journal_create(st, err, err_len);
    }
    if (fd < 0)
        return fail(err, err_len, -SL_ERR_CANNOT_READ_FILE, "cannot open %s: %s", path,
                    strerror(-fd));
    st->journal_fd = fd;
    uint8_t head[GEOMETRY_SIZE + 8];
    ssize_t n = sl_io_pread_all(fd, head, sizeof(head), 0);
    if (n < 0)
        return fail(err, err_len, -SL_ERR_CANNOT_READ_FILE, "cannot read %s: %s", path,
                    strerror((int)-n));
    if ((size_t)n < sizeof(head) || memcmp(head, JOURNAL_MAGIC, 8) != 0 ||
        sl_load_u64(head + GEOMETRY_SIZE) != sl_xxh3_64(head, GEOMETRY_SIZE))
        return fail(err, err_len, -SL_ERR_STATE_FILE_CORRUPTED,
                    "%s: header does not verify (not a journal ring, or damaged)", path);
    int rc = geometry_check(st, head, JOURNAL_FILE, err, err_len);
    if (rc < 0)
        return rc;
    uint64_t size = 0;
    rc = sl_io_size(fd, &size);
    if (rc < 0)
        return fail(err, err_len, -SL_ERR_CANNOT_READ_FILE_METADATA, "cannot stat %s: %s", path,
                    strerror(-rc));
    if (size < journal_size(&st->opt))
        return fail(err, err_len, -SL_ERR_STATE_FILE_CORRUPTED,
                    "%s is %" PRIu64 " bytes: its %" PRIu32 " slots need %" PRIu64
                    " (the file was cut)",
                    path, size, st->opt.slot_count, journal_size(&st->opt));
    return 0;
}

static void write_prepare(void *ctx, uint32_t slot, const uint8_t *frame, uint32_t size)
{
    sl_vsr_storage_dir_t *st = ctx;
    sl_assert(slot < st->opt.slot_count);
    /* The replica never has two writes in flight on one slot (tests/sim asserts it too). */
    sl_assert(!st->inflight[slot]);
    /* A prepare larger than its slot is a configuration bug of the host: slot_size must hold
     * the largest prepare the group admits (sl_vsr_storage_slot_size). */
    sl_assert((uint64_t)size + SL_VSR_STORAGE_SLOT_HEADER <= st->opt.slot_size);
    st->unwritten[slot] = 0;
    uint8_t head[SL_VSR_STORAGE_SLOT_HEADER];
    /* The length twice (the second inverted): a length a torn or garbled slot happens to
     * carry is caught here, and an all-zero header is a slot never written. Written from
     * the caller's frame with the header beside it (no copy of up to a slot). */
    sl_store_u32(head, size);
    sl_store_u32(head + 4, ~size);
    struct iovec iov[2] = {{head, sizeof(head)}, {(void *)frame, size}};
    SL_TRIP_FRAME("journal_write", frame, size);
    int rc = sl_io_pwritev_all(st->journal_fd, iov, size > 0 ? 2 : 1, slot_offset(st, slot));
    SL_TRIP_FRAME("journal_written", frame, size);
    if (rc < 0)
        sl_log_error("%s/" JOURNAL_FILE ": cannot write slot %" PRIu32 ": %s", st->dir, slot,
                     strerror(-rc));
    st->queue[st->queued++] = (completion_t){slot, rc == 0};
    st->inflight[slot] = 1;
    st->info.prepare_writes++;
}

/* A slot that cannot be read comes back as 8 zero bytes: no seal verifies them, so the
 * replica takes the slot as faulty. An empty span would say "never written", and a replica
 * may nack an op it never wrote, which it must not do for one it acknowledged. */
static sl_span_t slot_unreadable(sl_vsr_storage_dir_t *st)
{
    sl_buf_reset(&st->slot_read);
    sl_put_zeros(&st->slot_read, SL_VSR_STORAGE_SLOT_HEADER);
    return sl_buf_span(&st->slot_read);
}

static sl_span_t read_prepare(void *ctx, uint32_t slot)
{
    sl_vsr_storage_dir_t *st = ctx;
    sl_assert(slot < st->opt.slot_count);
    if (st->unwritten[slot])
        return sl_span(NULL, 0); /* a hole of the ring this open created */
    st->info.slot_reads++;
    uint8_t head[SL_VSR_STORAGE_SLOT_HEADER];
    off_t at = slot_offset(st, slot);
    ssize_t n = sl_io_pread_all(st->journal_fd, head, sizeof(head), at);
    if (n != (ssize_t)sizeof(head))
        return slot_unreadable(st);
    uint32_t size = sl_load_u32(head), check = sl_load_u32(head + 4);
    if (size == 0 && check == 0)
        return sl_span(NULL, 0); /* never written */
    uint32_t room = st->opt.slot_size - SL_VSR_STORAGE_SLOT_HEADER;
    /* A header no write leaves (torn, or garbled at rest): the slot's bytes as they are. */
    uint32_t want = (check == ~size && size <= room) ? size : room;
    sl_buf_reset(&st->slot_read);
    uint8_t *p = sl_buf_extend(&st->slot_read, want);
    if (p == NULL)
        return slot_unreadable(st);
    n = sl_io_pread_all(st->journal_fd, p, want, at + (off_t)sizeof(head));
    if (n != (ssize_t)want)
        return slot_unreadable(st);
    return sl_buf_span(&st->slot_read);
}

uint32_t sl_vsr_storage_poll(sl_vsr_storage_dir_t *st, void *ctx,
                             void (*done)(void *ctx, uint32_t slot, bool ok))
{
    uint32_t n = st->queued;
    if (n == 0)
        return 0;
    bool any = false;
    for (uint32_t i = 0; i < n && !any; i++)
        any = st->queue[i].ok;
    bool synced = true;
    if (any && !st->opt.journal_nosync) {
        st->info.syncs++;
        int rc = sl_io_fdatasync(st->journal_fd);
        if (rc < 0) {
            /* After a failed fdatasync the page cache may have dropped the dirty pages: none
             * of these writes is known durable, so each fails and the replica repairs it. */
            sl_log_error("%s/" JOURNAL_FILE ": fdatasync failed: %s", st->dir, strerror(-rc));
            synced = false;
        }
    }
    SL_TRIP("journal_synced", 0, n);
    /* Moved aside first: done may submit new writes, which wait for the next poll. */
    memcpy(st->delivering, st->queue, (size_t)n * sizeof(*st->queue));
    st->queued = 0;
    for (uint32_t i = 0; i < n; i++) {
        completion_t c = st->delivering[i];
        bool ok = c.ok && synced;
        st->inflight[c.slot] = 0;
        if (!ok)
            st->info.write_failures++;
        done(ctx, c.slot, ok);
    }
    return n;
}

void sl_vsr_storage_set_nosync(sl_vsr_storage_dir_t *st, bool nosync)
{
    st->opt.journal_nosync = nosync;
}

uint32_t sl_vsr_storage_pending(const sl_vsr_storage_dir_t *st)
{
    return st->queued;
}

/* --- the state record ------------------------------------------------------------------- */

/* Reads state copy i into st->image and adopts it when it verifies and is the newest so far.
 * A copy that does not verify (torn, garbage, empty) is skipped; one that verifies but was
 * formatted for something else refuses the open. */
static int state_load(sl_vsr_storage_dir_t *st, int i, char *err, size_t err_len)
{
    uint64_t size = 0;
    int rc = sl_io_size(st->state_fd[i], &size);
    if (rc < 0)
        return fail(err, err_len, -SL_ERR_CANNOT_READ_FILE_METADATA, "cannot stat %s/%s: %s",
                    st->dir, state_files[i], strerror(-rc));
    if (size < STATE_HEAD + 8u)
        return 0;
    size_t len = size > STATE_FILE_MAX ? STATE_FILE_MAX : (size_t)size;
    sl_buf_reset(&st->image);
    uint8_t *p = sl_buf_extend(&st->image, len);
    if (p == NULL)
        return fail(err, err_len, -SL_ERR_CANNOT_READ_FILE, "%s/%s: out of memory", st->dir,
                    state_files[i]);
    ssize_t n = sl_io_pread_all(st->state_fd[i], p, len, 0);
    if (n < 0)
        return fail(err, err_len, -SL_ERR_CANNOT_READ_FILE, "cannot read %s/%s: %s", st->dir,
                    state_files[i], strerror((int)-n));
    uint32_t record_len = sl_load_u32(p + 56);
    if ((size_t)n < STATE_HEAD + 8u || memcmp(p, STATE_MAGIC, 8) != 0 ||
        record_len > SL_VSR_STORAGE_STATE_MAX || STATE_HEAD + record_len + 8u > (size_t)n)
        return 0;
    size_t covered = STATE_HEAD + record_len;
    if (sl_load_u64(p + covered) != sl_xxh3_64(p, covered))
        return 0;
    rc = geometry_check(st, p, state_files[i], err, err_len);
    if (rc < 0)
        return rc;
    uint64_t seq = sl_load_u64(p + GEOMETRY_SIZE);
    if (seq > st->info.state_sequence) {
        st->info.state_sequence = seq;
        st->info.state_copy = (uint8_t)i;
        st->state_newest = i;
        sl_buf_reset(&st->state);
        sl_put_bytes(&st->state, p + STATE_HEAD, record_len);
    }
    return 0;
}

static int state_open(sl_vsr_storage_dir_t *st, int i, bool *created, char *err, size_t err_len)
{
    char path[PATH_MAX];
    if (!join(st, path, state_files[i]))
        return fail(err, err_len, -SL_ERR_INVALID_CONFIGURATION, "%s: path too long", st->dir);
    int fd = sl_io_open(path, O_RDWR | O_CLOEXEC, 0);
    if (fd == -ENOENT) {
        fd = sl_io_open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, sl_io_file_mode());
        *created = true;
    }
    if (fd < 0)
        return fail(err, err_len, -SL_ERR_CANNOT_READ_FILE, "cannot open %s: %s", path,
                    strerror(-fd));
    st->state_fd[i] = fd;
    return state_load(st, i, err, err_len);
}

static int write_state(void *ctx, sl_span_t record)
{
    sl_vsr_storage_dir_t *st = ctx;
    if (record.len > SL_VSR_STORAGE_STATE_MAX) {
        sl_log_error("%s: state record of %zu bytes exceeds %u", st->dir, record.len,
                     SL_VSR_STORAGE_STATE_MAX);
        st->info.state_failures++;
        return -SL_ERR_CANNOT_WRITE_TO_FILE;
    }
    /* Over the copy that is not the newest, so a torn write leaves the newest standing. */
    int target = st->state_newest == 0 ? 1 : 0;
    uint64_t seq = st->info.state_sequence + 1;
    sl_buf_reset(&st->image);
    uint8_t *p = sl_buf_extend(&st->image, STATE_HEAD);
    if (p != NULL) {
        memset(p, 0, STATE_HEAD);
        geometry_put(st, p, STATE_MAGIC);
        sl_store_u64(p + GEOMETRY_SIZE, seq);
        sl_store_u32(p + 56, (uint32_t)record.len);
    }
    sl_put_span(&st->image, record);
    if (sl_buf_ok(&st->image))
        sl_put_u64(&st->image, sl_xxh3_64(st->image.data, st->image.len));
    int rc = sl_buf_ok(&st->image) ? 0 : -ENOMEM;
    if (rc == 0)
        rc = sl_io_pwrite_all(st->state_fd[target], st->image.data, st->image.len, 0);
    if (rc == 0)
        rc = sl_io_fdatasync(st->state_fd[target]);
    if (rc < 0) {
        sl_log_error("%s/%s: cannot write the state record: %s", st->dir, state_files[target],
                     strerror(-rc));
        st->info.state_failures++;
        return -SL_ERR_CANNOT_WRITE_TO_FILE;
    }
    st->state_newest = target;
    st->info.state_sequence = seq;
    st->info.state_copy = (uint8_t)target;
    /* From the image, not record: the caller may hand back what read_state returned. */
    sl_buf_reset(&st->state);
    sl_put_bytes(&st->state, st->image.data + STATE_HEAD, record.len);
    sl_assert(sl_buf_ok(&st->state));
    return 0;
}

static sl_span_t read_state(void *ctx)
{
    sl_vsr_storage_dir_t *st = ctx;
    return st->state_newest < 0 ? sl_span(NULL, 0) : sl_buf_span(&st->state);
}

/* --- checkpoint artifacts --------------------------------------------------------------- */

/* "<name>.<op>" (or with ".tmp") into out; false when it does not fit. */
static bool artifact_path(const sl_vsr_storage_dir_t *st, char out[PATH_MAX], int kind, uint64_t op,
                          bool tmp)
{
    int n = snprintf(out, PATH_MAX, "%s/%s.%" PRIu64 "%s", st->dir, artifact_names[kind], op,
                     tmp ? ".tmp" : "");
    return n > 0 && n < PATH_MAX;
}

/* Parses a directory entry as an artifact file name: its kind, op and whether it is a
 * leftover .tmp. False for anything else. */
static bool artifact_name_parse(const char *name, int *kind, uint64_t *op, bool *tmp)
{
    for (int k = 0; k < 2; k++) {
        size_t plen = strlen(artifact_names[k]);
        if (strncmp(name, artifact_names[k], plen) != 0 || name[plen] != '.')
            continue;
        const char *d = name + plen + 1;
        uint64_t v = 0;
        size_t digits = 0;
        /* 19 digits at most, so v cannot wrap; a longer number fails the suffix check. */
        for (; digits < 19 && d[digits] >= '0' && d[digits] <= '9'; digits++)
            v = v * 10u + (uint64_t)(d[digits] - '0');
        if (digits == 0)
            return false;
        const char *rest = d + digits;
        if (strcmp(rest, "") != 0 && strcmp(rest, ".tmp") != 0)
            return false;
        *kind = k;
        *op = v;
        *tmp = rest[0] != '\0';
        return true;
    }
    return false;
}

/* The header of an artifact file, checked against what its name and the options say.
 * Returns its sequence number, or 0 when it does not verify. */
static uint64_t artifact_head_check(const sl_vsr_storage_dir_t *st, const uint8_t *p,
                                    uint64_t file_len, int kind, uint64_t op)
{
    if (file_len < ARTIFACT_HEAD || memcmp(p, ARTIFACT_MAGIC, 8) != 0 ||
        sl_load_u64(p + 64) != sl_xxh3_64(p, 64))
        return 0;
    if (sl_load_u32(p + 8) != FORMAT_VERSION || sl_load_u32(p + 12) != (uint32_t)kind ||
        !sl_u128_eq(sl_load_u128(p + 16), st->opt.cluster) ||
        sl_load_u64(p + 32) != st->opt.group || sl_load_u64(p + 40) != op ||
        sl_load_u64(p + 56) != file_len - ARTIFACT_HEAD)
        return 0;
    return sl_load_u64(p + 48);
}

/* Writes one artifact as <name>.<op>.tmp, fsyncs it and renames it into place. */
static int artifact_write(sl_vsr_storage_dir_t *st, int kind, uint64_t op, uint64_t seq,
                          sl_span_t bytes)
{
    char path[PATH_MAX], tmp[PATH_MAX];
    if (!artifact_path(st, path, kind, op, false) || !artifact_path(st, tmp, kind, op, true))
        return -ENAMETOOLONG;
    uint8_t head[ARTIFACT_HEAD];
    memcpy(head, ARTIFACT_MAGIC, 8);
    sl_store_u32(head + 8, FORMAT_VERSION);
    sl_store_u32(head + 12, (uint32_t)kind);
    sl_store_u128(head + 16, st->opt.cluster);
    sl_store_u64(head + 32, st->opt.group);
    sl_store_u64(head + 40, op);
    sl_store_u64(head + 48, seq);
    sl_store_u64(head + 56, bytes.len);
    sl_store_u64(head + 64, sl_xxh3_64(head, 64));
    /* Header and bytes from where they are: a snapshot may be large, so it is not copied. */
    struct iovec iov[2] = {{head, sizeof(head)}, {(void *)bytes.ptr, bytes.len}};
    int fd = sl_io_open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, sl_io_file_mode());
    int rc = fd < 0 ? fd : sl_io_pwritev_all(fd, iov, bytes.len > 0 ? 2 : 1, 0);
    if (rc == 0)
        rc = sl_io_fsync(fd);
    if (fd >= 0)
        sl_io_close(fd);
    if (rc == 0)
        rc = sl_io_rename(tmp, path);
    if (rc < 0) {
        sl_log_error("%s: cannot write: %s", tmp, strerror(-rc));
        sl_io_unlink(tmp);
    }
    return rc;
}

/* Records a set written with seq: the set of the same op is replaced, else the oldest. */
static void artifact_set_note(sl_vsr_storage_dir_t *st, uint64_t op, uint64_t seq)
{
    artifact_set_t *victim = &st->sets[0];
    for (int i = 0; i < ARTIFACT_SETS; i++) {
        artifact_set_t *s = &st->sets[i];
        if (s->used && s->op == op) {
            victim = s;
            break;
        }
        if (!s->used || (victim->used && s->seq < victim->seq))
            victim = s;
    }
    if (victim->used && victim->op != op && victim->seq > seq)
        return; /* older than every set kept (open reads files in any order) */
    if (victim->used && victim->op == op && victim->seq > seq)
        seq = victim->seq; /* the set's newer file */
    *victim = (artifact_set_t){true, op, seq};
}

static bool artifact_kept(const sl_vsr_storage_dir_t *st, uint64_t op)
{
    for (int i = 0; i < ARTIFACT_SETS; i++) {
        if (st->sets[i].used && st->sets[i].op == op)
            return true;
    }
    return false;
}

/* Reads the header of one artifact file; its sequence number, 0 when it does not verify. */
static uint64_t artifact_file_seq(const sl_vsr_storage_dir_t *st, int kind, uint64_t op)
{
    char path[PATH_MAX];
    if (!artifact_path(st, path, kind, op, false))
        return 0;
    int fd = sl_io_open(path, O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0)
        return 0;
    uint8_t head[ARTIFACT_HEAD];
    uint64_t size = 0;
    uint64_t seq = 0;
    if (sl_io_size(fd, &size) == 0 &&
        sl_io_pread_all(fd, head, sizeof(head), 0) == (ssize_t)sizeof(head))
        seq = artifact_head_check(st, head, size, kind, op);
    sl_io_close(fd);
    return seq;
}

/* Walks the directory: with prune, removes artifact files of sets not kept and leftover
 * .tmp files; without, notes every set whose files verify (open). Bounded by the entries. */
static void artifact_scan(sl_vsr_storage_dir_t *st, bool prune)
{
    DIR *d = opendir(st->dir);
    if (d == NULL) {
        sl_log_warn("%s: cannot list: %s", st->dir, strerror(errno));
        return;
    }
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        int kind;
        uint64_t op;
        bool tmp;
        if (!artifact_name_parse(de->d_name, &kind, &op, &tmp))
            continue;
        if (!prune && !tmp) {
            uint64_t seq = artifact_file_seq(st, kind, op);
            if (seq > 0)
                artifact_set_note(st, op, seq);
            if (seq > st->artifact_seq)
                st->artifact_seq = seq;
        } else if (tmp || (prune && !artifact_kept(st, op))) {
            char path[PATH_MAX];
            if (artifact_path(st, path, kind, op, tmp))
                sl_io_unlink(path);
        }
    }
    closedir(d);
}

static int write_artifacts(void *ctx, uint64_t op, sl_span_t snapshot, sl_span_t table)
{
    sl_vsr_storage_dir_t *st = ctx;
    /* The cached copies may be of this op's older files. */
    st->cache[0].valid = st->cache[1].valid = false;
    /* Taken even when the write fails: a file it left carries the number. */
    uint64_t seq = ++st->artifact_seq;
    sl_span_t bytes[2] = {snapshot, table};
    int rc = 0;
    for (int k = 0; k < 2 && rc == 0; k++)
        rc = artifact_write(st, k, op, seq, bytes[k]);
    if (rc == 0)
        rc = sl_io_fsync_dir(st->dir);
    if (rc < 0) {
        sl_log_error("%s: checkpoint %" PRIu64 " not written: %s", st->dir, op, strerror(-rc));
        st->info.state_failures++;
        /* Half a set of a new op would count, at the next open, as a newer set than the
         * ones kept; a kept op's files are the same checkpoint's either way. */
        for (int k = 0; k < 2 && !artifact_kept(st, op); k++) {
            char path[PATH_MAX];
            if (artifact_path(st, path, k, op, false))
                sl_io_unlink(path);
        }
        return -SL_ERR_CANNOT_WRITE_TO_FILE;
    }
    artifact_set_note(st, op, seq);
    /* Only now: until the new set is durable, the older ones are what a record names. */
    artifact_scan(st, true);
    return 0;
}

static sl_span_t read_artifact(void *ctx, uint64_t op, uint8_t kind)
{
    sl_vsr_storage_dir_t *st = ctx;
    if (kind > SL_VSR_ARTIFACT_CLIENT_TABLE)
        return sl_span(NULL, 0);
    artifact_cache_t *c = &st->cache[kind];
    if (!(c->valid && c->op == op)) {
        /* A peer's state transfer asks for one chunk at a time: the file is read once and
         * served from memory until a new checkpoint is written. */
        c->valid = false;
        char path[PATH_MAX];
        if (!artifact_path(st, path, kind, op, false))
            return sl_span(NULL, 0);
        uint64_t max = st->opt.artifact_max + ARTIFACT_HEAD;
        int rc = sl_io_read_file(path, &c->file, max > SIZE_MAX ? SIZE_MAX : (size_t)max);
        if (rc < 0) {
            if (rc != -ENOENT)
                sl_log_warn("%s: cannot read: %s", path, strerror(-rc));
            return sl_span(NULL, 0);
        }
        if (artifact_head_check(st, c->file.data, c->file.len, kind, op) == 0) {
            sl_log_warn("%s: header does not verify", path);
            return sl_span(NULL, 0);
        }
        c->valid = true;
        c->op = op;
    }
    return sl_span(c->file.data + ARTIFACT_HEAD, c->file.len - ARTIFACT_HEAD);
}

/* --- open / close ----------------------------------------------------------------------- */

static int options_check(const sl_vsr_storage_options_t *o, char *err, size_t err_len)
{
    if (o->slot_count < 1 || o->slot_size % 4096u != 0 ||
        o->slot_size <= SL_VSR_STORAGE_SLOT_HEADER + SL_HEADER_SIZE || o->artifact_max < 1)
        return fail(err, err_len, -SL_ERR_INVALID_CONFIGURATION,
                    "consensus storage: slot_count must be positive, slot_size a multiple of "
                    "4096 holding a prepare, artifact_max positive");
    if (journal_size(o) > (uint64_t)INT64_MAX / 2)
        return fail(err, err_len, -SL_ERR_INVALID_CONFIGURATION,
                    "consensus storage: %" PRIu32 " slots of %" PRIu32 " bytes is too large",
                    o->slot_count, o->slot_size);
    return 0;
}

static int alloc_dir(const char *dir, const sl_vsr_storage_options_t *o, sl_vsr_storage_dir_t **out,
                     char *err, size_t err_len)
{
    sl_vsr_storage_dir_t *st = calloc(1, sizeof(*st));
    *out = st;
    if (st == NULL)
        return fail(err, err_len, -SL_ERR_CANNOT_READ_FILE, "%s: out of memory", dir);
    st->journal_fd = st->state_fd[0] = st->state_fd[1] = -1;
    st->state_newest = -1;
    st->opt = *o;
    sl_buf_init(&st->state, SL_VSR_STORAGE_STATE_MAX);
    sl_buf_init(&st->image, 0);
    sl_buf_init(&st->slot_read, o->slot_size);
    for (int k = 0; k < 2; k++)
        sl_buf_init(&st->cache[k].file, 0);
    st->queue = calloc(o->slot_count, sizeof(*st->queue));
    st->delivering = calloc(o->slot_count, sizeof(*st->delivering));
    st->inflight = calloc(o->slot_count, 1);
    st->unwritten = calloc(o->slot_count, 1);
    int n = snprintf(st->dir, sizeof(st->dir), "%s", dir);
    if (n <= 0 || (size_t)n >= sizeof(st->dir) - 32)
        return fail(err, err_len, -SL_ERR_INVALID_CONFIGURATION, "%s: path too long", dir);
    if (!st->queue || !st->delivering || !st->inflight || !st->unwritten)
        return fail(err, err_len, -SL_ERR_CANNOT_READ_FILE, "%s: out of memory", dir);
    return 0;
}

/* Makes dir exist; *created when this call made it. */
static int make_dir(const char *dir, bool *created, char *err, size_t err_len)
{
    int rc = sl_io_mkdir(dir, sl_io_dir_mode());
    *created = rc == 0;
    if (rc < 0 && rc != -EEXIST)
        return fail(err, err_len, -SL_ERR_CANNOT_CREATE_STATE_DIRECTORY, "cannot create %s: %s",
                    dir, strerror(-rc));
    return 0;
}

/* fsyncs dir, and its parent when dir itself is new, so what open created survives a crash. */
static int sync_created(const char *dir, bool dir_created, char *err, size_t err_len)
{
    int rc = sl_io_fsync_dir(dir);
    if (rc == 0 && dir_created) {
        char parent[PATH_MAX];
        snprintf(parent, sizeof(parent), "%s", dir);
        char *slash = strrchr(parent, '/');
        if (slash == parent)
            slash[1] = '\0';
        else if (slash != NULL)
            *slash = '\0';
        else
            snprintf(parent, sizeof(parent), ".");
        rc = sl_io_fsync_dir(parent);
    }
    if (rc < 0)
        return fail(err, err_len, -SL_ERR_CANNOT_SYNC_FILE, "cannot fsync %s: %s", dir,
                    strerror(-rc));
    return 0;
}

int sl_vsr_storage_open(const char *dir, const sl_vsr_storage_options_t *options,
                        sl_vsr_storage_dir_t **out, char *err, size_t err_len)
{
    *out = NULL;
    int rc = options_check(options, err, err_len);
    if (rc < 0)
        return rc;
    sl_vsr_storage_dir_t *st = NULL;
    rc = alloc_dir(dir, options, &st, err, err_len);
    bool dir_created = false, created = false;
    if (rc == 0)
        rc = make_dir(st->dir, &dir_created, err, err_len);
    /* The state copies first: a directory they refuse gets no journal created in it. */
    for (int i = 0; i < 2 && rc == 0; i++)
        rc = state_open(st, i, &created, err, err_len);
    if (rc == 0)
        rc = journal_open(st, &created, err, err_len);
    if (rc == 0 && (created || dir_created))
        rc = sync_created(st->dir, dir_created, err, err_len);
    if (rc < 0) {
        sl_vsr_storage_close(st);
        return rc;
    }
    artifact_scan(st, false);
    *out = st;
    return 0;
}

void sl_vsr_storage_close(sl_vsr_storage_dir_t *st)
{
    if (st == NULL)
        return;
    if (st->journal_fd >= 0)
        sl_io_close(st->journal_fd);
    for (int i = 0; i < 2; i++) {
        if (st->state_fd[i] >= 0)
            sl_io_close(st->state_fd[i]);
        sl_buf_free(&st->cache[i].file);
    }
    sl_buf_free(&st->state);
    sl_buf_free(&st->image);
    sl_buf_free(&st->slot_read);
    free(st->queue);
    free(st->delivering);
    free(st->inflight);
    free(st->unwritten);
    free(st);
}

sl_vsr_storage_t sl_vsr_storage_interface(sl_vsr_storage_dir_t *st)
{
    return (sl_vsr_storage_t){.ctx = st,
                              .write_prepare = write_prepare,
                              .read_prepare = read_prepare,
                              .write_state = write_state,
                              .read_state = read_state,
                              .write_artifacts = write_artifacts,
                              .read_artifact = read_artifact};
}

void sl_vsr_storage_info(const sl_vsr_storage_dir_t *st, sl_vsr_storage_info_t *out)
{
    *out = st->info;
}
