/* A small HTTP client for the HTTP API tests, over libcurl (tests only):
 * one request at a time, the status, the body and the response headers
 * kept for the test to look at, and a JSON view of the body (json-c). */
#ifndef SL_TEST_HTTP_CLIENT_H
#define SL_TEST_HTTP_CLIENT_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct th_http_reply {
    long status;
    char *body; /* NUL-terminated */
    size_t body_len;
    char *headers;     /* raw header lines */
    json_object *json; /* the body parsed, or NULL */
} th_http_reply_t;

typedef struct th_http {
    uint16_t port;
    char token[2048]; /* sent as a bearer when not empty */
    /* HTTPS: the CA file to verify against, and the name to dial (resolved
     * to 127.0.0.1); plain HTTP to 127.0.0.1 when ca_file is NULL. */
    const char *ca_file;
    const char *host;
    th_http_reply_t last;
} th_http_t;

void th_http_init(th_http_t *h, uint16_t port);
void th_http_free(th_http_t *h);

/* Sends method path (with query) and an optional body (content_type NULL:
 * application/json when body is set). Returns the status; h->last holds the
 * reply until the next request. extra_header: one more "Name: value" or NULL. */
long th_http_request(th_http_t *h, const char *method, const char *path, const char *body,
                     size_t body_len, const char *content_type, const char *extra_header);
long th_http_get(th_http_t *h, const char *path);
long th_http_post(th_http_t *h, const char *path, const char *json);
long th_http_put(th_http_t *h, const char *path, const char *json);
long th_http_delete(th_http_t *h, const char *path);

/* Logs in with a password and keeps the token. True on 200. */
bool th_http_login(th_http_t *h, const char *username, const char *password);

/* The value of a response header of the last reply (case-insensitive name),
 * copied into buf; false when absent. */
bool th_http_header(const th_http_t *h, const char *name, char *buf, size_t len);
/* Fields of the last JSON body by a dotted path ("access_token.token",
 * "0.name" for arrays). */
json_object *th_json_at(json_object *root, const char *path);
int64_t th_json_int(json_object *root, const char *path);
const char *th_json_str(json_object *root, const char *path);

#endif
