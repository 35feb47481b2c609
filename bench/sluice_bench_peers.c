/* sluice-bench's peers: NATS JetStream (file storage) and Redis Streams
 * run the same plan as sluiced, spoken to over raw sockets. A batch of N
 * messages is N publishes pipelined in one write and their N
 * acknowledgements (NATS: JetStream PUB with a reply subject, one ack
 * each; Redis: N XADD, N ids), a poll is one pull of up to N (NATS: a pull
 * consumer's MSG.NEXT with no_wait; Redis: XRANGE from the last id read).
 * Pinned kinds only (pp, pc, ppc): the group kinds would need each peer's
 * own group machinery. Message sizes of a -m range are taken as each
 * batch's average size. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/clock.h"
#include "sluice_bench_peers.h"

enum {
    START_POLLS = 500, /* x 20 ms */
    RX_CAP = 1 << 20,
};

/* --- a buffered connection ----------------------------------------------------------------- */

typedef struct pconn {
    int fd;
    char *rx;
    size_t have, at;
    const char *name;
} pconn_t;

static void pfill(pconn_t *c)
{
    if (c->at > 0) {
        memmove(c->rx, c->rx + c->at, c->have - c->at);
        c->have -= c->at;
        c->at = 0;
    }
    if (c->have == RX_CAP)
        sb_die("%s: a reply line longer than %d bytes", c->name, RX_CAP);
    ssize_t k;
    do {
        k = recv(c->fd, c->rx + c->have, RX_CAP - c->have, 0);
    } while (k < 0 && errno == EINTR);
    if (k <= 0)
        sb_die("%s: %s", c->name, k == 0 ? "closed the connection" : strerror(errno));
    c->have += (size_t)k;
}

/* The next line without its CRLF (valid until the next read). */
static char *pline(pconn_t *c)
{
    for (int i = 0; i < 1000000; i++) { /* bounded: each turn reads more or fails */
        char *end = memmem(c->rx + c->at, c->have - c->at, "\r\n", 2);
        if (end) {
            *end = '\0';
            char *line = c->rx + c->at;
            c->at = (size_t)(end + 2 - c->rx);
            return line;
        }
        pfill(c);
    }
    sb_die("%s: no line", c->name);
}

/* Skips n bytes and the CRLF after them. */
static void pskip(pconn_t *c, size_t n)
{
    n += 2;
    while (n > 0) {
        if (c->at == c->have)
            pfill(c);
        size_t k = c->have - c->at < n ? c->have - c->at : n;
        c->at += k;
        n -= k;
    }
}

static void psend(pconn_t *c, const char *p, size_t n)
{
    sb_send_all(c->fd, p, n);
}

static void pconnect(pconn_t *c, uint16_t port, const char *name)
{
    c->fd = sb_connect("127.0.0.1", port);
    c->rx = malloc(RX_CAP);
    c->have = c->at = 0;
    c->name = name;
    if (!c->rx)
        sb_die("out of memory");
}

static void pclose_(pconn_t *c)
{
    close(c->fd);
    free(c->rx);
}

/* --- NATS ---------------------------------------------------------------------------------- */

static void nats_handshake(pconn_t *c)
{
    if (strncmp(pline(c), "INFO ", 5) != 0)
        sb_die("nats: no INFO");
    static const char hello[] = "CONNECT {\"verbose\":false,\"pedantic\":false,\"headers\":true,"
                                "\"no_responders\":true}\r\nSUB _INBOX.r 1\r\nPING\r\n";
    psend(c, hello, sizeof(hello) - 1);
    for (int i = 0; i < 100; i++) {
        char *l = pline(c);
        if (strcmp(l, "PONG") == 0)
            return;
        if (strncmp(l, "-ERR", 4) == 0)
            sb_die("nats: %s", l);
    }
    sb_die("nats: no PONG");
}

/* Reads one message delivered to us: its payload length (the body is
 * skipped) and whether it was a status (headers only, e.g. 404 No
 * Messages). Answers the server's PINGs on the way. */
static size_t nats_msg(pconn_t *c, bool *status)
{
    for (int i = 0; i < 1000; i++) {
        char *l = pline(c);
        if (strcmp(l, "PING") == 0) {
            psend(c, "PONG\r\n", 6);
            continue;
        }
        if (strncmp(l, "-ERR", 4) == 0)
            sb_die("nats: %s", l);
        bool hmsg = strncmp(l, "HMSG ", 5) == 0;
        if (!hmsg && strncmp(l, "MSG ", 4) != 0)
            continue; /* +OK, INFO updates */
        char *last = strrchr(l, ' '), *before = NULL;
        size_t total = strtoull(last + 1, NULL, 10), head = 0;
        if (hmsg) {
            *last = '\0';
            before = strrchr(l, ' ');
            head = strtoull(before + 1, NULL, 10);
        }
        pskip(c, total);
        *status = hmsg && head == total;
        return total - head;
    }
    sb_die("nats: no message");
}

/* A JetStream API request on _INBOX.r; the reply must not be an error. */
static void nats_api(pconn_t *c, const char *subject, const char *json)
{
    char head[300];
    int n = snprintf(head, sizeof(head), "PUB %s _INBOX.r %zu\r\n", subject, strlen(json));
    psend(c, head, (size_t)n);
    psend(c, json, strlen(json));
    psend(c, "\r\n", 2);
    bool status;
    nats_msg(c, &status);
    if (status)
        sb_die("nats: no answer to %s", subject);
}

enum { PEER_VARIANTS_MAX = 8 };

typedef struct peer_actor {
    pconn_t c;
    /* per variant of the plan: a whole pipelined batch of publishes */
    char *batch[PEER_VARIANTS_MAX];
    size_t batch_len[PEER_VARIANTS_MAX];
    uint32_t messages[PEER_VARIANTS_MAX], size[PEER_VARIANTS_MAX];
    uint32_t variants;
    char consumer[64];
    char last_id[64]; /* redis: the last entry read */
} peer_actor_t;

static void nats_prepare_stream(pconn_t *c, uint32_t s)
{
    char subject[96], json[300];
    snprintf(subject, sizeof(subject), "$JS.API.STREAM.CREATE.bench-stream-%u", s);
    snprintf(json, sizeof(json),
             "{\"name\":\"bench-stream-%u\",\"subjects\":[\"bench.%u\"],\"storage\":\"file\","
             "\"retention\":\"limits\",\"discard\":\"old\",\"num_replicas\":1}",
             s, s);
    nats_api(c, subject, json);
}

/* --- Redis --------------------------------------------------------------------------------- */

/* One RESP reply: sums the bulk strings' lengths of an XRANGE's entries
 * (field values) and counts the entries; the last entry id goes to last. */
static uint32_t resp_entries(pconn_t *c, uint64_t *bytes, char *last, size_t last_len)
{
    char *l = pline(c);
    if (l[0] == '-')
        sb_die("redis: %s", l);
    if (l[0] != '*')
        sb_die("redis: unexpected reply %s", l);
    long n = strtol(l + 1, NULL, 10);
    for (long e = 0; e < n; e++) {
        if (pline(c)[0] != '*') /* [id, [field, value]] */
            sb_die("redis: malformed entry");
        char *id = pline(c);
        size_t len = strtoull(id + 1, NULL, 10);
        while (c->have - c->at < len + 2)
            pfill(c);
        snprintf(last, last_len, "%.*s", (int)len, c->rx + c->at);
        pskip(c, len);
        long fields = strtol(pline(c) + 1, NULL, 10);
        for (long f = 0; f < fields; f++) {
            size_t flen = strtoull(pline(c) + 1, NULL, 10);
            pskip(c, flen);
            if (f % 2 == 1)
                *bytes += flen;
        }
    }
    return (uint32_t)n;
}

static char role_letter(const sb_actor_t *a)
{
    return a->role == SB_ROLE_PRODUCER ? 'p' : a->role == SB_ROLE_CONSUMER ? 'c' : 'x';
}

/* --- batches ---------------------------------------------------------------------------------- */

static void batch_build_one(sb_actor_t *a, peer_actor_t *p, uint32_t v, const sb_frame_t *f)
{
    sb_target_t t = a->run->target;
    uint32_t messages = f->messages, size = (uint32_t)(f->payload / f->messages);
    size_t per = size + 160;
    char *batch = malloc(per * messages + 1), *payload = malloc(size + 1);
    if (!batch || !payload)
        sb_die("out of memory");
    memset(payload, 'x', size);
    payload[size] = '\0';
    size_t n = 0;
    char key[48];
    snprintf(key, sizeof(key), "bench-stream-%u", a->stream);
    for (uint32_t i = 0; i < messages; i++) {
        if (t == SB_TARGET_NATS)
            n += (size_t)sprintf(batch + n, "PUB bench.%u _INBOX.a.%c%u %u\r\n%s\r\n", a->stream,
                                 role_letter(a), a->id, size, payload);
        else
            n += (size_t)sprintf(batch + n,
                                 "*5\r\n$4\r\nXADD\r\n$%zu\r\n%s\r\n$1\r\n*\r\n$1\r\nd\r\n$%u\r\n%s\r\n",
                                 strlen(key), key, size, payload);
    }
    free(payload);
    p->batch[v] = batch;
    p->batch_len[v] = n;
    p->messages[v] = messages;
    p->size[v] = size;
}

/* The plan's variants, cycled in the same order as sluiced gets them. */
static void batch_build(sb_actor_t *a, peer_actor_t *p, const sb_frame_t *frames, uint32_t variants)
{
    p->variants = variants < PEER_VARIANTS_MAX ? variants : PEER_VARIANTS_MAX;
    for (uint32_t v = 0; v < p->variants; v++)
        batch_build_one(a, p, v, &frames[v]);
}

static void batch_free(peer_actor_t *p)
{
    for (uint32_t v = 0; v < p->variants; v++)
        free(p->batch[v]);
}

/* Sends the next variant; returns it. */
static uint32_t send_batch(sb_actor_t *a, peer_actor_t *p)
{
    uint32_t v = (uint32_t)(a->sent_batches % p->variants);
    psend(&p->c, p->batch[v], p->batch_len[v]);
    for (uint32_t i = 0; i < p->messages[v]; i++) {
        if (a->run->target == SB_TARGET_NATS) {
            bool status;
            nats_msg(&p->c, &status);
            if (status)
                sb_die("nats: a publish was not acknowledged (no stream?)");
        } else {
            char *l = pline(&p->c);
            if (l[0] == '-')
                sb_die("redis: %s", l);
            if (l[0] == '$')
                pskip(&p->c, strtoull(l + 1, NULL, 10));
        }
    }
    a->sent_batches++;
    a->sent_messages += p->messages[v];
    a->sent_bytes += (uint64_t)p->messages[v] * p->size[v];
    return v;
}

static uint32_t poll_batch(sb_actor_t *a, peer_actor_t *p, uint32_t count, uint64_t *bytes)
{
    char req[300];
    uint32_t got = 0;
    if (a->run->target == SB_TARGET_NATS) {
        char json[64];
        int jl = snprintf(json, sizeof(json), "{\"batch\":%u,\"no_wait\":true}", count);
        int n = snprintf(req, sizeof(req),
                         "PUB $JS.API.CONSUMER.MSG.NEXT.bench-stream-%u.%s _INBOX.p.%c%u %d\r\n%s\r\n",
                         a->stream, p->consumer, role_letter(a), a->id, jl, json);
        psend(&p->c, req, (size_t)n);
        for (uint32_t i = 0; i < count; i++) {
            bool status;
            size_t len = nats_msg(&p->c, &status);
            if (status)
                break;
            *bytes += len;
            got++;
        }
    } else {
        char key[48];
        snprintf(key, sizeof(key), "bench-stream-%u", a->stream);
        char start[80];
        snprintf(start, sizeof(start), p->last_id[0] ? "(%s" : "-", p->last_id);
        char cnt[16];
        snprintf(cnt, sizeof(cnt), "%u", count);
        int n = snprintf(req, sizeof(req),
                         "*6\r\n$6\r\nXRANGE\r\n$%zu\r\n%s\r\n$%zu\r\n%s\r\n$1\r\n+\r\n$5\r\nCOUNT\r\n"
                         "$%zu\r\n%s\r\n",
                         strlen(key), key, strlen(start), start, strlen(cnt), cnt);
        psend(&p->c, req, (size_t)n);
        got = resp_entries(&p->c, bytes, p->last_id, sizeof(p->last_id));
    }
    a->polls++;
    a->received_messages += got;
    a->received_bytes += *bytes;
    return got;
}

/* --- the actors -------------------------------------------------------------------------------- */

static void peer_connect(sb_actor_t *a, peer_actor_t *p)
{
    sb_target_t t = a->run->target;
    pconnect(&p->c, a->run->port, sb_target_name(t));
    if (t == SB_TARGET_NATS) {
        nats_handshake(&p->c);
        char sub[64];
        /* inboxes of this connection alone: a producer and a consumer of
         * the same number must not hear each other's replies */
        int n = snprintf(sub, sizeof(sub), "SUB _INBOX.a.%c%u 2\r\nSUB _INBOX.p.%c%u 3\r\n",
                         role_letter(a), a->id, role_letter(a), a->id);
        psend(&p->c, sub, (size_t)n);
    }
    if (a->produces)
        batch_build(a, p, a->frames, a->variants);
    if (a->consumes && t == SB_TARGET_NATS) {
        char subject[128], json[300];
        snprintf(p->consumer, sizeof(p->consumer), "bench-consumer-%u", a->id);
        snprintf(subject, sizeof(subject), "$JS.API.CONSUMER.DURABLE.CREATE.bench-stream-%u.%s",
                 a->stream, p->consumer);
        snprintf(json, sizeof(json),
                 "{\"stream_name\":\"bench-stream-%u\",\"config\":{\"durable_name\":\"%s\","
                 "\"ack_policy\":\"none\",\"deliver_policy\":\"all\"}}",
                 a->stream, p->consumer);
        nats_api(&p->c, subject, json);
    }
}

static void *peer_actor_main(void *arg)
{
    sb_actor_t *a = arg;
    peer_actor_t p = {0};
    peer_connect(a, &p);
    pthread_barrier_wait(&a->run->ready);
    pthread_barrier_wait(&a->run->go);
    while (a->produces && a->sent_batches < a->batches) {
        uint64_t t0 = sl_clock_monotonic_ns();
        uint32_t v = send_batch(a, &p);
        sb_actor_sample(a, t0, sl_clock_monotonic_ns(), p.messages[v],
                        (uint64_t)p.messages[v] * p.size[v]);
    }
    for (int idle = 0; a->consumes && atomic_load(&a->set->consumed) < a->set->expected;) {
        uint32_t k = sb_set_claim(a->set, a->poll_max);
        uint64_t bytes = 0, t0 = sl_clock_monotonic_ns();
        uint32_t got = k ? poll_batch(a, &p, k, &bytes) : 0;
        sb_set_settle(a->set, k, got);
        if (got)
            sb_actor_sample(a, t0, sl_clock_monotonic_ns(), got, bytes);
        else if (++idle % 1000 == 0)
            usleep(100); /* the producer is behind */
    }
    pclose_(&p.c);
    batch_free(&p);
    atomic_fetch_add(&a->run->done, 1);
    return NULL;
}

/* The streams, and what consumer-only kinds read (written untimed). */
static void peer_prepare(sb_run_t *run)
{
    const sb_iggy_args_t *args = run->args;
    pconn_t c;
    pconnect(&c, run->port, sb_target_name(run->target));
    if (run->target == SB_TARGET_NATS) {
        nats_handshake(&c);
        for (uint32_t s = 1; s <= args->streams; s++)
            nats_prepare_stream(&c, s);
    }
    pclose_(&c);
    bool producers = false;
    for (uint32_t i = 0; i < run->actors_count; i++)
        producers |= run->actors[i].produces;
    if (producers)
        return;
    /* pc: each stream gets what its consumers expect, as sluiced's does */
    static bool loaded[SB_STREAMS_MAX + 1];
    memset(loaded, 0, sizeof(loaded));
    for (uint32_t i = 0; i < run->actors_count; i++) {
        sb_actor_t *x = &run->actors[i];
        if (loaded[x->stream])
            continue;
        loaded[x->stream] = true;
        sb_actor_t loader = {.run = run, .id = 1000 + x->stream, .stream = x->stream,
                             .produces = true};
        peer_actor_t p = {0};
        peer_connect(&loader, &p);
        batch_build(&loader, &p, x->load, sb_variants(args));
        while (loader.sent_messages < x->set->expected)
            send_batch(&loader, &p);
        pclose_(&p.c);
        batch_free(&p);
    }
}

void sb_peer_run(sb_run_t *run, const sb_peer_t *peer)
{
    (void)peer;
    peer_prepare(run);
    run->actor_main = peer_actor_main;
    sb_run_actors(run);
}

/* --- the servers --------------------------------------------------------------------------------- */

static bool find_binary(const char *name, char *out, size_t len)
{
    const char *path = getenv("PATH");
    char dirs[4096];
    snprintf(dirs, sizeof(dirs), "%s:/usr/bin:/usr/sbin:/usr/local/bin", path ? path : "");
    for (char *save = NULL, *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        snprintf(out, len, "%s/%s", d, name);
        if (access(out, X_OK) == 0)
            return true;
    }
    return false;
}

static bool listening(uint16_t port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bool ok = fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
    if (fd >= 0)
        close(fd);
    return ok;
}

bool sb_peer_start(sb_target_t target, const char *parent, bool fsync, sb_peer_t *out,
                   char *why, size_t why_len)
{
    const char *name = target == SB_TARGET_NATS ? "nats-server" : "redis-server";
    char binary[4200], port[16];
    if (!find_binary(name, binary, sizeof(binary))) {
        snprintf(why, why_len, "%s is not installed (Debian: apt-get install %s)", name, name);
        return false;
    }
    *out = (sb_peer_t){.target = target, .port = sb_free_port()};
    snprintf(out->dir, sizeof(out->dir), "%s/%s", parent, sb_target_name(target));
    if (mkdir(out->dir, 0700) != 0 && errno != EEXIST) {
        snprintf(why, why_len, "mkdir %s: %s", out->dir, strerror(errno));
        return false;
    }
    snprintf(port, sizeof(port), "%u", out->port);
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int fd = open("/dev/null", O_WRONLY);
        dup2(fd, 1);
        dup2(fd, 2);
        if (target == SB_TARGET_NATS)
            execl(binary, name, "-a", "127.0.0.1", "-p", port, "-js", "-sd", out->dir,
                  (char *)NULL);
        else /* an append-only file written at every command (fsynced: --enforce-fsync) */
            execl(binary, name, "--port", port, "--bind", "127.0.0.1", "--dir", out->dir,
                  "--save", "", "--appendonly", "yes", "--appendfsync",
                  fsync ? "always" : "no", (char *)NULL);
        _exit(127);
    }
    if (pid < 0) {
        snprintf(why, why_len, "fork: %s", strerror(errno));
        return false;
    }
    out->pid = pid;
    sb_child_track(pid);
    for (int i = 0; i < START_POLLS; i++) {
        if (listening(out->port))
            return true;
        if (waitpid(pid, NULL, WNOHANG) == pid) {
            sb_child_untrack(pid);
            out->pid = 0;
            snprintf(why, why_len, "%s exited at start", name);
            return false;
        }
        sb_sleep_ms(20);
    }
    sb_peer_stop(out);
    snprintf(why, why_len, "%s did not listen within 10 s", name);
    return false;
}

void sb_peer_stop(sb_peer_t *p)
{
    if (p->pid <= 0)
        return;
    kill(p->pid, SIGTERM);
    waitpid(p->pid, NULL, 0);
    sb_child_untrack(p->pid);
    p->pid = 0;
}
