/* Partitions' first segments created on an io_uring of their own (server/segment_create.h). */
#include "server/segment_create.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "base/io.h"
#include "base/log.h"
#include "store/segment.h"

/* Directories a creation may make below the data directory (streams/S/topics/T/partitions/P
 * is six), plus the two files and the test delay. */
#define DIRS_MAX     12u
#define RING_ENTRIES 1024u

/* The request kinds, in user_data's low byte. */
enum { OP_DELAY = 0, OP_LOG = 1, OP_INDEX = 2, OP_DIR = 3 /* + i: directory i, the leaf last */ };

typedef struct create_slot {
    sl_partition_t *p; /* NULL: free */
    uint64_t seq;
    uint32_t pending; /* requests not completed yet */
    uint32_t dirs;    /* directories asked for (the leaf is dirs - 1) */
    int dir_rc;
    int log_fd;
    int index_fd;
    char *names; /* the paths, alive until completion */
    struct __kernel_timespec delay;
} create_slot_t;

struct sl_segment_creator {
    struct io_uring ring;
    int event_fd;
    char data_dir[PATH_MAX];
    size_t data_dir_len;
    sl_partition_creator_t hook;
    create_slot_t slots[SL_SEGMENT_CREATE_MAX];
    uint32_t in_flight;
    uint32_t delay_ms;
    bool door_closed;
    bool on_loop; /* test faults: begin says no, so sl_io fault plans see the creations */
    bool reaping; /* inside reap: a completion's flush may not start another reap */
    sl_segment_create_stats_t stats;
};

static bool begin(void *ctx, sl_partition_t *p, uint64_t seq, const char *dir, uint64_t start,
                  bool make_dir);
static void wait_all(void *ctx);

int sl_segment_creator_create(const char *data_dir, sl_segment_creator_t **out)
{
    *out = NULL;
    sl_segment_creator_t *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    size_t len = strlen(data_dir);
    while (len > 1 && data_dir[len - 1] == '/')
        len--;
    if (len == 0 || len >= sizeof(c->data_dir)) {
        free(c);
        return -ENAMETOOLONG;
    }
    memcpy(c->data_dir, data_dir, len);
    c->data_dir[len] = '\0';
    c->data_dir_len = len;
    struct io_uring_params params = {.flags = IORING_SETUP_SUBMIT_ALL};
    int rc = io_uring_queue_init_params(RING_ENTRIES, &c->ring, &params);
    if (rc < 0) {
        free(c);
        return rc;
    }
    c->event_fd = eventfd(0, EFD_CLOEXEC);
    if (c->event_fd < 0 || (rc = io_uring_register_eventfd(&c->ring, c->event_fd)) < 0) {
        rc = c->event_fd < 0 ? -errno : rc;
        if (c->event_fd >= 0)
            close(c->event_fd);
        io_uring_queue_exit(&c->ring);
        free(c);
        return rc;
    }
    c->hook = (sl_partition_creator_t){begin, wait_all, c};
    *out = c;
    return 0;
}

const sl_partition_creator_t *sl_segment_creator_hook(sl_segment_creator_t *c)
{
    return &c->hook;
}

int sl_segment_creator_event_fd(const sl_segment_creator_t *c)
{
    return c->event_fd;
}

void sl_segment_creator_set_test(sl_segment_creator_t *c, uint32_t delay_ms, bool on_loop)
{
    c->delay_ms = delay_ms;
    c->on_loop = on_loop;
}

void sl_segment_creator_close_door(sl_segment_creator_t *c)
{
    c->door_closed = true;
}

uint32_t sl_segment_creator_in_flight(const sl_segment_creator_t *c)
{
    return c->in_flight;
}

void sl_segment_creator_stats(const sl_segment_creator_t *c, sl_segment_create_stats_t *out)
{
    *out = c->stats;
}

static uint64_t user_data(uint32_t slot, uint32_t op)
{
    return (uint64_t)slot << 8 | op;
}

static bool begin(void *ctx, sl_partition_t *p, uint64_t seq, const char *dir, uint64_t start,
                  bool make_dir)
{
    sl_segment_creator_t *c = ctx;
    if (c->on_loop)
        return false;
    if (c->door_closed || c->in_flight >= SL_SEGMENT_CREATE_MAX) {
        c->stats.refused++;
        return false;
    }
    size_t len = strlen(dir);
    /* The directories to make: every component of dir below the data directory, parents
     * first (a mkdirat that finds one there fails with EEXIST, off the loop, and the chain
     * goes on). A dir outside the data directory gets only its leaf. */
    size_t cuts[DIRS_MAX];
    uint32_t dirs = 0;
    if (make_dir) {
        size_t from = len; /* the leaf alone */
        if (len > c->data_dir_len && strncmp(dir, c->data_dir, c->data_dir_len) == 0 &&
            dir[c->data_dir_len] == '/')
            from = c->data_dir_len + 1;
        for (size_t i = from; i < len; i++) {
            if (dir[i] == '/' && dir[i - 1] != '/') {
                if (dirs == DIRS_MAX - 1)
                    return false;
                cuts[dirs++] = i;
            }
        }
        cuts[dirs++] = len;
    }
    uint32_t slot = 0;
    while (c->slots[slot].p)
        slot++;
    sl_assert(slot < SL_SEGMENT_CREATE_MAX);
    create_slot_t *s = &c->slots[slot];
    size_t stride = len + 32;
    char *names = malloc(stride * (dirs + 2));
    if (!names)
        return false;
    uint32_t ops = dirs + 2 + (c->delay_ms ? 1u : 0u);
    if (io_uring_sq_space_left(&c->ring) < ops) {
        free(names);
        c->stats.refused++;
        return false;
    }
    *s = (create_slot_t){.p = p,
                         .seq = seq,
                         .pending = ops,
                         .dirs = dirs,
                         .log_fd = -ENOENT,
                         .index_fd = -ENOENT,
                         .names = names};
    struct io_uring_sqe *sqe;
    if (c->delay_ms) {
        s->delay = (struct __kernel_timespec){
            .tv_sec = c->delay_ms / 1000u, .tv_nsec = (long long)(c->delay_ms % 1000u) * 1000000};
        sqe = io_uring_get_sqe(&c->ring);
        io_uring_prep_timeout(sqe, &s->delay, 0, 0);
        io_uring_sqe_set_data64(sqe, user_data(slot, OP_DELAY));
        sqe->flags |= IOSQE_IO_HARDLINK;
    }
    for (uint32_t i = 0; i < dirs; i++) {
        char *name = names + stride * i;
        memcpy(name, dir, cuts[i]);
        name[cuts[i]] = '\0';
        sqe = io_uring_get_sqe(&c->ring);
        io_uring_prep_mkdirat(sqe, AT_FDCWD, name, sl_io_dir_mode());
        io_uring_sqe_set_data64(sqe, user_data(slot, OP_DIR + i));
        sqe->flags |= IOSQE_IO_HARDLINK;
    }
    static const char *const exts[2] = {SL_SEGMENT_LOG_EXT, SL_SEGMENT_INDEX_EXT};
    for (uint32_t i = 0; i < 2; i++) {
        char *name = names + stride * (dirs + i);
        snprintf(name, stride, "%s/%020llu%s", dir, (unsigned long long)start, exts[i]);
        sqe = io_uring_get_sqe(&c->ring);
        io_uring_prep_openat(sqe, AT_FDCWD, name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC,
                             sl_io_file_mode());
        io_uring_sqe_set_data64(sqe, user_data(slot, i == 0 ? OP_LOG : OP_INDEX));
        if (i == 0)
            sqe->flags |= IOSQE_IO_HARDLINK;
    }
    int rc = io_uring_submit(&c->ring);
    if (rc < 0) /* still in the submission queue: the next submit or wait sends them */
        sl_log_warn("segment creator: io_uring_submit: %s", strerror(-rc));
    c->in_flight++;
    c->stats.begun++;
    return true;
}

/* One completion; hands the creation back when it was its last. */
static void complete(sl_segment_creator_t *c, const struct io_uring_cqe *cqe)
{
    uint64_t data = io_uring_cqe_get_data64(cqe);
    uint32_t slot = (uint32_t)(data >> 8), op = (uint32_t)(data & 0xff);
    sl_assert(slot < SL_SEGMENT_CREATE_MAX);
    create_slot_t *s = &c->slots[slot];
    sl_assert(s->p && s->pending > 0);
    if (op == OP_LOG)
        s->log_fd = cqe->res;
    else if (op == OP_INDEX)
        s->index_fd = cqe->res;
    else if (op >= OP_DIR && op - OP_DIR == s->dirs - 1)
        s->dir_rc = cqe->res;
    if (--s->pending > 0)
        return;
    sl_partition_t *p = s->p;
    uint64_t seq = s->seq;
    int dir_rc = s->dir_rc, log_fd = s->log_fd, index_fd = s->index_fd;
    free(s->names);
    *s = (create_slot_t){0};
    c->in_flight--;
    if (log_fd >= 0 && index_fd >= 0)
        c->stats.completed++;
    else
        c->stats.fell_back++;
    sl_partition_created(p, seq, dir_rc, log_fd, index_fd);
}

void sl_segment_creator_reap(sl_segment_creator_t *c)
{
    if (c->reaping)
        return;
    c->reaping = true;
    if (io_uring_sq_ready(&c->ring) > 0)
        (void)io_uring_submit(&c->ring);
    struct io_uring_cqe *cqe;
    while (io_uring_peek_cqe(&c->ring, &cqe) == 0) {
        struct io_uring_cqe copy = *cqe;
        io_uring_cqe_seen(&c->ring, cqe);
        complete(c, &copy);
    }
    c->reaping = false;
}

static void wait_all(void *ctx)
{
    sl_segment_creator_t *c = ctx;
    if (c->in_flight == 0)
        return;
    c->stats.waits++;
    while (c->in_flight > 0) {
        struct io_uring_cqe *cqe;
        int rc = io_uring_submit_and_wait(&c->ring, 1);
        if (rc < 0 && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY) {
            sl_log_error("segment creator: waiting for creations: %s", strerror(-rc));
            abort();
        }
        while (io_uring_peek_cqe(&c->ring, &cqe) == 0) {
            struct io_uring_cqe copy = *cqe;
            io_uring_cqe_seen(&c->ring, cqe);
            complete(c, &copy);
        }
    }
}

void sl_segment_creator_destroy(sl_segment_creator_t *c)
{
    if (!c)
        return;
    c->door_closed = true;
    sl_assert(c->in_flight == 0); /* the partitions, closed first, waited for theirs */
    sl_log_info("first segments: %llu created off the loop, %llu not (%llu refused, %llu fell "
                "back to the loop), %llu waits for creations in flight",
                (unsigned long long)c->stats.completed,
                (unsigned long long)(c->stats.refused + c->stats.fell_back),
                (unsigned long long)c->stats.refused, (unsigned long long)c->stats.fell_back,
                (unsigned long long)c->stats.waits);
    io_uring_queue_exit(&c->ring);
    close(c->event_fd);
    free(c);
}
