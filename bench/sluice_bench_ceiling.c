/* sluice-bench's `ceiling` transport: the least a message server must do
 * for the requests of Iggy's kinds, and nothing else. A forked child with
 * one blocking thread per connection: a SendMessages request is read whole,
 * its body write()n to a file of that connection (and fdatasync'd when the
 * run enforces fsync) and answered with a 256-byte reply; a PollMessages
 * request is answered from memory with the record the connection loaded
 * beforehand, cut to the count asked; anything else gets an empty success.
 * The actors send it the very frames they send sluiced, so the ratio of
 * the two is the server's share. */
#define _GNU_SOURCE /* accept4 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sluice_bench_run.h"
#include "wire/cmd_messages.h"
#include "wire/command.h"

enum {
    FRAME_MAX = 64 * 1024 * 1024, /* sluiced's default frame limit */
    LOAD_FRAMES_MAX = SB_BATCH_MESSAGES_MAX,
};

typedef struct ceiling {
    const char *dir;
    bool fsync;
    _Atomic uint32_t next_file;
} ceiling_t;

typedef struct conn {
    ceiling_t *c;
    int fd, file;
    char path[400];
    uint8_t *buf; /* request bodies */
    size_t cap;
    uint8_t *record; /* the loaded record */
    size_t record_len;
    uint32_t record_count;
    uint32_t *frame_end; /* end of frame i, from the record's start */
} conn_t;

static bool recv_all(int fd, uint8_t *p, size_t n)
{
    while (n > 0) {
        ssize_t k = recv(fd, p, n, MSG_WAITALL);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return false;
        p += k;
        n -= (size_t)k;
    }
    return true;
}

static bool send_iov(int fd, struct iovec *iov, int count)
{
    int i = 0;
    while (i < count) { /* bounded: each turn sends >= 1 byte or fails */
        ssize_t k = writev(fd, iov + i, count - i);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return false;
        size_t left = (size_t)k;
        while (i < count && left >= iov[i].iov_len)
            left -= iov[i++].iov_len;
        if (i < count) {
            iov[i].iov_base = (uint8_t *)iov[i].iov_base + left;
            iov[i].iov_len -= left;
        }
    }
    return true;
}

static bool write_all(int fd, const uint8_t *p, size_t n)
{
    while (n > 0) {
        ssize_t k = write(fd, p, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return false;
        p += k;
        n -= (size_t)k;
    }
    return true;
}

/* The loaded body is a poll reply: the 16-byte prefix, then one record
 * whose frames tile it. Frame ends are noted once, so a poll asking fewer
 * messages costs one lookup. */
static bool load(conn_t *k, const uint8_t *body, size_t len)
{
    if (len < SL_POLL_REPLY_PREFIX_SIZE + SL_BATCH_HEADER_SIZE)
        return false;
    sl_span_t rec = sl_span(body + SL_POLL_REPLY_PREFIX_SIZE, len - SL_POLL_REPLY_PREFIX_SIZE);
    if (sl_batch_check_layout(rec) != 0)
        return false;
    sl_batch_header_t h;
    sl_batch_header_read(rec.ptr, &h);
    if (h.message_count > LOAD_FRAMES_MAX)
        return false;
    free(k->record);
    free(k->frame_end);
    k->record = malloc(rec.len);
    k->frame_end = malloc(sizeof(uint32_t) * (h.message_count + 1u));
    if (!k->record || !k->frame_end)
        return false;
    memcpy(k->record, rec.ptr, rec.len);
    k->record_len = rec.len;
    k->record_count = h.message_count;
    sl_frame_iter_t it = sl_frame_iter(sl_span(k->record, rec.len));
    sl_message_t m;
    for (uint32_t i = 0; i < h.message_count && sl_frame_next(&it, &m); i++)
        k->frame_end[i] = (uint32_t)(m.frame.ptr + m.frame.len - k->record);
    return true;
}

static bool reply(conn_t *k, uint32_t status, struct iovec *body, int body_count)
{
    uint8_t head[SL_HEADER_SIZE];
    size_t size = SL_HEADER_SIZE;
    for (int i = 0; i < body_count; i++)
        size += body[i].iov_len;
    sl_reply_header_t h = {.size = (uint32_t)size, .operation = SL_OP_NON_REPLICATED,
                           .status = status};
    sl_reply_header_encode(head, &h);
    struct iovec iov[4] = {{head, sizeof(head)}};
    for (int i = 0; i < body_count && i < 3; i++)
        iov[1 + i] = body[i];
    return send_iov(k->fd, iov, 1 + body_count);
}

/* A poll: the first min(count, loaded) frames of the loaded record, under
 * a copy of its header with the count and length of what is sent (the
 * checksum is left as it is: a raw client does not verify it). */
static bool poll_reply(conn_t *k, const uint8_t *body, size_t len)
{
    sl_poll_messages_request_t q;
    if (!k->record || sl_poll_messages_request_decode(sl_span(body, len), &q) != 0)
        return reply(k, 0, NULL, 0); /* nothing loaded: an empty result, as sluiced's */
    uint32_t n = q.count < k->record_count ? q.count : k->record_count;
    uint8_t prefix[SL_POLL_REPLY_PREFIX_SIZE], header[SL_BATCH_HEADER_SIZE];
    size_t frames = n ? k->frame_end[n - 1] - SL_BATCH_HEADER_SIZE : 0;
    sl_store_u32(prefix, q.partition.id);
    sl_store_u64(prefix + 4, n ? n - 1u : 0);
    sl_store_u32(prefix + 12, n);
    memcpy(header, k->record, sizeof(header));
    sl_store_u64(header + SL_BATCH_OFF_LENGTH, SL_BATCH_HEADER_SIZE + frames);
    sl_store_u32(header + SL_BATCH_OFF_COUNT, n);
    struct iovec iov[3] = {{prefix, sizeof(prefix)},
                           {header, sizeof(header)},
                           {k->record + SL_BATCH_HEADER_SIZE, frames}};
    return reply(k, 0, iov, n ? 3 : 1);
}

static bool request(conn_t *k)
{
    uint8_t head[SL_HEADER_SIZE];
    if (!recv_all(k->fd, head, sizeof(head)))
        return false;
    uint32_t size = sl_header_size(head);
    if (size < SL_HEADER_SIZE || size > FRAME_MAX)
        return false;
    size_t body = size - SL_HEADER_SIZE;
    if (body > k->cap) {
        free(k->buf);
        k->buf = malloc(body);
        k->cap = k->buf ? body : 0;
        if (!k->buf)
            return false;
    }
    if (!recv_all(k->fd, k->buf, body))
        return false;
    uint8_t operation = head[SL_REQ_OFF_OPERATION];
    uint32_t code = sl_load_u32(head + SL_REQ_OFF_CODE);
    if (operation == SL_OP_SEND_MESSAGES) {
        bool ok = write_all(k->file, k->buf, body) && (!k->c->fsync || fdatasync(k->file) == 0);
        return reply(k, ok ? 0 : SL_ERR_CANNOT_WRITE_TO_FILE, NULL, 0);
    }
    if (operation == SL_OP_NON_REPLICATED && code == SL_CMD_POLL_MESSAGES)
        return poll_reply(k, k->buf, body);
    if (operation == SL_OP_NON_REPLICATED && code == SB_CEILING_LOAD_CODE)
        return reply(k, load(k, k->buf, body) ? 0 : SL_ERR_INVALID_COMMAND, NULL, 0);
    return reply(k, 0, NULL, 0);
}

static void *serve(void *arg)
{
    conn_t *k = arg;
    uint32_t n = atomic_fetch_add(&k->c->next_file, 1);
    snprintf(k->path, sizeof(k->path), "%s/ceiling-%u.bin", k->c->dir, n);
    k->file = open(k->path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
    int one = 1;
    setsockopt(k->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (k->file >= 0) {
        while (request(k)) { /* until the client closes */
        }
        close(k->file);
        unlink(k->path);
    }
    close(k->fd);
    free(k->buf);
    free(k->record);
    free(k->frame_end);
    free(k);
    return NULL;
}

static void accept_loop(int listen_fd, ceiling_t *c)
{
    for (;;) { /* ends with the process: SIGTERM from the bench, or its death */
        int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            _exit(1);
        }
        conn_t *k = calloc(1, sizeof(*k));
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        if (!k || (k->c = c, k->fd = fd, pthread_create(&t, &attr, serve, k) != 0)) {
            close(fd);
            free(k);
        }
        pthread_attr_destroy(&attr);
    }
}

pid_t sb_ceiling_start(const char *dir, bool fsync, uint16_t *port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
        listen(fd, SB_ACTORS_MAX) != 0 || getsockname(fd, (struct sockaddr *)&a, &len) != 0)
        sb_die("ceiling socket: %s", strerror(errno));
    *port = ntohs(a.sin_port);
    pid_t pid = fork();
    if (pid < 0)
        sb_die("fork: %s", strerror(errno));
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive the bench */
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGHUP, SIG_DFL);
        static ceiling_t c;
        c.dir = dir;
        c.fsync = fsync;
        accept_loop(fd, &c);
        _exit(0);
    }
    close(fd);
    sb_child_track(pid);
    return pid;
}

void sb_ceiling_stop(pid_t pid)
{
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    sb_child_untrack(pid);
}
