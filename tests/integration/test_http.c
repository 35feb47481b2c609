/* The HTTP API's door against the real sluiced (docs/http.md): login and
 * tokens, the bearer rules, logout that revokes, the signing key kept in the
 * data directory, the framework rejections (bad JSON, wrong content type,
 * huge bodies, unknown routes and methods), CORS, and a read that goes
 * through the event loop (a stream made over TCP, listed over HTTP). */
#define _GNU_SOURCE /* strcasestr */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
// clang-format off
#include <cmocka.h>
// clang-format on

#include <sluice/client.h>

#include "harness.h"
#include "http_client.h"

static th_server_t srv;
static th_http_t http;

static int setup(void **state)
{
    (void)state;
    if (!th_start(&srv, NULL))
        return -1;
    assert_int_not_equal(srv.http_port, 0);
    th_http_init(&http, srv.http_port);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    th_http_free(&http);
    assert_int_equal(th_stop(&srv, SIGTERM), 0);
    th_cleanup(&srv);
    return 0;
}

static void assert_error(long status, long want_status, int64_t id, const char *code)
{
    assert_int_equal(status, want_status);
    assert_non_null(http.last.json);
    assert_int_equal(th_json_int(http.last.json, "id"), id);
    assert_string_equal(th_json_str(http.last.json, "code"), code);
    assert_non_null(th_json_at(http.last.json, "reason"));
    char ct[64];
    assert_true(th_http_header(&http, "Content-Type", ct, sizeof(ct)));
    assert_string_equal(ct, "application/json");
}

static void test_ping(void **state)
{
    (void)state;
    http.token[0] = '\0';
    assert_int_equal(th_http_get(&http, "/ping"), 200);
    assert_string_equal(http.last.body, "pong");
}

/* A stream made over TCP is listed over HTTP: the request went through the
 * same loop, reads and metadata. */
static void test_login_then_streams_through_the_loop(void **state)
{
    (void)state;
    sl_client_t *c = th_client(srv.port, "iggy", "iggy");
    assert_non_null(c);
    const sl_stream_t *made = NULL;
    assert_int_equal(sl_client_create_stream(c, "made-over-tcp", &made), 0);
    uint32_t id = made->id;
    sl_client_close(c);

    assert_true(th_http_login(&http, "iggy", "iggy"));
    assert_int_equal(th_json_int(http.last.json, "user_id"), 0);
    int64_t expiry = th_json_int(http.last.json, "access_token.expiry");
    assert_true(expiry > (int64_t)time(NULL));
    /* A JWT: three base64url parts. */
    const char *dot = strchr(http.token, '.');
    assert_non_null(dot);
    assert_non_null(strchr(dot + 1, '.'));

    assert_int_equal(th_http_get(&http, "/streams"), 200);
    json_object *list = http.last.json;
    assert_true(json_object_is_type(list, json_type_array));
    bool found = false;
    for (size_t i = 0; i < json_object_array_length(list); i++) {
        json_object *s = json_object_array_get_idx(list, i);
        if (strcmp(th_json_str(s, "name"), "made-over-tcp") == 0) {
            found = true;
            assert_int_equal(th_json_int(s, "id"), id);
            assert_string_equal(th_json_str(s, "size"), "0 B");
        }
    }
    assert_true(found);
    char view[16];
    assert_true(th_http_header(&http, "iggy-view", view, sizeof(view)));
}

static void test_bearer_rules(void **state)
{
    (void)state;
    http.token[0] = '\0';
    assert_error(th_http_get(&http, "/streams"), 401, 77, "access_token_missing");
    snprintf(http.token, sizeof(http.token), "not-a-token");
    assert_error(th_http_get(&http, "/streams"), 401, 40, "unauthenticated");
    /* A token whose signature was changed. */
    assert_true(th_http_login(&http, "iggy", "iggy"));
    size_t n = strlen(http.token);
    http.token[n - 2] = http.token[n - 2] == 'A' ? 'B' : 'A';
    assert_error(th_http_get(&http, "/streams"), 401, 40, "unauthenticated");
    /* "bearer" in lower case is not the scheme. */
    http.token[0] = '\0';
    assert_int_equal(
        th_http_request(&http, "GET", "/streams", NULL, 0, NULL, "Authorization: bearer abc"), 401);
    assert_int_equal(th_json_int(http.last.json, "id"), 77);
}

static void test_login_failures(void **state)
{
    (void)state;
    http.token[0] = '\0';
    assert_error(
        th_http_post(&http, "/users/login", "{\"username\":\"iggy\",\"password\":\"nope\"}"), 400,
        42, "invalid_credentials");
    assert_error(
        th_http_post(&http, "/users/login", "{\"username\":\"ghost\",\"password\":\"boo\"}"), 400,
        42, "invalid_credentials");
    /* Too short to be a username at all. */
    assert_error(th_http_post(&http, "/users/login", "{\"username\":\"ab\",\"password\":\"iggy\"}"),
                 400, 42, "invalid_credentials");
    /* An inactive user cannot log in: 400 err 42 (http.md 2.2). */
    assert_true(th_http_login(&http, "iggy", "iggy"));
    assert_int_equal(th_http_post(&http, "/users",
                                  "{\"username\":\"sleepy\",\"password\":\"secret\","
                                  "\"status\":\"inactive\"}"),
                     200);
    http.token[0] = '\0';
    assert_error(
        th_http_post(&http, "/users/login", "{\"username\":\"sleepy\",\"password\":\"secret\"}"),
        400, 42, "invalid_credentials");
}

/* Sluice's logout revokes the token (the reference's does not). */
static void test_logout_revokes_the_token(void **state)
{
    (void)state;
    assert_true(th_http_login(&http, "iggy", "iggy"));
    char token[2048];
    snprintf(token, sizeof(token), "%s", http.token);
    assert_int_equal(th_http_get(&http, "/streams"), 200);
    assert_int_equal(th_http_delete(&http, "/users/logout"), 204);
    char view[16];
    assert_true(th_http_header(&http, "iggy-view", view, sizeof(view)));
    assert_error(th_http_get(&http, "/streams"), 401, 40, "unauthenticated");
    assert_false(th_http_header(&http, "iggy-view", view, sizeof(view)));
    /* Refresh with the logged-out token is refused too. */
    char body[2200];
    snprintf(body, sizeof(body), "{\"token\":\"%s\"}", token);
    http.token[0] = '\0';
    assert_error(th_http_post(&http, "/users/refresh-token", body), 401, 40, "unauthenticated");
    /* Another login gives a working token. */
    assert_true(th_http_login(&http, "iggy", "iggy"));
    assert_int_equal(th_http_get(&http, "/streams"), 200);
}

static void test_refresh_issues_a_new_token(void **state)
{
    (void)state;
    assert_true(th_http_login(&http, "iggy", "iggy"));
    char body[2200];
    snprintf(body, sizeof(body), "{\"token\":\"%s\"}", http.token);
    char old[2048];
    snprintf(old, sizeof(old), "%s", http.token);
    http.token[0] = '\0';
    assert_int_equal(th_http_post(&http, "/users/refresh-token", body), 200);
    const char *fresh = th_json_str(http.last.json, "access_token.token");
    assert_non_null(fresh);
    assert_string_not_equal(fresh, old);
    snprintf(http.token, sizeof(http.token), "%s", fresh);
    assert_int_equal(th_http_get(&http, "/streams"), 200);
    /* Stateless: the old token still works. */
    snprintf(http.token, sizeof(http.token), "%s", old);
    assert_int_equal(th_http_get(&http, "/streams"), 200);
}

/* A raw personal access token works as a bearer and for a login. */
static void test_personal_access_token_bearer(void **state)
{
    (void)state;
    assert_true(th_http_login(&http, "iggy", "iggy"));
    assert_int_equal(
        th_http_post(&http, "/personal-access-tokens", "{\"name\":\"scraper\",\"expiry\":0}"), 200);
    char pat[256];
    snprintf(pat, sizeof(pat), "%s", th_json_str(http.last.json, "token"));
    assert_int_equal(strlen(pat), 68);
    snprintf(http.token, sizeof(http.token), "%s", pat);
    assert_int_equal(th_http_get(&http, "/streams"), 200);
    assert_int_equal(th_http_get(&http, "/users/me"), 200);
    assert_string_equal(th_json_str(http.last.json, "username"), "iggy");
    char body[512];
    snprintf(body, sizeof(body), "{\"token\":\"%s\"}", pat);
    http.token[0] = '\0';
    assert_int_equal(th_http_post(&http, "/personal-access-tokens/login", body), 200);
    assert_int_equal(th_json_int(http.last.json, "user_id"), 0);
    assert_error(
        th_http_post(&http, "/personal-access-tokens/login", "{\"token\":\"AAAAnotatokenAAAA\"}"),
        401, 53, "invalid_personal_access_token");
}

static void test_framework_rejections(void **state)
{
    (void)state;
    assert_true(th_http_login(&http, "iggy", "iggy"));
    char ct[64];
    /* Not JSON at all: 400, plain text. */
    assert_int_equal(th_http_post(&http, "/streams", "{\"name\":"), 400);
    assert_true(th_http_header(&http, "Content-Type", ct, sizeof(ct)));
    assert_non_null(strstr(ct, "text/plain"));
    assert_int_equal(th_http_post(&http, "/streams", "{\"name\":\"x\"} trailing"), 400);
    /* JSON of the wrong shape: 422. */
    assert_int_equal(th_http_post(&http, "/streams", "[]"), 422);
    assert_int_equal(th_http_post(&http, "/streams", "{\"nom\":\"x\"}"), 422);
    assert_int_equal(th_http_post(&http, "/streams", "{\"name\":42}"), 422);
    /* Not declared as JSON: 415. */
    const char *b = "{\"name\":\"x\"}";
    assert_int_equal(th_http_request(&http, "POST", "/streams", b, strlen(b), "text/plain", NULL),
                     415);
    /* A bad name is the command's own error (JSON body). */
    assert_error(th_http_post(&http, "/streams", "{\"name\":\"\"}"), 400, 1013,
                 "invalid_stream_name");
    /* An identifier name over 255 bytes: 400 err 6. */
    char path[400];
    memset(path, 0, sizeof(path));
    strcpy(path, "/streams/");
    memset(path + 9, 'n', 300);
    assert_error(th_http_get(&http, path), 400, 6, "invalid_identifier");
}

static void test_unknown_routes_and_methods(void **state)
{
    (void)state;
    assert_true(th_http_login(&http, "iggy", "iggy"));
    assert_int_equal(th_http_get(&http, "/nope"), 404);
    assert_int_equal(http.last.body_len, 0);
    assert_int_equal(th_http_get(&http, "/streams/"), 404);
    assert_int_equal(th_http_get(&http, "/"), 404);
    assert_int_equal(th_http_request(&http, "PATCH", "/streams", "{}", 2, NULL, NULL), 405);
    assert_int_equal(http.last.body_len, 0);
    assert_int_equal(th_http_get(&http, "/users/login"), 405);
    /* Not served over HTTP (http.md 4): join, and the SDK's flush path. */
    assert_int_equal(th_http_get(&http, "/streams/1/topics/1/messages/flush/0/fsync=true"), 404);
}

/* A declared body over http.max_request_size: 413 before any of the body is
 * read, and the connection is not kept (http.md 1). Sent by hand, headers
 * only: a client that pushed the 3 MB body after them would race the close
 * (the server's unread bytes make its kernel answer with a reset, and curl
 * reports that send error instead of the 413 it may not have read yet). */
static size_t read_to_close(int fd, char *out, size_t cap)
{
    size_t len = 0;
    while (len + 1 < cap) {
        ssize_t n = recv(fd, out + len, cap - 1 - len, 0);
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    out[len] = '\0';
    return len;
}

static void test_huge_body(void **state)
{
    (void)state;
    assert_true(th_http_login(&http, "iggy", "iggy"));
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(srv.http_port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    struct timeval tv = {.tv_sec = 30};
    assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
    char req[4096];
    int n = snprintf(req, sizeof(req),
                     "POST /streams HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     "Authorization: Bearer %s\r\nContent-Type: application/json\r\n"
                     "Content-Length: 3000000\r\n\r\n",
                     http.token);
    assert_true(n > 0 && (size_t)n < sizeof(req));
    assert_int_equal(send(fd, req, (size_t)n, MSG_NOSIGNAL), n);
    char reply[8192];
    size_t len = read_to_close(fd, reply, sizeof(reply));
    close(fd);
    /* The whole answer came, then the server closed: read_to_close saw the end. */
    assert_true(len > 12);
    assert_memory_equal(reply, "HTTP/1.1 413", 12);
    assert_non_null(strcasestr(reply, "\r\nConnection: close\r\n"));
    /* The server still serves. */
    assert_int_equal(th_http_get(&http, "/streams"), 200);
}

static void test_cors(void **state)
{
    (void)state;
    http.token[0] = '\0';
    /* A preflight needs no bearer. */
    assert_int_equal(th_http_request(&http, "OPTIONS", "/streams", NULL, 0, NULL,
                                     "Access-Control-Request-Method: POST"),
                     200);
    char v[128];
    assert_true(th_http_header(&http, "Access-Control-Allow-Origin", v, sizeof(v)));
    assert_string_equal(v, "*");
    assert_true(th_http_header(&http, "Access-Control-Allow-Methods", v, sizeof(v)));
    assert_non_null(strstr(v, "POST"));
    assert_true(th_http_header(&http, "Access-Control-Allow-Headers", v, sizeof(v)));
    assert_non_null(strstr(v, "authorization"));
    assert_int_equal(th_http_get(&http, "/ping"), 200);
    assert_true(th_http_header(&http, "Access-Control-Expose-Headers", v, sizeof(v)));
    assert_string_equal(v, "iggy-view");
}

/* The signing key is generated once, kept owner-only, and survives a
 * restart together with the logged-out list. */
static void test_key_kept_across_restart(void **state)
{
    (void)state;
    char path[512];
    snprintf(path, sizeof(path), "%s/data/http_jwt_key", srv.data_dir);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);

    assert_true(th_http_login(&http, "iggy", "iggy"));
    char kept[2048], gone[2048];
    snprintf(kept, sizeof(kept), "%s", http.token);
    assert_true(th_http_login(&http, "iggy", "iggy"));
    snprintf(gone, sizeof(gone), "%s", http.token);
    assert_int_equal(th_http_delete(&http, "/users/logout"), 204);

    assert_int_equal(th_stop(&srv, SIGTERM), 0);
    th_options_t o = {.data_dir = srv.data_dir};
    assert_true(th_start(&srv, &o));
    http.port = srv.http_port;
    snprintf(http.token, sizeof(http.token), "%s", kept);
    assert_int_equal(th_http_get(&http, "/streams"), 200);
    snprintf(http.token, sizeof(http.token), "%s", gone);
    assert_int_equal(th_http_get(&http, "/streams"), 401);
}

/* Tokens expire as configured (http.jwt.access_token_expiry, no leeway
 * here); a configured secret replaces the kept key. */
static void test_expiry_and_configured_secret(void **state)
{
    (void)state;
    th_server_t short_lived;
    th_options_t o = {.extra_config = "[http]\naddress = \"127.0.0.1:0\"\n\n[http.jwt]\n"
                                      "access_token_expiry = \"1 s\"\nclock_skew = \"0 s\"\n"
                                      "encoding_secret = \"a configured secret\"\n"};
    assert_true(th_start(&short_lived, &o));
    th_http_t h;
    th_http_init(&h, short_lived.http_port);
    assert_true(th_http_login(&h, "iggy", "iggy"));
    int64_t expiry = th_json_int(h.last.json, "access_token.expiry");
    assert_int_equal(th_http_get(&h, "/streams"), 200);
    /* No key file when a secret is configured. */
    char path[512];
    snprintf(path, sizeof(path), "%s/data/http_jwt_key", short_lived.data_dir);
    struct stat st;
    assert_int_not_equal(stat(path, &st), 0);
    /* Past exp (whole seconds, no leeway): refused. */
    while ((int64_t)time(NULL) <= expiry + 1)
        usleep(200 * 1000);
    assert_int_equal(th_http_get(&h, "/streams"), 401);
    assert_int_equal(th_json_int(h.last.json, "id"), 40);
    th_http_free(&h);
    assert_int_equal(th_stop(&short_lived, SIGTERM), 0);
    th_cleanup(&short_lived);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ping),
        cmocka_unit_test(test_login_then_streams_through_the_loop),
        cmocka_unit_test(test_bearer_rules),
        cmocka_unit_test(test_login_failures),
        cmocka_unit_test(test_logout_revokes_the_token),
        cmocka_unit_test(test_refresh_issues_a_new_token),
        cmocka_unit_test(test_personal_access_token_bearer),
        cmocka_unit_test(test_framework_rejections),
        cmocka_unit_test(test_unknown_routes_and_methods),
        cmocka_unit_test(test_huge_body),
        cmocka_unit_test(test_cors),
        cmocka_unit_test(test_key_kept_across_restart),
        cmocka_unit_test(test_expiry_and_configured_secret),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
