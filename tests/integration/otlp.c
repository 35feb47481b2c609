#define _GNU_SOURCE /* memmem */
/* The telemetry tests' OTLP/HTTP receiver and protobuf decoder (otlp.h).
 * Written from the opentelemetry-proto field numbers, apart from the
 * server's encoder, so the two check each other. */
#include "otlp.h"

#include <arpa/inet.h>
#include <errno.h>
#include <nghttp2/nghttp2.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

enum { CONNS_MAX = 16, BODY_MAX = 16 << 20 };

/* --- the HTTP/1.1 server ------------------------------------------------------------------ */

typedef struct conn {
    int fd;
    uint8_t *buf;
    size_t len, cap;
    nghttp2_session *h2; /* gRPC mode */
    th_otlp_t *h2_owner;
} conn_t;

static void keep_post(th_otlp_t *r, const char *path, const char *type, const char *te,
                      const uint8_t *body, size_t len)
{
    pthread_mutex_lock(&r->lock);
    if (r->posts_count == r->posts_cap) {
        size_t cap = r->posts_cap ? 2 * r->posts_cap : 64;
        th_otlp_post_t *grown = realloc(r->posts, cap * sizeof(*grown));
        if (!grown)
            abort();
        r->posts = grown;
        r->posts_cap = cap;
    }
    th_otlp_post_t *p = &r->posts[r->posts_count++];
    snprintf(p->path, sizeof(p->path), "%s", path);
    snprintf(p->content_type, sizeof(p->content_type), "%s", type);
    snprintf(p->te, sizeof(p->te), "%s", te);
    p->body = malloc(len ? len : 1);
    if (!p->body)
        abort();
    memcpy(p->body, body, len);
    p->len = len;
    pthread_mutex_unlock(&r->lock);
}

/* The value of header name in the header block head (NUL-terminated), into out. */
static void header_value(const char *head, const char *name, char *out, size_t cap)
{
    out[0] = '\0';
    size_t n = strlen(name);
    for (const char *line = strstr(head, "\r\n"); line; line = strstr(line + 2, "\r\n")) {
        const char *h = line + 2;
        if (strncasecmp(h, name, n) == 0 && h[n] == ':') {
            h += n + 1;
            while (*h == ' ')
                h++;
            size_t v = strcspn(h, "\r\n");
            snprintf(out, cap, "%.*s", (int)(v < cap ? v : cap - 1), h);
            return;
        }
    }
}

/* Serves every whole request in c's buffer; false when the connection must go. */
static bool serve_requests(th_otlp_t *r, conn_t *c)
{
    for (int guard = 0; guard < 64; guard++) {
        uint8_t *end = memmem(c->buf, c->len, "\r\n\r\n", 4);
        if (!end)
            return c->len < 65536;
        size_t head_len = (size_t)(end - c->buf) + 4;
        char head[8192];
        if (head_len >= sizeof(head))
            return false;
        memcpy(head, c->buf, head_len);
        head[head_len] = '\0';
        char length[32], type[64], path[128] = "";
        header_value(head, "Content-Length", length, sizeof(length));
        header_value(head, "Content-Type", type, sizeof(type));
        size_t body_len = strtoul(length, NULL, 10);
        if (body_len > BODY_MAX || sscanf(head, "POST %127s HTTP/1.1", path) != 1)
            return false;
        if (c->len < head_len + body_len)
            return true;
        keep_post(r, path, type, "", c->buf + head_len, body_len);
        char answer[128];
        int n = snprintf(answer, sizeof(answer), "HTTP/1.1 %d X\r\nContent-Length: 0\r\n\r\n",
                         atomic_load(&r->status));
        if (send(c->fd, answer, (size_t)n, MSG_NOSIGNAL) != n)
            return false;
        memmove(c->buf, c->buf + head_len + body_len, c->len - head_len - body_len);
        c->len -= head_len + body_len;
    }
    return false;
}

/* --- gRPC over cleartext HTTP/2 (libnghttp2's server side) ------------------------------ */

typedef struct h2_stream {
    char path[128];
    char type[64];
    char te[16];
    uint8_t *body;
    size_t len, cap;
    bool message_sent;
    char grpc_status[8];
} h2_stream_t;

static ssize_t h2_send(nghttp2_session *session, const uint8_t *data, size_t len, int flags,
                       void *user)
{
    (void)session, (void)flags;
    conn_t *c = user;
    ssize_t n = send(c->fd, data, len, MSG_NOSIGNAL);
    return n < 0 ? NGHTTP2_ERR_CALLBACK_FAILURE : n;
}

static int h2_begin_headers(nghttp2_session *session, const nghttp2_frame *frame, void *user)
{
    (void)user;
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST)
        return 0;
    h2_stream_t *st = calloc(1, sizeof(*st));
    if (!st)
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    nghttp2_session_set_stream_user_data(session, frame->hd.stream_id, st);
    return 0;
}

static int h2_header(nghttp2_session *session, const nghttp2_frame *frame, const uint8_t *name,
                     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                     void *user)
{
    (void)flags, (void)user;
    h2_stream_t *st = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
    if (!st)
        return 0;
    char *out = NULL;
    size_t cap = 0;
    if (namelen == 5 && memcmp(name, ":path", 5) == 0)
        out = st->path, cap = sizeof(st->path);
    else if (namelen == 12 && memcmp(name, "content-type", 12) == 0)
        out = st->type, cap = sizeof(st->type);
    else if (namelen == 2 && memcmp(name, "te", 2) == 0)
        out = st->te, cap = sizeof(st->te);
    if (out)
        snprintf(out, cap, "%.*s", (int)(valuelen < cap ? valuelen : cap - 1), (const char *)value);
    return 0;
}

static int h2_data(nghttp2_session *session, uint8_t flags, int32_t id, const uint8_t *data,
                   size_t len, void *user)
{
    (void)flags, (void)user;
    h2_stream_t *st = nghttp2_session_get_stream_user_data(session, id);
    if (!st)
        return 0;
    if (st->len + len > st->cap) {
        size_t cap = st->cap ? st->cap : 65536;
        while (cap < st->len + len)
            cap *= 2;
        if (cap > BODY_MAX)
            return NGHTTP2_ERR_CALLBACK_FAILURE;
        uint8_t *grown = realloc(st->body, cap);
        if (!grown)
            return NGHTTP2_ERR_CALLBACK_FAILURE;
        st->body = grown;
        st->cap = cap;
    }
    memcpy(st->body + st->len, data, len);
    st->len += len;
    return 0;
}

/* The answer's DATA: one empty Export*ServiceResponse message, then the
 * trailers with the call's status. */
static ssize_t h2_read(nghttp2_session *session, int32_t id, uint8_t *buf, size_t length,
                       uint32_t *data_flags, nghttp2_data_source *source, void *user)
{
    (void)user;
    h2_stream_t *st = source->ptr;
    size_t n = 0;
    if (!st->message_sent && length >= 5) {
        memset(buf, 0, 5);
        n = 5;
        st->message_sent = true;
    }
    *data_flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
    nghttp2_nv trailer[] = {
        {(uint8_t *)"grpc-status", (uint8_t *)st->grpc_status, 11, strlen(st->grpc_status),
         NGHTTP2_NV_FLAG_NONE},
        {(uint8_t *)"grpc-message", (uint8_t *)"unavailable", 12, 11, NGHTTP2_NV_FLAG_NONE}};
    bool ok = strcmp(st->grpc_status, "0") == 0;
    if (nghttp2_submit_trailer(session, id, trailer, ok ? 1 : 2) != 0)
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    return (ssize_t)n;
}

/* A whole request: kept when its gRPC frame is whole (else kept with a type
 * the decoder refuses), and answered. */
static int h2_answer(nghttp2_session *session, int32_t id, th_otlp_t *r)
{
    h2_stream_t *st = nghttp2_session_get_stream_user_data(session, id);
    if (!st)
        return 0;
    bool framed = st->len >= 5 && st->body[0] == 0 &&
                  ((size_t)st->body[1] << 24 | (size_t)st->body[2] << 16 |
                   (size_t)st->body[3] << 8 | st->body[4]) == st->len - 5;
    keep_post(r, st->path, framed ? st->type : "bad-grpc-frame", st->te,
              framed ? st->body + 5 : st->body, framed ? st->len - 5 : st->len);
    snprintf(st->grpc_status, sizeof(st->grpc_status), "%s",
             atomic_load(&r->status) == 200 ? "0" : "14");
    nghttp2_nv head[] = {
        {(uint8_t *)":status", (uint8_t *)"200", 7, 3, NGHTTP2_NV_FLAG_NONE},
        {(uint8_t *)"content-type", (uint8_t *)"application/grpc", 12, 16, NGHTTP2_NV_FLAG_NONE}};
    nghttp2_data_provider data = {.source.ptr = st, .read_callback = h2_read};
    return nghttp2_submit_response(session, id, head, 2, &data) == 0 ? 0
                                                                     : NGHTTP2_ERR_CALLBACK_FAILURE;
}

static int h2_frame(nghttp2_session *session, const nghttp2_frame *frame, void *user)
{
    conn_t *c = user;
    bool request_end = (frame->hd.type == NGHTTP2_DATA || frame->hd.type == NGHTTP2_HEADERS) &&
                       (frame->hd.flags & NGHTTP2_FLAG_END_STREAM);
    return request_end ? h2_answer(session, frame->hd.stream_id, c->h2_owner) : 0;
}

static int h2_close(nghttp2_session *session, int32_t id, uint32_t error, void *user)
{
    (void)error, (void)user;
    h2_stream_t *st = nghttp2_session_get_stream_user_data(session, id);
    if (st) {
        nghttp2_session_set_stream_user_data(session, id, NULL);
        free(st->body);
        free(st);
    }
    return 0;
}

static bool h2_open(th_otlp_t *r, conn_t *c)
{
    nghttp2_session_callbacks *cb;
    if (nghttp2_session_callbacks_new(&cb) != 0)
        return false;
    nghttp2_session_callbacks_set_send_callback(cb, h2_send);
    nghttp2_session_callbacks_set_on_begin_headers_callback(cb, h2_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(cb, h2_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, h2_data);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, h2_frame);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, h2_close);
    c->h2_owner = r;
    int rc = nghttp2_session_server_new(&c->h2, cb, c);
    nghttp2_session_callbacks_del(cb);
    nghttp2_settings_entry streams = {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 16};
    return rc == 0 && nghttp2_submit_settings(c->h2, NGHTTP2_FLAG_NONE, &streams, 1) == 0 &&
           nghttp2_session_send(c->h2) == 0;
}

static bool h2_read_conn(conn_t *c)
{
    uint8_t buf[65536];
    ssize_t n = recv(c->fd, buf, sizeof(buf), 0);
    if (n <= 0 || nghttp2_session_mem_recv(c->h2, buf, (size_t)n) != n)
        return false;
    return nghttp2_session_send(c->h2) == 0 &&
           (nghttp2_session_want_read(c->h2) || nghttp2_session_want_write(c->h2));
}

static void conn_close(conn_t *c)
{
    if (c->h2)
        nghttp2_session_del(c->h2);
    c->h2 = NULL;
    close(c->fd);
    c->fd = -1;
    c->len = 0;
}

static bool conn_read(th_otlp_t *r, conn_t *c)
{
    if (c->h2)
        return h2_read_conn(c);
    if (c->cap - c->len < 65536) {
        size_t cap = c->cap ? 2 * c->cap : 131072;
        if (cap > BODY_MAX + 65536)
            return false;
        uint8_t *grown = realloc(c->buf, cap);
        if (!grown)
            return false;
        c->buf = grown;
        c->cap = cap;
    }
    ssize_t n = recv(c->fd, c->buf + c->len, c->cap - c->len, 0);
    if (n <= 0)
        return false;
    c->len += (size_t)n;
    return serve_requests(r, c);
}

static void *serve(void *arg)
{
    th_otlp_t *r = arg;
    conn_t conns[CONNS_MAX];
    memset(conns, 0, sizeof(conns));
    for (int i = 0; i < CONNS_MAX; i++)
        conns[i].fd = -1;
    while (!atomic_load(&r->stop)) {
        struct pollfd p[CONNS_MAX + 1];
        p[0] = (struct pollfd){.fd = r->listen_fd, .events = POLLIN};
        for (int i = 0; i < CONNS_MAX; i++)
            p[i + 1] = (struct pollfd){.fd = conns[i].fd, .events = POLLIN};
        if (poll(p, CONNS_MAX + 1, 50) <= 0)
            continue;
        if (p[0].revents & POLLIN) {
            int fd = accept(r->listen_fd, NULL, NULL);
            for (int i = 0; fd >= 0 && i < CONNS_MAX; i++)
                if (conns[i].fd < 0) {
                    conns[i].fd = fd;
                    fd = -1;
                    if (r->grpc && !h2_open(r, &conns[i]))
                        conn_close(&conns[i]);
                }
            if (fd >= 0)
                close(fd);
        }
        for (int i = 0; i < CONNS_MAX; i++) {
            if (conns[i].fd < 0 || !(p[i + 1].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            if (!conn_read(r, &conns[i]))
                conn_close(&conns[i]);
        }
    }
    for (int i = 0; i < CONNS_MAX; i++) {
        if (conns[i].fd >= 0)
            conn_close(&conns[i]);
        free(conns[i].buf);
    }
    return NULL;
}

static bool start(th_otlp_t *r, bool grpc)
{
    memset(r, 0, sizeof(*r));
    r->grpc = grpc;
    atomic_init(&r->status, 200);
    pthread_mutex_init(&r->lock, NULL);
    r->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof(a);
    if (r->listen_fd < 0 || bind(r->listen_fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
        listen(r->listen_fd, 16) != 0 || getsockname(r->listen_fd, (struct sockaddr *)&a, &alen))
        return false;
    r->port = ntohs(a.sin_port);
    return pthread_create(&r->thread, NULL, serve, r) == 0;
}

bool th_otlp_start(th_otlp_t *r)
{
    return start(r, false);
}

bool th_otlp_start_grpc(th_otlp_t *r)
{
    return start(r, true);
}

void th_otlp_stop(th_otlp_t *r)
{
    atomic_store(&r->stop, true);
    pthread_join(r->thread, NULL);
    close(r->listen_fd);
    for (size_t i = 0; i < r->posts_count; i++)
        free(r->posts[i].body);
    free(r->posts);
    pthread_mutex_destroy(&r->lock);
}

size_t th_otlp_posts(th_otlp_t *r, const char *path)
{
    size_t n = 0;
    pthread_mutex_lock(&r->lock);
    for (size_t i = 0; i < r->posts_count; i++)
        n += strcmp(r->posts[i].path, path) == 0;
    pthread_mutex_unlock(&r->lock);
    return n;
}

/* --- the protobuf decoder ------------------------------------------------------------------- */

typedef struct pb {
    const uint8_t *p, *end;
} pb_t;

typedef struct pb_field {
    uint32_t number;
    uint32_t wire_type;
    uint64_t value; /* varint, fixed64, fixed32 */
    pb_t sub;       /* length-delimited */
} pb_field_t;

static bool pb_varint(pb_t *m, uint64_t *out)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (m->p >= m->end)
            return false;
        uint8_t b = *m->p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return true;
        }
    }
    return false;
}

/* The next field of m; *ok false (and false returned) on a malformed one,
 * *ok true and false returned at the end. */
static bool pb_next(pb_t *m, pb_field_t *f, bool *ok)
{
    *ok = true;
    if (m->p == m->end)
        return false;
    *ok = false;
    uint64_t tag;
    if (!pb_varint(m, &tag) || (tag >> 3) == 0 || (tag >> 3) > UINT32_MAX)
        return false;
    f->number = (uint32_t)(tag >> 3);
    f->wire_type = (uint32_t)(tag & 7);
    size_t left = (size_t)(m->end - m->p);
    switch (f->wire_type) {
    case 0:
        if (!pb_varint(m, &f->value))
            return false;
        break;
    case 1:
    case 5: {
        size_t n = f->wire_type == 1 ? 8 : 4;
        if (left < n)
            return false;
        f->value = 0;
        for (size_t i = 0; i < n; i++)
            f->value |= (uint64_t)m->p[i] << (8 * i);
        m->p += n;
        break;
    }
    case 2: {
        uint64_t len;
        if (!pb_varint(m, &len) || len > (uint64_t)(m->end - m->p))
            return false;
        f->sub = (pb_t){m->p, m->p + len};
        m->p += len;
        break;
    }
    default:
        return false;
    }
    *ok = true;
    return true;
}

static void copy_text(char *out, size_t cap, pb_t s)
{
    size_t n = (size_t)(s.end - s.p);
    snprintf(out, cap, "%.*s", (int)(n < cap ? n : cap - 1), (const char *)s.p);
}

/* AnyValue { string 1, bool 2, int 3, double 4, bytes 7 } into a. */
static bool decode_any(pb_t m, th_otlp_attr_t *a)
{
    pb_field_t f = {0};
    bool ok;
    while (pb_next(&m, &f, &ok)) {
        if (f.number == 1 && f.wire_type == 2)
            copy_text(a->s, sizeof(a->s), f.sub);
        else if (f.number == 3 && f.wire_type == 0) {
            a->is_int = true;
            a->i = (int64_t)f.value;
        } else if (f.number == 2 || f.number > 7)
            return false; /* sluiced sends no other kind */
    }
    return ok;
}

/* KeyValue { key 1, value 2 }. */
static bool decode_attr(pb_t m, th_otlp_attr_t *a)
{
    memset(a, 0, sizeof(*a));
    pb_field_t f = {0};
    bool ok;
    while (pb_next(&m, &f, &ok)) {
        if (f.number == 1 && f.wire_type == 2)
            copy_text(a->key, sizeof(a->key), f.sub);
        else if (f.number == 2 && f.wire_type == 2 && !decode_any(f.sub, a))
            return false;
    }
    return ok && a->key[0];
}

/* Resource { attributes 1 }: the value of service.name. */
static bool decode_resource(pb_t m, char *service, size_t cap)
{
    pb_field_t f = {0};
    bool ok;
    while (pb_next(&m, &f, &ok)) {
        th_otlp_attr_t a;
        if (f.number != 1 || f.wire_type != 2)
            continue;
        if (!decode_attr(f.sub, &a))
            return false;
        if (strcmp(a.key, "service.name") == 0)
            snprintf(service, cap, "%s", a.s);
    }
    return ok;
}

static bool copy_id(uint8_t *out, size_t n, pb_t s)
{
    if ((size_t)(s.end - s.p) != n)
        return false;
    memcpy(out, s.p, n);
    return true;
}

/* Status { message 2, code 3 }. */
static bool decode_status(pb_t m, th_otlp_span_t *s)
{
    pb_field_t f = {0};
    bool ok;
    while (pb_next(&m, &f, &ok)) {
        if (f.number == 2 && f.wire_type == 2)
            copy_text(s->status_message, sizeof(s->status_message), f.sub);
        else if (f.number == 3 && f.wire_type == 0)
            s->status_code = (int)f.value;
    }
    return ok;
}

/* Span { trace_id 1, span_id 2, parent 4, name 5, kind 6, start 7, end 8, attributes 9,
 * status 15 }. */
static bool decode_span(pb_t m, th_otlp_span_t *s)
{
    pb_field_t f = {0};
    bool ok = true;
    while (ok && pb_next(&m, &f, &ok)) {
        if (f.number == 1 && f.wire_type == 2)
            ok = copy_id(s->trace_id, 16, f.sub);
        else if (f.number == 2 && f.wire_type == 2)
            ok = copy_id(s->span_id, 8, f.sub);
        else if (f.number == 4 && f.wire_type == 2)
            ok = s->has_parent = copy_id(s->parent_id, 8, f.sub);
        else if (f.number == 5 && f.wire_type == 2)
            copy_text(s->name, sizeof(s->name), f.sub);
        else if (f.number == 6 && f.wire_type == 0)
            s->kind = (int)f.value;
        else if (f.number == 7 && f.wire_type == 1)
            s->start_ns = f.value;
        else if (f.number == 8 && f.wire_type == 1)
            s->end_ns = f.value;
        else if (f.number == 9 && f.wire_type == 2 && s->attrs_count < TH_OTLP_ATTRS_MAX)
            ok = decode_attr(f.sub, &s->attrs[s->attrs_count++]);
        else if (f.number == 15 && f.wire_type == 2)
            ok = decode_status(f.sub, s);
        else if (f.number < 16 && f.number != 3)
            ok = false; /* a known field with the wrong wire type, or one never sent */
    }
    return ok;
}

/* Calls record(sub, ctx) for each item (field items_field) of every scope (field 2 of each
 * resource entry, field 1 of the request), with the resource's service.name. */
typedef bool (*record_fn)(pb_t m, const char *service, void *ctx);

static bool walk(const uint8_t *p, size_t len, uint32_t items_field, record_fn record, void *ctx)
{
    pb_t req = {p, p + len};
    pb_field_t f = {0};
    bool ok;
    while (pb_next(&req, &f, &ok)) {
        if (f.number != 1 || f.wire_type != 2)
            return false;
        char service[256] = "";
        pb_t rs = f.sub;
        pb_field_t g;
        bool ok2;
        while (pb_next(&rs, &g, &ok2)) {
            if (g.number == 1 && g.wire_type == 2 &&
                !decode_resource(g.sub, service, sizeof(service)))
                return false;
            if (g.number != 2 || g.wire_type != 2)
                continue;
            pb_t scope = g.sub;
            pb_field_t h;
            bool ok3;
            while (pb_next(&scope, &h, &ok3))
                if (h.number == items_field && h.wire_type == 2 && !record(h.sub, service, ctx))
                    return false;
            if (!ok3)
                return false;
        }
        if (!ok2)
            return false;
    }
    return ok;
}

typedef struct span_out {
    th_otlp_span_t *out;
    int max, count;
} span_out_t;

static bool span_record(pb_t m, const char *service, void *ctx)
{
    span_out_t *o = ctx;
    if (o->count >= o->max)
        return true;
    th_otlp_span_t *s = &o->out[o->count];
    memset(s, 0, sizeof(*s));
    snprintf(s->service, sizeof(s->service), "%s", service);
    if (!decode_span(m, s))
        return false;
    o->count++;
    return true;
}

int th_otlp_decode_spans(const uint8_t *p, size_t len, th_otlp_span_t *out, int max)
{
    span_out_t o = {out, max, 0};
    return walk(p, len, 2, span_record, &o) ? o.count : -1;
}

/* LogRecord { time 1, severity_number 2, severity_text 3, body 5, attributes 6,
 * observed_time 11 }. */
static bool decode_log(pb_t m, th_otlp_log_t *l)
{
    pb_field_t f = {0};
    bool ok = true;
    while (ok && pb_next(&m, &f, &ok)) {
        if (f.number == 1 && f.wire_type == 1)
            l->time_ns = f.value;
        else if (f.number == 2 && f.wire_type == 0)
            l->severity = (int)f.value;
        else if (f.number == 3 && f.wire_type == 2)
            copy_text(l->severity_text, sizeof(l->severity_text), f.sub);
        else if (f.number == 5 && f.wire_type == 2) {
            pb_t any = f.sub;
            pb_field_t g;
            while (ok && pb_next(&any, &g, &ok))
                if (g.number == 1 && g.wire_type == 2)
                    copy_text(l->body, sizeof(l->body), g.sub);
        } else if (f.number == 6 && f.wire_type == 2 && l->attrs_count < 4)
            ok = decode_attr(f.sub, &l->attrs[l->attrs_count++]);
        else if (f.number == 11 && f.wire_type == 1)
            continue;
        else
            ok = false;
    }
    return ok;
}

typedef struct log_out {
    th_otlp_log_t *out;
    int max, count;
} log_out_t;

static bool log_record(pb_t m, const char *service, void *ctx)
{
    log_out_t *o = ctx;
    if (o->count >= o->max)
        return true;
    th_otlp_log_t *l = &o->out[o->count];
    memset(l, 0, sizeof(*l));
    snprintf(l->service, sizeof(l->service), "%s", service);
    if (!decode_log(m, l))
        return false;
    o->count++;
    return true;
}

int th_otlp_decode_logs(const uint8_t *p, size_t len, th_otlp_log_t *out, int max)
{
    log_out_t o = {out, max, 0};
    return walk(p, len, 2, log_record, &o) ? o.count : -1;
}

typedef int (*decode_fn)(const uint8_t *p, size_t len, void *out, int max);

static int decode_posts(th_otlp_t *r, const char *path, void *out, size_t item, int max,
                        decode_fn decode)
{
    int total = 0;
    pthread_mutex_lock(&r->lock);
    for (size_t i = 0; i < r->posts_count && total < max; i++) {
        if (strcmp(r->posts[i].path, path) != 0)
            continue;
        int n = decode(r->posts[i].body, r->posts[i].len, (uint8_t *)out + (size_t)total * item,
                       max - total);
        const char *type = r->grpc ? "application/grpc" : "application/x-protobuf";
        if (n < 0 || strcmp(r->posts[i].content_type, type) != 0 ||
            (r->grpc && strcmp(r->posts[i].te, "trailers") != 0)) {
            total = -1;
            break;
        }
        total += n;
    }
    pthread_mutex_unlock(&r->lock);
    return total;
}

static int decode_spans_any(const uint8_t *p, size_t len, void *out, int max)
{
    return th_otlp_decode_spans(p, len, out, max);
}

static int decode_logs_any(const uint8_t *p, size_t len, void *out, int max)
{
    return th_otlp_decode_logs(p, len, out, max);
}

int th_otlp_spans(th_otlp_t *r, const char *path, th_otlp_span_t *out, int max)
{
    return decode_posts(r, path, out, sizeof(*out), max, decode_spans_any);
}

int th_otlp_logs(th_otlp_t *r, const char *path, th_otlp_log_t *out, int max)
{
    return decode_posts(r, path, out, sizeof(*out), max, decode_logs_any);
}

const th_otlp_attr_t *th_otlp_attr(const th_otlp_attr_t *attrs, int count, const char *key)
{
    for (int i = 0; i < count; i++)
        if (strcmp(attrs[i].key, key) == 0)
            return &attrs[i];
    return NULL;
}
