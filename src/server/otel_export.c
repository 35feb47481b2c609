/* One OTLP export request over libcurl (server/otel_export.h).
 *
 * http: OTLP/HTTP. POST the protobuf message to the endpoint URL as given,
 * Content-Type application/x-protobuf; any 2xx answer means the collector
 * took it (a partial-success body is not read).
 *
 * grpc: OTLP/gRPC, the unary call <Service>/Export over HTTP/2: cleartext
 * HTTP/2 with prior knowledge for an http:// endpoint, HTTP/2 negotiated by
 * TLS (ALPN) for https://. The path is the service method's, so only the
 * endpoint's scheme and authority are used (as the reference's gRPC
 * exporter does). The body is gRPC's length-prefixed message (a flag byte,
 * a big-endian u32 length, the protobuf), Content-Type application/grpc,
 * TE: trailers; the call succeeded when the answer is HTTP 200 with
 * grpc-status 0, which comes in the trailers (or, for an immediate error,
 * the headers): libcurl hands both to the header callback. */
#include "server/otel_export.h"

#include <curl/curl.h>
#include <errno.h>
#include <sluice/error.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/limits.h"
#include "server/otel_proto.h"

/* gRPC's length prefix: a compression flag and a u32 length. */
#define GRPC_PREFIX 5u
/* The first libcurl that reuses a prior-knowledge HTTP/2 connection
 * correctly: 8.0.0. */
#define PRIOR_KNOWLEDGE_REUSE_FIXED 0x080000u

struct sl_otel_sender {
    CURL *curl;
    struct curl_slist *headers;
    bool grpc;
    int grpc_status; /* of the last call; -1 until the answer says */
    char grpc_message[128];
    char url[SL_OTEL_ENDPOINT_CAPACITY + 80];
    char shown[SL_OTEL_ENDPOINT_CAPACITY + 80]; /* url without user:password@ */
    char curl_error[CURL_ERROR_SIZE];
};

int sl_otel_export_global_init(void)
{
    return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : -SL_ERR_ERROR;
}

/* The answer's body is not needed: a collector's error details are a
 * protobuf Status the log would not show better than the HTTP status. */
static size_t discard_body(char *ptr, size_t size, size_t nmemb, void *ctx)
{
    (void)ptr, (void)ctx;
    return size * nmemb;
}

/* A header or trailer line of the answer: gRPC's outcome. */
static size_t grpc_header(char *line, size_t size, size_t nmemb, void *ctx)
{
    sl_otel_sender_t *s = ctx;
    size_t len = size * nmemb;
    static const char status[] = "grpc-status:", message[] = "grpc-message:";
    if (len > sizeof(status) && strncasecmp(line, status, sizeof(status) - 1) == 0) {
        s->grpc_status = atoi(line + sizeof(status) - 1);
    } else if (len > sizeof(message) && strncasecmp(line, message, sizeof(message) - 1) == 0) {
        const char *v = line + sizeof(message) - 1;
        size_t n = len - (sizeof(message) - 1);
        while (n > 0 && (*v == ' '))
            v++, n--;
        while (n > 0 && (v[n - 1] == '\r' || v[n - 1] == '\n'))
            n--;
        snprintf(s->grpc_message, sizeof(s->grpc_message), "%.*s", (int)n, v);
    }
    return len;
}

/* The URL as logs may show it: credentials in its authority
 * ("https://user:secret@collector/...") become "***". */
static void redact(const char *url, char *out, size_t cap)
{
    const char *host = strstr(url, "://");
    host = host ? host + 3 : url;
    size_t authority = strcspn(host, "/?#");
    const char *at = memchr(host, '@', authority);
    if (!at) {
        snprintf(out, cap, "%s", url);
        return;
    }
    snprintf(out, cap, "%.*s***%s", (int)(host - url), url, at);
}

/* gRPC's URL: the endpoint's scheme and authority, then the method. */
static void grpc_url(const char *endpoint, const char *signal, char *out, size_t cap)
{
    const char *host = strstr(endpoint, "://");
    host = host ? host + 3 : endpoint;
    size_t authority = strcspn(host, "/?#");
    bool logs = strcmp(signal, "logs") == 0;
    snprintf(out, cap, "%.*s/opentelemetry.proto.collector.%s.v1.%s/Export",
             (int)(host + authority - endpoint), endpoint, logs ? "logs" : "trace",
             logs ? "LogsService" : "TraceService");
}

static int sender_fail(sl_otel_sender_t *s, char *err, size_t err_len, const char *what)
{
    snprintf(err, err_len, "%s", what);
    sl_otel_sender_destroy(s);
    return -SL_ERR_ERROR;
}

/* The request headers of the transport. */
static struct curl_slist *transport_headers(bool grpc)
{
    /* No "Expect: 100-continue" round trip before large bodies. */
    static const char *const http[] = {"Content-Type: application/x-protobuf", "Expect:"};
    static const char *const rpc[] = {"Content-Type: application/grpc", "TE: trailers", "Expect:"};
    const char *const *lines = grpc ? rpc : http;
    size_t n = grpc ? sizeof(rpc) / sizeof(rpc[0]) : sizeof(http) / sizeof(http[0]);
    struct curl_slist *list = NULL;
    for (size_t i = 0; i < n; i++) {
        struct curl_slist *grown = curl_slist_append(list, lines[i]);
        if (!grown) {
            curl_slist_free_all(list);
            return NULL;
        }
        list = grown;
    }
    return list;
}

static void set_options(sl_otel_sender_t *s)
{
    CURL *c = s->curl;
    curl_easy_setopt(c, CURLOPT_URL, s->url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, s->headers);
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    /* A thread that is not the main one: no signals for timeouts. */
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)SL_OTEL_CONNECT_TIMEOUT_MS);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)SL_OTEL_EXPORT_TIMEOUT_MS);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard_body);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, s->curl_error);
    /* Only the collector's own scheme: no redirects elsewhere. */
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    if (s->grpc) {
        bool tls = strncmp(s->url, "https://", 8) == 0;
        curl_easy_setopt(c, CURLOPT_HTTP_VERSION,
                         tls ? (long)CURL_HTTP_VERSION_2TLS
                             : (long)CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE);
        /* libcurl before 8.0.0 (Debian 12 has 7.88) fails every request it
         * sends on a reused prior-knowledge HTTP/2 connection with "Error in
         * the HTTP2 framing layer" (curl issue 10634): there, each export
         * opens its own connection, a loopback or LAN handshake per request
         * of up to 512 records. */
        if (!tls && curl_version_info(CURLVERSION_NOW)->version_num < PRIOR_KNOWLEDGE_REUSE_FIXED)
            curl_easy_setopt(c, CURLOPT_FORBID_REUSE, 1L);
        curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, grpc_header);
        curl_easy_setopt(c, CURLOPT_HEADERDATA, s);
    }
}

int sl_otel_sender_create(const char *signal, const char *transport, const char *endpoint,
                          sl_otel_sender_t **out, char *err, size_t err_len)
{
    *out = NULL;
    sl_otel_sender_t *s = calloc(1, sizeof(*s));
    if (!s)
        return sender_fail(s, err, err_len, "out of memory");
    s->grpc = strcmp(transport, "grpc") == 0;
    if (!s->grpc && strcmp(transport, "http") != 0) {
        snprintf(err, err_len, "telemetry.%s.transport = \"%s\" is not supported", signal,
                 transport);
        sl_otel_sender_destroy(s);
        return -SL_ERR_INVALID_CONFIGURATION;
    }
    if (s->grpc) {
        curl_version_info_data *v = curl_version_info(CURLVERSION_NOW);
        if (!(v->features & CURL_VERSION_HTTP2))
            return sender_fail(s, err, err_len,
                               "telemetry: grpc needs HTTP/2, which this libcurl lacks; use http");
        grpc_url(endpoint, signal, s->url, sizeof(s->url));
    } else {
        snprintf(s->url, sizeof(s->url), "%s", endpoint);
    }
    redact(s->url, s->shown, sizeof(s->shown));
    s->curl = curl_easy_init();
    s->headers = transport_headers(s->grpc);
    if (!s->curl || !s->headers)
        return sender_fail(s, err, err_len, "cannot set up libcurl");
    set_options(s);
    *out = s;
    return 0;
}

void sl_otel_sender_destroy(sl_otel_sender_t *s)
{
    if (!s)
        return;
    if (s->curl)
        curl_easy_cleanup(s->curl);
    curl_slist_free_all(s->headers);
    free(s);
}

size_t sl_otel_sender_headroom(const sl_otel_sender_t *s)
{
    return s->grpc ? GRPC_PREFIX : 0;
}

const char *sl_otel_sender_url(const sl_otel_sender_t *s)
{
    return s->shown;
}

/* The outcome of a completed exchange; false with why filled on a refusal. */
static bool answer_ok(sl_otel_sender_t *s, char *why, size_t why_len)
{
    long status = 0;
    curl_easy_getinfo(s->curl, CURLINFO_RESPONSE_CODE, &status);
    if (!s->grpc) {
        if (status >= 200 && status <= 299)
            return true;
        snprintf(why, why_len, "HTTP status %ld", status);
        return false;
    }
    if (status == 200 && s->grpc_status == 0)
        return true;
    if (status != 200)
        snprintf(why, why_len, "HTTP status %ld", status);
    else if (s->grpc_status < 0)
        snprintf(why, why_len, "the answer carries no grpc-status");
    else
        snprintf(why, why_len, "grpc-status %d%s%s", s->grpc_status, s->grpc_message[0] ? ": " : "",
                 s->grpc_message);
    return false;
}

bool sl_otel_send(sl_otel_sender_t *s, uint8_t *body, size_t len, char *why, size_t why_len)
{
    s->curl_error[0] = '\0';
    s->grpc_status = -1;
    s->grpc_message[0] = '\0';
    if (s->grpc)
        sl_otlp_grpc_prefix(body, len - GRPC_PREFIX);
    curl_easy_setopt(s->curl, CURLOPT_POSTFIELDS, (const char *)body);
    curl_easy_setopt(s->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    CURLcode rc = curl_easy_perform(s->curl);
    if (rc != CURLE_OK) {
        snprintf(why, why_len, "%s", s->curl_error[0] ? s->curl_error : curl_easy_strerror(rc));
        return false;
    }
    return answer_ok(s, why, why_len);
}
