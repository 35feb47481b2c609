/* The WebSocket opening handshake of the server (RFC 6455 4.2, server/ws.h):
 * a strict reader of the upgrade request and the answers to it. Pure: no
 * I/O and no state beyond the bytes given, so it is tested and fuzzed on
 * its own. */
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "server/ws.h"

/* RFC 6455 1.3: appended to the key before hashing. */
static const char ws_guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

int sl_ws_accept_of(const char *key, size_t key_len, char accept[32])
{
    uint8_t joined[128];
    uint8_t digest[EVP_MAX_MD_SIZE];
    unsigned digest_len = 0;
    if (key_len + sizeof(ws_guid) > sizeof(joined))
        return -1;
    memcpy(joined, key, key_len);
    memcpy(joined + key_len, ws_guid, sizeof(ws_guid) - 1);
    if (EVP_Digest(joined, key_len + sizeof(ws_guid) - 1, digest, &digest_len, EVP_sha1(), NULL) !=
            1 ||
        digest_len != 20)
        return -1;
    /* 20 bytes are 28 base64 characters; EVP_EncodeBlock adds the NUL. */
    return EVP_EncodeBlock((unsigned char *)accept, digest, 20) == 28 ? 0 : -1;
}

/* --- characters --------------------------------------------------------------- */

/* RFC 9110 5.6.2 tchar. */
static bool is_tchar(uint8_t c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

/* A field value's characters: visible ASCII, obs-text, space and tab. */
static bool is_value_char(uint8_t c)
{
    return c == ' ' || c == '\t' || (c >= 0x21 && c != 0x7f);
}

static bool is_base64_char(uint8_t c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
           c == '/';
}

/* --- the parse state --------------------------------------------------------------- */

typedef struct upgrade_state {
    sl_ws_upgrade_t *out;
    unsigned host, upgrade, connection, version, key; /* times each header was seen */
    bool upgrade_ok, connection_ok, version_ok;
    const uint8_t *key_value;
    size_t key_len;
} upgrade_state_t;

static sl_ws_upgrade_verdict_t refuse(sl_ws_upgrade_t *out, int status, const char *why)
{
    out->status = status;
    out->why = why;
    return SL_WS_UPGRADE_BAD;
}

static bool span_is(const uint8_t *p, size_t n, const char *text)
{
    return n == strlen(text) && memcmp(p, text, n) == 0;
}

static bool span_is_nocase(const uint8_t *p, size_t n, const char *text)
{
    return n == strlen(text) && strncasecmp((const char *)p, text, n) == 0;
}

/* Whether a comma-separated list holds an element equal to word (any case). */
static bool list_has(const uint8_t *p, size_t n, const char *word)
{
    size_t i = 0;
    while (i < n) {
        while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == ','))
            i++;
        size_t start = i;
        while (i < n && p[i] != ',')
            i++;
        size_t end = i;
        while (end > start && (p[end - 1] == ' ' || p[end - 1] == '\t'))
            end--;
        if (end > start && span_is_nocase(p + start, end - start, word))
            return true;
    }
    return false;
}

/* --- lines --------------------------------------------------------------------------- */

/* "GET <target> HTTP/1.1": 405 for another method, 505 for another version. */
static sl_ws_upgrade_verdict_t request_line(upgrade_state_t *st, const uint8_t *p, size_t n)
{
    const uint8_t *sp1 = memchr(p, ' ', n);
    if (!sp1 || sp1 == p)
        return refuse(st->out, 400, "no method in the request line");
    for (const uint8_t *c = p; c < sp1; c++)
        if (!is_tchar(*c))
            return refuse(st->out, 400, "a bad method in the request line");
    size_t rest = n - (size_t)(sp1 + 1 - p);
    const uint8_t *target = sp1 + 1;
    const uint8_t *sp2 = memchr(target, ' ', rest);
    if (!sp2 || sp2 == target)
        return refuse(st->out, 400, "no request target");
    for (const uint8_t *c = target; c < sp2; c++)
        if (*c < 0x21 || *c > 0x7e)
            return refuse(st->out, 400, "a bad request target");
    const uint8_t *version = sp2 + 1;
    size_t version_len = n - (size_t)(version - p);
    if (!span_is(p, (size_t)(sp1 - p), "GET"))
        return refuse(st->out, 405, "the method is not GET");
    if (span_is(version, version_len, "HTTP/1.1"))
        return SL_WS_UPGRADE_MORE;
    bool http = version_len == 8 && memcmp(version, "HTTP/", 5) == 0 && version[5] >= '0' &&
                version[5] <= '9' && version[6] == '.' && version[7] >= '0' && version[7] <= '9';
    return http ? refuse(st->out, 505, "the HTTP version is not 1.1")
                : refuse(st->out, 400, "no HTTP version in the request line");
}

static sl_ws_upgrade_verdict_t header_value(upgrade_state_t *st, const uint8_t *name,
                                            size_t name_len, const uint8_t *v, size_t n)
{
    if (span_is_nocase(name, name_len, "host")) {
        st->host++;
    } else if (span_is_nocase(name, name_len, "upgrade")) {
        st->upgrade++;
        st->upgrade_ok = st->upgrade_ok || list_has(v, n, "websocket");
    } else if (span_is_nocase(name, name_len, "connection")) {
        st->connection++;
        st->connection_ok = st->connection_ok || list_has(v, n, "upgrade");
    } else if (span_is_nocase(name, name_len, "sec-websocket-version")) {
        st->version++;
        st->version_ok = span_is(v, n, "13");
    } else if (span_is_nocase(name, name_len, "sec-websocket-key")) {
        st->key++;
        st->key_value = v;
        st->key_len = n;
    } else if (span_is_nocase(name, name_len, "content-length")) {
        if (!span_is(v, n, "0"))
            return refuse(st->out, 400, "the upgrade request has a body");
    } else if (span_is_nocase(name, name_len, "transfer-encoding")) {
        return refuse(st->out, 400, "the upgrade request has a body");
    }
    return SL_WS_UPGRADE_MORE;
}

/* "Name: value" with no space before the colon and no folding. */
static sl_ws_upgrade_verdict_t header_line(upgrade_state_t *st, const uint8_t *p, size_t n)
{
    size_t i = 0;
    while (i < n && is_tchar(p[i]))
        i++;
    if (i == 0 || i == n || p[i] != ':')
        return refuse(st->out, 400, "a malformed header line");
    size_t name_len = i++;
    for (size_t j = i; j < n; j++)
        if (!is_value_char(p[j]))
            return refuse(st->out, 400, "a control character in a header value");
    while (i < n && (p[i] == ' ' || p[i] == '\t'))
        i++;
    size_t end = n;
    while (end > i && (p[end - 1] == ' ' || p[end - 1] == '\t'))
        end--;
    return header_value(st, p, name_len, p + i, end - i);
}

/* A key is base64 of 16 random bytes: 22 characters, the last of them
 * carrying 2 bits (so one of A, Q, g, w), then "==". */
static bool key_ok(const uint8_t *k, size_t n)
{
    if (n != 24 || k[22] != '=' || k[23] != '=')
        return false;
    for (size_t i = 0; i < 22; i++)
        if (!is_base64_char(k[i]))
            return false;
    return strchr("AQgw", k[21]) != NULL;
}

/* After the blank line: every header the handshake needs, each once. */
static sl_ws_upgrade_verdict_t request_complete(upgrade_state_t *st, size_t length)
{
    if (st->host != 1)
        return refuse(st->out, 400, st->host ? "Host is given twice" : "no Host header");
    if (st->upgrade != 1 || !st->upgrade_ok)
        return refuse(st->out, 400, "no Upgrade: websocket header");
    if (!st->connection_ok)
        return refuse(st->out, 400, "no Connection: Upgrade header");
    if (st->version != 1)
        return refuse(st->out, 400,
                      st->version ? "Sec-WebSocket-Version is given twice"
                                  : "no Sec-WebSocket-Version header");
    if (!st->version_ok)
        return refuse(st->out, 426, "the WebSocket version is not 13");
    if (st->key != 1 || !key_ok(st->key_value, st->key_len))
        return refuse(st->out, 400,
                      st->key > 1 ? "Sec-WebSocket-Key is given twice"
                                  : "no valid Sec-WebSocket-Key (base64 of 16 bytes)");
    if (sl_ws_accept_of((const char *)st->key_value, st->key_len, st->out->accept) != 0)
        return refuse(st->out, 500, "cannot compute Sec-WebSocket-Accept");
    st->out->length = length;
    return SL_WS_UPGRADE_OK;
}

/* The incomplete last line: refuses bytes no HTTP request can hold (a TLS
 * hello, a binary frame) without waiting for a line end. */
static sl_ws_upgrade_verdict_t partial_line(upgrade_state_t *st, const uint8_t *p, size_t n,
                                            bool first)
{
    bool method = first;
    for (size_t i = 0; i < n; i++) {
        uint8_t c = p[i];
        if (c == '\r' && i + 1 == n)
            break;
        if (c < 0x20 ? c != '\t' : c == 0x7f)
            return refuse(st->out, 400, "not an HTTP request");
        if (method && c == ' ')
            method = false;
        else if (method && !is_tchar(c))
            return refuse(st->out, 400, "not an HTTP request");
    }
    return SL_WS_UPGRADE_MORE;
}

static sl_ws_upgrade_verdict_t one_line(upgrade_state_t *st, const uint8_t *p, size_t n,
                                        unsigned line)
{
    if (n == 0 || p[n - 1] != '\r')
        return refuse(st->out, 400, "a line does not end with CRLF");
    n--;
    if (memchr(p, '\r', n))
        return refuse(st->out, 400, "a bare CR in a line");
    if (line == 0)
        return request_line(st, p, n);
    if (p[0] == ' ' || p[0] == '\t')
        return refuse(st->out, 400, "a folded header line");
    return header_line(st, p, n);
}

sl_ws_upgrade_verdict_t sl_ws_upgrade_parse(const uint8_t *buf, size_t len, sl_ws_upgrade_t *out)
{
    memset(out, 0, sizeof(*out));
    upgrade_state_t st = {.out = out};
    size_t limit = len < SL_WS_HANDSHAKE_MAX ? len : SL_WS_HANDSHAKE_MAX;
    size_t pos = 0;
    /* Each pass takes one line; the request line, the headers and the blank line. */
    for (unsigned line = 0; line <= SL_WS_HANDSHAKE_LINES_MAX + 1; line++) {
        const uint8_t *nl = memchr(buf + pos, '\n', limit - pos);
        if (!nl) {
            sl_ws_upgrade_verdict_t v = partial_line(&st, buf + pos, limit - pos, line == 0);
            if (v == SL_WS_UPGRADE_MORE && len >= SL_WS_HANDSHAKE_MAX)
                return refuse(out, 431, "the upgrade request is too large");
            return v;
        }
        size_t n = (size_t)(nl - (buf + pos));
        if (line > 0 && n == 1 && buf[pos] == '\r')
            return request_complete(&st, pos + 2);
        if (line > SL_WS_HANDSHAKE_LINES_MAX)
            break;
        sl_ws_upgrade_verdict_t v = one_line(&st, buf + pos, n, line);
        if (v != SL_WS_UPGRADE_MORE)
            return v;
        pos += n + 1;
    }
    return refuse(out, 431, "the upgrade request has too many header lines");
}

static const char *status_text(int status)
{
    switch (status) {
    case 405:
        return "Method Not Allowed";
    case 426:
        return "Upgrade Required";
    case 431:
        return "Request Header Fields Too Large";
    case 500:
        return "Internal Server Error";
    case 505:
        return "HTTP Version Not Supported";
    default:
        return "Bad Request";
    }
}

void sl_ws_upgrade_answer(const sl_ws_upgrade_t *u, sl_buf_t *out)
{
    char text[256];
    int n;
    if (u->status == 0)
        n = snprintf(text, sizeof(text),
                     "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                     "Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n",
                     u->accept);
    else
        n = snprintf(text, sizeof(text),
                     "HTTP/1.1 %d %s\r\nConnection: close\r\nContent-Length: 0\r\n%s%s\r\n",
                     u->status, status_text(u->status),
                     u->status == 426 ? "Sec-WebSocket-Version: 13\r\n" : "",
                     u->status == 405 ? "Allow: GET\r\n" : "");
    sl_assert(n > 0 && (size_t)n < sizeof(text));
    sl_put_bytes(out, text, (size_t)n);
}
