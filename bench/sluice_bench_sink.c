/* sluice-bench message sink: the baseline of the message figures. A forked
 * child that does what a message server must at the least, and nothing else:
 * read a whole request frame, write its body to a file (and fdatasync it, in
 * one mode), or read a reply's worth back from that file, and answer. Also
 * the lockstep "one frame, one whole reply" client that drives both it and
 * sluiced over raw sockets, so the two are measured by the same code. */
#define _GNU_SOURCE /* accept4 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/clock.h"
#include "sluice_bench.h"

enum {
    /* Where a sink request carries its mode and, for reads, the reply body
     * length: two u32 at the end of the 256-byte header (sink only). */
    SINK_OFF_LENGTH = 248,
    SINK_OFF_MODE = 252,
    SINK_FRAME_MAX = 64 * 1024 * 1024, /* sluiced's default frame limit */
    SINK_POLL_MS = 1000,               /* how often an idle sink checks its lifetime */
};

/* --- the sink process ------------------------------------------------------------- */

typedef struct sink {
    int write_fd, sync_fd; /* SB_SINK_WRITE appends to write_fd, SB_SINK_WRITE_SYNC to sync_fd */
    off_t write_size;      /* bytes in write_fd, the span reads wrap around in */
    off_t read_pos;        /* where the next SB_SINK_READ starts */
    uint8_t *buf;          /* request bodies and read replies */
    size_t cap;
} sink_t;

static bool sink_recv(int fd, uint8_t *p, size_t n)
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

static bool sink_send(int fd, struct iovec *iov, int count)
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

static bool sink_room(sink_t *s, size_t n)
{
    if (n <= s->cap)
        return true;
    free(s->buf);
    s->buf = malloc(n);
    s->cap = s->buf ? n : 0;
    return s->buf != NULL;
}

static bool write_whole(int fd, const uint8_t *p, size_t n)
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

/* length bytes of the write file from the read position (wrapping to the
 * start at its end) into s->buf; false when the file is shorter. */
static bool sink_read(sink_t *s, size_t length)
{
    if ((off_t)length > s->write_size || !sink_room(s, length))
        return false;
    if (s->read_pos + (off_t)length > s->write_size)
        s->read_pos = 0;
    size_t done = 0;
    while (done < length) {
        ssize_t k = pread(s->write_fd, s->buf + done, length - done, s->read_pos + (off_t)done);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return false;
        done += (size_t)k;
    }
    s->read_pos += (off_t)length;
    return true;
}

/* One request: its body (if any) is read whole, then the mode's work, then
 * the reply. Returns false when the connection is over. */
static bool sink_request(sink_t *s, int fd)
{
    uint8_t head[SL_HEADER_SIZE], reply[SL_HEADER_SIZE];
    if (!sink_recv(fd, head, sizeof(head)))
        return false;
    uint32_t size = sl_header_size(head), mode = sl_load_u32(head + SINK_OFF_MODE);
    uint32_t length = sl_load_u32(head + SINK_OFF_LENGTH);
    size_t body = size - SL_HEADER_SIZE;
    if (size < SL_HEADER_SIZE || size > SINK_FRAME_MAX || !sink_room(s, body) ||
        !sink_recv(fd, s->buf, body))
        return false;
    uint32_t status = 0, reply_body = 0;
    if (mode == SB_SINK_WRITE || mode == SB_SINK_WRITE_SYNC) {
        int file = mode == SB_SINK_WRITE ? s->write_fd : s->sync_fd;
        if (!write_whole(file, s->buf, body) || (mode == SB_SINK_WRITE_SYNC && fdatasync(file)))
            status = SL_ERR_CANNOT_WRITE_TO_FILE;
        else if (mode == SB_SINK_WRITE)
            s->write_size += (off_t)body;
    } else if (mode == SB_SINK_READ && length <= SINK_FRAME_MAX - SL_HEADER_SIZE) {
        if (sink_read(s, length))
            reply_body = length;
        else
            status = SL_ERR_CANNOT_READ_FILE;
    } else if (mode == SB_SINK_RESET) {
        if (ftruncate(s->write_fd, 0) != 0 || ftruncate(s->sync_fd, 0) != 0)
            status = SL_ERR_CANNOT_WRITE_TO_FILE;
        s->write_size = s->read_pos = 0;
    } else {
        status = SL_ERR_INVALID_COMMAND;
    }
    sl_reply_header_t h = {
        .size = SL_HEADER_SIZE + reply_body, .operation = SL_OP_NON_REPLICATED, .status = status};
    sl_reply_header_encode(reply, &h);
    struct iovec iov[2] = {{reply, sizeof(reply)}, {s->buf, reply_body}};
    return sink_send(fd, iov, reply_body ? 2 : 1);
}

/* Serves one connection at a time, blocking: the bench opens one. */
static void sink_serve(int listen_fd, sink_t *s, double lifetime_seconds)
{
    uint64_t deadline = sl_clock_monotonic_ns() + (uint64_t)(lifetime_seconds * 1e9);
    struct timeval idle = {SINK_POLL_MS / 1000, 0};
    setsockopt(listen_fd, SOL_SOCKET, SO_RCVTIMEO, &idle, sizeof(idle));
    while (sl_clock_monotonic_ns() < deadline) {
        int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0)
            continue; /* the timeout: look at the clock again */
        /* The accepted socket inherits the listener's timeout; a bench
         * busy with other figures leaves it idle for seconds. */
        struct timeval never = {0, 0};
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &never, sizeof(never));
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        while (sl_clock_monotonic_ns() < deadline && sink_request(s, fd)) {
        }
        close(fd);
    }
}

static int open_sink_file(const char *path)
{
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0)
        sb_die("cannot create %s: %s", path, strerror(errno));
    return fd;
}

pid_t sb_sink_start(const char *dir, uint16_t *port, double lifetime_seconds, sb_sink_files_t *f)
{
    snprintf(f->write_path, sizeof(f->write_path), "%s/sluice-bench-sink.bin", dir);
    snprintf(f->sync_path, sizeof(f->sync_path), "%s/sluice-bench-sink-fsync.bin", dir);
    sink_t s = {.write_fd = open_sink_file(f->write_path), .sync_fd = open_sink_file(f->sync_path)};
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(fd, 4) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0)
        sb_die("sink socket: %s", strerror(errno));
    *port = ntohs(a.sin_port);
    pid_t pid = fork();
    if (pid < 0)
        sb_die("fork: %s", strerror(errno));
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive the bench */
        signal(SIGINT, SIG_DFL);          /* the bench's handlers are not for us */
        signal(SIGTERM, SIG_DFL);
        signal(SIGHUP, SIG_DFL);
        sink_serve(fd, &s, lifetime_seconds);
        _exit(0);
    }
    close(fd);
    close(s.write_fd);
    close(s.sync_fd);
    sb_child_track(pid);
    return pid;
}

void sb_sink_stop(pid_t pid, const sb_sink_files_t *f)
{
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    sb_child_untrack(pid);
    unlink(f->write_path);
    unlink(f->sync_path);
}

void sb_sink_frame(uint8_t *frame, uint32_t size, uint32_t mode, uint32_t read_length)
{
    sl_store_u32(frame + SL_HDR_OFF_SIZE, size);
    sl_store_u32(frame + SINK_OFF_MODE, mode);
    sl_store_u32(frame + SINK_OFF_LENGTH, read_length);
}

/* --- the lockstep frame client ------------------------------------------------------ */

void sb_send_all(int fd, const void *p, size_t n)
{
    const uint8_t *b = p;
    while (n > 0) {
        ssize_t k = send(fd, b, n, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            sb_die("send: %s", k < 0 ? strerror(errno) : "nothing sent");
        b += k;
        n -= (size_t)k;
    }
}

static void recv_exact(int fd, uint8_t *p, size_t n)
{
    while (n > 0) {
        ssize_t k = recv(fd, p, n, MSG_WAITALL);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            sb_die("no reply: %s", errno == EAGAIN ? "timed out" : strerror(errno));
        if (k == 0)
            sb_die("the server closed the connection");
        p += k;
        n -= (size_t)k;
    }
}

size_t sb_frame_trip(sb_trip_t *t, const uint8_t *frame, size_t len)
{
    sb_send_all(t->fd, frame, len);
    uint8_t head[SL_HEADER_SIZE];
    recv_exact(t->fd, head, sizeof(head));
    if (head[SL_HDR_OFF_COMMAND] == SL_COMMAND_EVICTION)
        sb_die("evicted by the server (reason %u)", head[SL_EVI_OFF_REASON]);
    if (head[SL_HDR_OFF_COMMAND] != SL_COMMAND_REPLY)
        sb_die("not a reply header (command %u)", head[SL_HDR_OFF_COMMAND]);
    uint32_t status = sl_load_u32(head + SL_REP_OFF_STATUS), size = sl_header_size(head);
    if (status != 0)
        sb_die("%s answered status %u (%s)", t->name, status, sl_strerror((int)status));
    if (size < SL_HEADER_SIZE || size > SINK_FRAME_MAX)
        sb_die("reply size %u out of range", size);
    size_t body = size - SL_HEADER_SIZE;
    if (body > t->cap) {
        free(t->reply);
        t->reply = malloc(body);
        t->cap = t->reply ? body : 0;
        if (!t->reply)
            sb_die("out of memory");
    }
    recv_exact(t->fd, t->reply, body);
    t->reply_len = body;
    return size;
}

void sb_trip_close(sb_trip_t *t)
{
    if (t->fd >= 0)
        close(t->fd);
    free(t->reply);
    *t = (sb_trip_t){.fd = -1};
}
