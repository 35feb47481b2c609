/* The test harness's TCP proxy (proxy.h): one poll thread, at most
 * PAIRS_MAX forwarded connections, commands through atomics that the
 * thread acknowledges. */
#define _GNU_SOURCE /* accept4 */
#include "proxy.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define PAIRS_MAX 16
#define POLL_MS   10

/* What the thread is told to do; a one-way cut names the side whose bytes
 * are dropped (pair_t.fd's index). */
enum { WANT_FORWARD, WANT_CUT, WANT_STOP, WANT_DROP_DIALER, WANT_DROP_TARGET };

typedef struct pair {
    int fd[2];    /* accepted side, target side; -1 when free */
    bool dropped; /* a one-way cut threw bytes of it away: closed on restore */
} pair_t;

struct th_proxy {
    int listen_fd;
    uint16_t port;
    uint16_t target_port;
    pthread_t thread;
    pair_t pairs[PAIRS_MAX];
    atomic_int wanted; /* the WANT_* below */
    atomic_int state;  /* what the thread has applied */
    atomic_uint forwarded;
};

static void die(const char *what)
{
    fprintf(stderr, "proxy: %s: %s\n", what, strerror(errno));
    abort();
}

static void pair_close(pair_t *p)
{
    for (int i = 0; i < 2; i++) {
        if (p->fd[i] >= 0)
            close(p->fd[i]);
        p->fd[i] = -1;
    }
    p->dropped = false;
}

static int connect_target(uint16_t port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static void accept_one(th_proxy_t *p, bool cut)
{
    int fd = accept4(p->listen_fd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0)
        return;
    pair_t *free_pair = NULL;
    for (int i = 0; i < PAIRS_MAX && !free_pair; i++)
        if (p->pairs[i].fd[0] < 0)
            free_pair = &p->pairs[i];
    int target = cut || !free_pair ? -1 : connect_target(p->target_port);
    if (target < 0) {
        close(fd); /* cut, full, or the target is down: the dialer sees EOF */
        return;
    }
    free_pair->fd[0] = fd;
    free_pair->fd[1] = target;
    atomic_fetch_add(&p->forwarded, 1);
}

/* Moves what one side has to the other (or, when drop, reads it and
 * throws it away); false when the pair is done. */
static bool forward(pair_t *pr, int from, bool drop)
{
    char buf[65536];
    ssize_t n = recv(pr->fd[from], buf, sizeof(buf), MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return true;
    if (n <= 0)
        return false;
    if (drop) {
        pr->dropped = true;
        return true;
    }
    for (ssize_t off = 0; off < n;) {
        ssize_t w = send(pr->fd[1 - from], buf + off, (size_t)(n - off), MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        off += w;
    }
    return true;
}

/* One poll turn under `wanted` (WANT_FORWARD, WANT_CUT or a one-way cut). */
static void turn(th_proxy_t *p, int wanted)
{
    bool cut = wanted == WANT_CUT;
    int dropped_side = wanted == WANT_DROP_DIALER ? 0 : wanted == WANT_DROP_TARGET ? 1 : -1;
    struct pollfd fds[1 + 2 * PAIRS_MAX];
    int owner[1 + 2 * PAIRS_MAX];
    nfds_t n = 0;
    fds[n] = (struct pollfd){.fd = p->listen_fd, .events = POLLIN};
    owner[n++] = -1;
    for (int i = 0; i < PAIRS_MAX; i++) {
        for (int s = 0; s < 2 && p->pairs[i].fd[0] >= 0; s++) {
            fds[n] = (struct pollfd){.fd = p->pairs[i].fd[s], .events = POLLIN};
            owner[n++] = i * 2 + s;
        }
    }
    if (poll(fds, n, POLL_MS) <= 0)
        return;
    for (nfds_t k = 0; k < n; k++) {
        if (!fds[k].revents)
            continue;
        if (owner[k] < 0) {
            accept_one(p, cut);
            continue;
        }
        pair_t *pr = &p->pairs[owner[k] / 2];
        int side = owner[k] % 2;
        if (pr->fd[0] >= 0 && !forward(pr, side, side == dropped_side))
            pair_close(pr);
    }
}

static void *proxy_main(void *arg)
{
    th_proxy_t *p = arg;
    for (;;) {
        int wanted = atomic_load(&p->wanted);
        for (int i = 0; i < PAIRS_MAX; i++)
            if (wanted == WANT_CUT || wanted == WANT_STOP ||
                (wanted == WANT_FORWARD && p->pairs[i].dropped))
                pair_close(&p->pairs[i]);
        atomic_store(&p->state, wanted);
        if (wanted == WANT_STOP)
            return NULL;
        turn(p, wanted);
    }
}

th_proxy_t *th_proxy_start(uint16_t target_port)
{
    th_proxy_t *p = calloc(1, sizeof(*p));
    if (!p)
        die("calloc");
    for (int i = 0; i < PAIRS_MAX; i++)
        p->pairs[i].fd[0] = p->pairs[i].fd[1] = -1;
    p->target_port = target_port;
    /* Close-on-exec, every socket: a sluiced the harness forks later would
     * otherwise hold copies of them, and a cut would not close a link. */
    p->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    if (p->listen_fd < 0 || bind(p->listen_fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
        listen(p->listen_fd, 16) != 0 ||
        getsockname(p->listen_fd, (struct sockaddr *)&a, &len) != 0)
        die("listen");
    p->port = ntohs(a.sin_port);
    atomic_init(&p->wanted, 0);
    atomic_init(&p->state, 0);
    atomic_init(&p->forwarded, 0);
    if (pthread_create(&p->thread, NULL, proxy_main, p) != 0)
        die("pthread_create");
    return p;
}

uint16_t th_proxy_port(const th_proxy_t *p)
{
    return p->port;
}

/* Waits until the thread applied `want` (it looks every POLL_MS). */
static void command(th_proxy_t *p, int want)
{
    atomic_store(&p->wanted, want);
    for (int i = 0; atomic_load(&p->state) != want; i++) {
        if (i > 100000)
            die("the proxy thread does not answer");
        struct timespec ts = {0, 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

void th_proxy_cut(th_proxy_t *p)
{
    command(p, WANT_CUT);
}

void th_proxy_cut_one_way(th_proxy_t *p, th_proxy_direction_t dropped)
{
    command(p, dropped == TH_PROXY_FROM_DIALER ? WANT_DROP_DIALER : WANT_DROP_TARGET);
}

void th_proxy_restore(th_proxy_t *p)
{
    command(p, WANT_FORWARD);
}

uint32_t th_proxy_forwarded(th_proxy_t *p)
{
    return atomic_load(&p->forwarded);
}

void th_proxy_stop(th_proxy_t *p)
{
    atomic_store(&p->wanted, WANT_STOP);
    pthread_join(p->thread, NULL);
    close(p->listen_fd);
    free(p);
}
