/* One OTLP export request over libcurl (server/otel_export.h). OTLP/HTTP:
 * POST the protobuf message to the endpoint URL as given, Content-Type
 * application/x-protobuf; any 2xx answer means the collector took it
 * (a partial-success body is not read). */
#include "server/otel_export.h"

#include <curl/curl.h>
#include <errno.h>
#include <sluice/error.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/limits.h"

struct sl_otel_sender {
    CURL *curl;
    struct curl_slist *headers;
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

static int sender_fail(sl_otel_sender_t *s, char *err, size_t err_len, const char *what)
{
    snprintf(err, err_len, "%s", what);
    sl_otel_sender_destroy(s);
    return -SL_ERR_ERROR;
}

int sl_otel_sender_create(const char *signal, const char *transport, const char *endpoint,
                          sl_otel_sender_t **out, char *err, size_t err_len)
{
    *out = NULL;
    sl_otel_sender_t *s = calloc(1, sizeof(*s));
    if (!s)
        return sender_fail(s, err, err_len, "out of memory");
    if (strcmp(transport, "http") != 0) {
        snprintf(err, err_len, "telemetry.%s.transport = \"%s\" is not supported", signal,
                 transport);
        sl_otel_sender_destroy(s);
        return -SL_ERR_INVALID_CONFIGURATION;
    }
    snprintf(s->url, sizeof(s->url), "%s", endpoint);
    redact(s->url, s->shown, sizeof(s->shown));
    s->curl = curl_easy_init();
    s->headers = curl_slist_append(NULL, "Content-Type: application/x-protobuf");
    /* No "Expect: 100-continue" round trip before large bodies. */
    struct curl_slist *h = s->headers ? curl_slist_append(s->headers, "Expect:") : NULL;
    if (!s->curl || !h)
        return sender_fail(s, err, err_len, "cannot set up libcurl");
    s->headers = h;
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
    (void)s;
    return 0;
}

const char *sl_otel_sender_url(const sl_otel_sender_t *s)
{
    return s->shown;
}

bool sl_otel_send(sl_otel_sender_t *s, uint8_t *body, size_t len, char *why, size_t why_len)
{
    s->curl_error[0] = '\0';
    curl_easy_setopt(s->curl, CURLOPT_POSTFIELDS, (const char *)body);
    curl_easy_setopt(s->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    CURLcode rc = curl_easy_perform(s->curl);
    if (rc != CURLE_OK) {
        snprintf(why, why_len, "%s", s->curl_error[0] ? s->curl_error : curl_easy_strerror(rc));
        return false;
    }
    long status = 0;
    curl_easy_getinfo(s->curl, CURLINFO_RESPONSE_CODE, &status);
    if (status < 200 || status > 299) {
        snprintf(why, why_len, "HTTP status %ld", status);
        return false;
    }
    return true;
}
