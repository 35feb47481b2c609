/* libcurl under the HTTP API tests (http_client.h). */
#include "http_client.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct grow {
    char *data;
    size_t len;
} grow_t;

static size_t on_data(char *p, size_t size, size_t n, void *ctx)
{
    grow_t *g = ctx;
    size_t add = size * n;
    char *d = realloc(g->data, g->len + add + 1);
    if (!d)
        return 0;
    memcpy(d + g->len, p, add);
    g->len += add;
    d[g->len] = '\0';
    g->data = d;
    return add;
}

static void reply_free(th_http_reply_t *r)
{
    free(r->body);
    free(r->headers);
    json_object_put(r->json);
    memset(r, 0, sizeof(*r));
}

void th_http_init(th_http_t *h, uint16_t port)
{
    memset(h, 0, sizeof(*h));
    h->port = port;
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

void th_http_free(th_http_t *h)
{
    reply_free(&h->last);
}

long th_http_request(th_http_t *h, const char *method, const char *path, const char *body,
                     size_t body_len, const char *content_type, const char *extra_header)
{
    reply_free(&h->last);
    CURL *c = curl_easy_init();
    if (!c)
        return -1;
    char url[2048], auth[2100], ctype[256];
    char resolve[300];
    struct curl_slist *names = NULL;
    if (h->ca_file) {
        snprintf(url, sizeof(url), "https://%s:%u%s", h->host, h->port, path);
        snprintf(resolve, sizeof(resolve), "%s:%u:127.0.0.1", h->host, h->port);
        names = curl_slist_append(NULL, resolve);
    } else {
        snprintf(url, sizeof(url), "http://127.0.0.1:%u%s", h->port, path);
    }
    struct curl_slist *hdrs = NULL;
    if (h->token[0]) {
        snprintf(auth, sizeof(auth), "Authorization: Bearer %s", h->token);
        hdrs = curl_slist_append(hdrs, auth);
    }
    if (body) {
        snprintf(ctype, sizeof(ctype), "Content-Type: %s",
                 content_type ? content_type : "application/json");
        hdrs = curl_slist_append(hdrs, ctype);
        /* No 100-continue round trip: the tests look at what the server answers. */
        hdrs = curl_slist_append(hdrs, "Expect:");
    }
    if (extra_header)
        hdrs = curl_slist_append(hdrs, extra_header);
    grow_t data = {0}, head = {0};
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &data);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &head);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
    if (h->ca_file) {
        curl_easy_setopt(c, CURLOPT_CAINFO, h->ca_file);
        curl_easy_setopt(c, CURLOPT_RESOLVE, names);
    }
    if (strcmp(method, "HEAD") == 0)
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    if (body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
    }
    CURLcode rc = curl_easy_perform(c);
    long status = -1;
    if (rc == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    else
        fprintf(stderr, "http: %s %s: %s\n", method, path, curl_easy_strerror(rc));
    curl_easy_cleanup(c);
    curl_slist_free_all(hdrs);
    curl_slist_free_all(names);
    h->last.status = status;
    h->last.body = data.data ? data.data : calloc(1, 1);
    h->last.body_len = data.len;
    h->last.headers = head.data ? head.data : calloc(1, 1);
    h->last.json = data.len ? json_tokener_parse(h->last.body) : NULL;
    return status;
}

long th_http_get(th_http_t *h, const char *path)
{
    return th_http_request(h, "GET", path, NULL, 0, NULL, NULL);
}

long th_http_post(th_http_t *h, const char *path, const char *json)
{
    return th_http_request(h, "POST", path, json, strlen(json), NULL, NULL);
}

long th_http_put(th_http_t *h, const char *path, const char *json)
{
    return th_http_request(h, "PUT", path, json, strlen(json), NULL, NULL);
}

long th_http_delete(th_http_t *h, const char *path)
{
    return th_http_request(h, "DELETE", path, NULL, 0, NULL, NULL);
}

bool th_http_login(th_http_t *h, const char *username, const char *password)
{
    char body[256];
    snprintf(body, sizeof(body), "{\"username\":\"%s\",\"password\":\"%s\"}", username, password);
    h->token[0] = '\0';
    if (th_http_post(h, "/users/login", body) != 200)
        return false;
    const char *t = th_json_str(h->last.json, "access_token.token");
    if (!t)
        return false;
    snprintf(h->token, sizeof(h->token), "%s", t);
    return true;
}

bool th_http_header(const th_http_t *h, const char *name, char *buf, size_t len)
{
    size_t n = strlen(name);
    for (const char *p = h->last.headers; p && *p;) {
        const char *end = strstr(p, "\r\n");
        size_t line = end ? (size_t)(end - p) : strlen(p);
        if (line > n && p[n] == ':' && strncasecmp(p, name, n) == 0) {
            const char *v = p + n + 1;
            while (*v == ' ')
                v++;
            snprintf(buf, len, "%.*s", (int)(line - (size_t)(v - p)), v);
            return true;
        }
        p = end ? end + 2 : NULL;
    }
    return false;
}

json_object *th_json_at(json_object *root, const char *path)
{
    char key[128];
    json_object *o = root;
    for (const char *p = path; o && *p;) {
        size_t n = strcspn(p, ".");
        snprintf(key, sizeof(key), "%.*s", (int)n, p);
        if (json_object_is_type(o, json_type_array))
            o = json_object_array_get_idx(o, (size_t)atoi(key));
        else if (!json_object_object_get_ex(o, key, &o))
            o = NULL;
        p += n + (p[n] == '.');
    }
    return o;
}

int64_t th_json_int(json_object *root, const char *path)
{
    json_object *o = th_json_at(root, path);
    return o ? json_object_get_int64(o) : INT64_MIN;
}

const char *th_json_str(json_object *root, const char *path)
{
    json_object *o = th_json_at(root, path);
    return o && json_object_is_type(o, json_type_string) ? json_object_get_string(o) : NULL;
}
