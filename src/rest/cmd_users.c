/* Users and personal access tokens over HTTP (http.md 6.1, 6.2): JSON
 * bodies and permission sets into the binary requests of wire/cmd_users.h,
 * replies back into UserInfo, UserInfoDetails and token lists. */
#include <sluice/error.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rest/internal.h"
#include "wire/cmd_users.h"
#include "wire/header.h"
#include "wire/perms.h"

/* Grants read per request: a JSON permission set with more is refused. */
#define PERMS_STREAMS_MAX 1024u
#define PERMS_TOPICS_MAX  1024u
/* Token names over HTTP (http.md 6.2): the binary protocol takes 1..255. */
#define PAT_NAME_LEN_MIN 3u
#define PAT_NAME_LEN_MAX 30u

/* --- permissions: JSON <-> sl_permissions_t ------------------------------------------------ */

static const char *const global_keys[] = {
    "manage_servers", "read_servers",  "manage_users", "read_users",    "manage_streams",
    "read_streams",   "manage_topics", "read_topics",  "poll_messages", "send_messages"};
static const char *const stream_keys[] = {"manage_stream", "read_stream",   "manage_topics",
                                          "read_topics",   "poll_messages", "send_messages"};
static const char *const topic_keys[] = {"manage_topic", "read_topic", "poll_messages",
                                         "send_messages"};

static bool flags_read(json_object *o, const char *const *keys, size_t n, bool **dst,
                       sl_rest_error_t *err)
{
    for (size_t i = 0; i < n; i++)
        if (!sl_rest_json_bool(o, keys[i], true, dst[i], NULL, err))
            return false;
    return true;
}

static bool object_or_null(json_object *o, const char *key, json_object **out, sl_rest_error_t *err)
{
    *out = NULL;
    json_object *v = NULL;
    if (!json_object_object_get_ex(o, key, &v) || !v)
        return true;
    if (json_object_is_type(v, json_type_object)) {
        *out = v;
        return true;
    }
    sl_rest_error_plain(err, 422,
                        "Failed to deserialize the JSON body into the target type: "
                        "%s: invalid type, expected a map",
                        key);
    return false;
}

static bool map_key_id(const char *key, uint32_t *id, sl_rest_error_t *err)
{
    if (sl_rest_parse_u32(sl_span_str(key), id))
        return true;
    sl_rest_error_plain(err, 422,
                        "Failed to deserialize the JSON body into the target type: "
                        "invalid map key `%.40s`, expected u32",
                        key);
    return false;
}

static bool wrong_type(sl_rest_error_t *err)
{
    sl_rest_error_plain(err, 422,
                        "Failed to deserialize the JSON body into the target type: "
                        "permissions: invalid type");
    return false;
}

static bool topics_read(json_object *map, sl_stream_perms_t *s, sl_arena_t *arena,
                        sl_rest_error_t *err)
{
    size_t n = map ? (size_t)json_object_object_length(map) : 0;
    if (n > PERMS_TOPICS_MAX) {
        sl_rest_error_plain(err, 422, "too many topic grants");
        return false;
    }
    s->topics_count = (uint32_t)n;
    s->topics = n ? SL_ARENA_NEW(arena, sl_topic_perms_t, n) : NULL;
    if (n && !s->topics)
        return false;
    if (!map)
        return true; /* null or absent: no grants (the walk below needs a map) */
    size_t i = 0;
    json_object_object_foreach(map, key, value)
    {
        sl_topic_perms_t *t = &s->topics[i++];
        bool *dst[] = {&t->manage_topic, &t->read_topic, &t->poll_messages, &t->send_messages};
        if (!json_object_is_type(value, json_type_object))
            return wrong_type(err);
        if (!map_key_id(key, &t->topic_id, err) ||
            !flags_read(value, topic_keys, SL_ARRAY_LEN(topic_keys), dst, err))
            return false;
    }
    return true;
}

static bool streams_read(json_object *map, sl_permissions_t *p, sl_arena_t *arena,
                         sl_rest_error_t *err)
{
    size_t n = map ? (size_t)json_object_object_length(map) : 0;
    if (n > PERMS_STREAMS_MAX) {
        sl_rest_error_plain(err, 422, "too many stream grants");
        return false;
    }
    p->streams_count = (uint32_t)n;
    p->streams = n ? SL_ARENA_NEW(arena, sl_stream_perms_t, n) : NULL;
    if (n && !p->streams)
        return false;
    if (!map)
        return true; /* null or absent: no grants (the walk below needs a map) */
    size_t i = 0;
    json_object_object_foreach(map, key, value)
    {
        sl_stream_perms_t *s = &p->streams[i++];
        bool *dst[] = {&s->manage_stream, &s->read_stream,   &s->manage_topics,
                       &s->read_topics,   &s->poll_messages, &s->send_messages};
        json_object *topics = NULL;
        if (!json_object_is_type(value, json_type_object))
            return wrong_type(err);
        if (!map_key_id(key, &s->stream_id, err) ||
            !flags_read(value, stream_keys, SL_ARRAY_LEN(stream_keys), dst, err) ||
            !object_or_null(value, "topics", &topics, err) || !topics_read(topics, s, arena, err))
            return false;
    }
    return true;
}

/* A Permissions JSON object into its binary encoding appended to out. */
static bool permissions_read(json_object *o, sl_arena_t *arena, sl_buf_t *out, sl_rest_error_t *err)
{
    sl_permissions_t p = {0};
    json_object *global = NULL, *streams = NULL;
    bool *dst[] = {&p.manage_servers, &p.read_servers, &p.manage_users,  &p.read_users,
                   &p.manage_streams, &p.read_streams, &p.manage_topics, &p.read_topics,
                   &p.poll_messages,  &p.send_messages};
    if (!json_object_object_get_ex(o, "global", &global) ||
        !json_object_is_type(global, json_type_object)) {
        sl_rest_error_plain(err, 422,
                            "Failed to deserialize the JSON body into the target "
                            "type: permissions: missing field `global`");
        return false;
    }
    if (!flags_read(global, global_keys, SL_ARRAY_LEN(global_keys), dst, err) ||
        !object_or_null(o, "streams", &streams, err) || !streams_read(streams, &p, arena, err))
        return false;
    return sl_permissions_encode(out, &p);
}

static json_object *flags_json(const char *const *keys, size_t n, const bool *const *src)
{
    json_object *o = json_object_new_object();
    for (size_t i = 0; i < n; i++)
        json_object_object_add(o, keys[i], json_object_new_boolean(*src[i]));
    return o;
}

static json_object *stream_perms_json(const sl_stream_perms_t *s)
{
    const bool *src[] = {&s->manage_stream, &s->read_stream,   &s->manage_topics,
                         &s->read_topics,   &s->poll_messages, &s->send_messages};
    json_object *o = flags_json(stream_keys, SL_ARRAY_LEN(stream_keys), src);
    json_object *topics = s->topics_count ? json_object_new_object() : NULL;
    for (uint32_t k = 0; k < s->topics_count; k++) {
        const sl_topic_perms_t *t = &s->topics[k];
        const bool *tsrc[] = {&t->manage_topic, &t->read_topic, &t->poll_messages,
                              &t->send_messages};
        char key[16];
        snprintf(key, sizeof(key), "%u", t->topic_id);
        json_object_object_add(topics, key, flags_json(topic_keys, SL_ARRAY_LEN(topic_keys), tsrc));
    }
    json_object_object_add(o, "topics", topics);
    return o;
}

static json_object *permissions_json(sl_span_t raw, sl_arena_t *arena)
{
    sl_permissions_t p;
    if (!sl_permissions_unpack(raw, arena, &p))
        return NULL;
    const bool *src[] = {&p.manage_servers, &p.read_servers, &p.manage_users,  &p.read_users,
                         &p.manage_streams, &p.read_streams, &p.manage_topics, &p.read_topics,
                         &p.poll_messages,  &p.send_messages};
    json_object *o = json_object_new_object();
    json_object_object_add(o, "global", flags_json(global_keys, SL_ARRAY_LEN(global_keys), src));
    json_object *streams = p.streams_count ? json_object_new_object() : NULL;
    for (uint32_t i = 0; i < p.streams_count; i++) {
        char key[16];
        snprintf(key, sizeof(key), "%u", p.streams[i].stream_id);
        json_object_object_add(streams, key, stream_perms_json(&p.streams[i]));
    }
    json_object_object_add(o, "streams", streams);
    return o;
}

/* --- user shapes ------------------------------------------------------------------------------ */

static const char *status_name(uint8_t status)
{
    return status == SL_USER_INACTIVE ? "inactive" : "active";
}

static bool status_parse(sl_span_t s, uint8_t *out, sl_rest_error_t *err)
{
    if (s.len == 6 && memcmp(s.ptr, "active", 6) == 0)
        *out = SL_USER_ACTIVE;
    else if (s.len == 8 && memcmp(s.ptr, "inactive", 8) == 0)
        *out = SL_USER_INACTIVE;
    else {
        sl_rest_error_plain(err, 422,
                            "Failed to deserialize the JSON body into the target type: "
                            "status: unknown variant");
        return false;
    }
    return true;
}

static json_object *user_json(const sl_user_details_t *u, bool details, sl_arena_t *arena)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "id", sl_rest_json_uint(u->header.id));
    json_object_object_add(o, "created_at", sl_rest_json_uint(u->header.created_at));
    json_object_object_add(o, "status", json_object_new_string(status_name(u->header.status)));
    json_object_object_add(o, "username", sl_rest_json_string(u->header.username));
    if (details)
        json_object_object_add(o, "permissions",
                               u->has_permissions ? permissions_json(u->permissions, arena) : NULL);
    json_object_object_add(o, "options",
                           sl_rest_options_object(u->header.options, sl_span(NULL, 0)));
    return o;
}

static int user_cmp(const void *a, const void *b)
{
    uint32_t x = ((const sl_user_header_t *)a)->id, y = ((const sl_user_header_t *)b)->id;
    return (x > y) - (x < y);
}

static int build_empty(const sl_rest_request_t *req, sl_rest_call_t *call, sl_rest_error_t *err)
{
    (void)req, (void)call, (void)err;
    return 0;
}

static int render_users(const sl_rest_request_t *req, const sl_rest_call_t *call, sl_span_t payload,
                        sl_arena_t *arena, sl_rest_response_t *resp)
{
    (void)req, (void)call;
    sl_get_users_reply_t r;
    if (sl_get_users_reply_decode(payload, arena, &r) != 0)
        return -1;
    sl_user_header_t *items = (sl_user_header_t *)r.items;
    if (r.count)
        qsort(items, r.count, sizeof(*items), user_cmp);
    json_object *list = json_object_new_array();
    for (uint32_t i = 0; i < r.count; i++) {
        sl_user_details_t d = {.header = items[i]};
        json_object_array_add(list, user_json(&d, false, arena));
    }
    sl_rest_response_json(resp, 200, list);
    return 0;
}

/* {user_id} of the path; "me" on GET is the caller (http.md 1.1). */
static bool user_ident(const sl_rest_request_t *req, sl_ident_t *out, sl_rest_error_t *err)
{
    sl_span_t p = req->match->params[0];
    if (req->match->route == SL_ROUTE_USER && p.len == 2 && memcmp(p.ptr, "me", 2) == 0) {
        *out = sl_ident_number(req->caller_id);
        return true;
    }
    return sl_rest_path_ident(req, 0, out, err);
}

static int build_user_ref(const sl_rest_request_t *req, sl_rest_call_t *call, sl_rest_error_t *err)
{
    sl_get_user_request_t q;
    if (!user_ident(req, &q.user_id, err))
        return -1;
    return sl_get_user_request_encode(call->body, &q) == 0 ? 0 : -1;
}

static int render_user(const sl_rest_request_t *req, const sl_rest_call_t *call, sl_span_t payload,
                       sl_arena_t *arena, sl_rest_response_t *resp)
{
    (void)req, (void)call;
    sl_get_user_reply_t r;
    if (sl_get_user_reply_decode(payload, arena, &r) != 0)
        return -1;
    if (!r.found) {
        sl_rest_not_found(resp);
        return 0;
    }
    sl_rest_response_json(resp, 200, user_json(&r.user, true, arena));
    return 0;
}

static bool length_ok(sl_span_t s, size_t min, size_t max, uint32_t code, sl_rest_error_t *err)
{
    if (s.len >= min && s.len <= max)
        return true;
    sl_rest_error_from_code(code, err);
    return false;
}

/* The optional "permissions" of a body into one encoded set in buf. */
static bool body_permissions(json_object *o, sl_buf_t *buf, bool *has, sl_rest_error_t *err)
{
    json_object *p = NULL;
    *has = false;
    if (!object_or_null(o, "permissions", &p, err))
        return false;
    if (!p)
        return true;
    sl_arena_t arena;
    sl_arena_init(&arena, 4096, 16u << 20);
    bool ok = permissions_read(p, &arena, buf, err);
    sl_arena_free(&arena);
    *has = ok;
    return ok;
}

static int build_user_create(const sl_rest_request_t *req, sl_rest_call_t *call,
                             sl_rest_error_t *err)
{
    json_object *o = sl_rest_body_object(req, err);
    sl_create_user_request_t q = {0};
    sl_span_t status = {0};
    sl_buf_t perms;
    sl_buf_init(&perms, 0);
    bool ok = o && sl_rest_json_str(o, "username", true, &q.username, NULL, err) &&
              sl_rest_json_str(o, "password", true, &q.password, NULL, err) &&
              sl_rest_json_str(o, "status", true, &status, NULL, err) &&
              status_parse(status, &q.status, err) &&
              body_permissions(o, &perms, &q.has_permissions, err) &&
              length_ok(q.username, SL_USERNAME_LEN_MIN, SL_USERNAME_LEN_MAX,
                        SL_ERR_INVALID_USERNAME, err) &&
              length_ok(q.password, SL_PASSWORD_LEN_MIN, SL_PASSWORD_LEN_MAX,
                        SL_ERR_INVALID_PASSWORD, err);
    q.permissions = sl_buf_span(&perms);
    if (ok)
        ok = sl_create_user_request_encode(call->body, &q) == 0;
    sl_buf_free(&perms);
    json_object_put(o);
    return ok ? 0 : -1;
}

static int render_user_create(const sl_rest_request_t *req, const sl_rest_call_t *call,
                              sl_span_t payload, sl_arena_t *arena, sl_rest_response_t *resp)
{
    (void)req, (void)call;
    sl_create_user_reply_t r;
    if (sl_create_user_reply_decode(payload, arena, &r) != 0)
        return -1;
    sl_rest_response_json(resp, 200, user_json(&r.user, true, arena));
    return 0;
}

/* UpdateUser's "options": any key is refused by the server (4041). */
static bool user_options(json_object *o, sl_buf_t *block, sl_rest_error_t *err)
{
    json_object *map = NULL;
    if (!object_or_null(o, "options", &map, err))
        return false;
    if (map && json_object_object_length(map) > 0) {
        sl_rest_error_from_code(SL_ERR_UNSUPPORTED_OPTION_KEY, err);
        return false;
    }
    (void)block;
    return true;
}

static int build_user_update(const sl_rest_request_t *req, sl_rest_call_t *call,
                             sl_rest_error_t *err)
{
    json_object *o = sl_rest_body_object(req, err);
    sl_update_user_request_t q = {0};
    sl_span_t status = {0};
    bool has_status = false;
    bool ok = o && user_ident(req, &q.user_id, err) &&
              sl_rest_json_str(o, "username", false, &q.username, &q.has_username, err) &&
              sl_rest_json_str(o, "status", false, &status, &has_status, err) &&
              (!has_status || status_parse(status, &q.status, err)) && user_options(o, NULL, err) &&
              (!q.has_username || length_ok(q.username, SL_USERNAME_LEN_MIN, SL_USERNAME_LEN_MAX,
                                            SL_ERR_INVALID_USERNAME, err));
    q.has_status = has_status;
    if (ok)
        ok = sl_update_user_request_encode(call->body, &q) == 0;
    json_object_put(o);
    return ok ? 0 : -1;
}

static int build_user_password(const sl_rest_request_t *req, sl_rest_call_t *call,
                               sl_rest_error_t *err)
{
    json_object *o = sl_rest_body_object(req, err);
    sl_change_password_request_t q = {0};
    bool ok = o && user_ident(req, &q.user_id, err) &&
              sl_rest_json_str(o, "current_password", true, &q.current_password, NULL, err) &&
              sl_rest_json_str(o, "new_password", true, &q.new_password, NULL, err) &&
              length_ok(q.current_password, SL_PASSWORD_LEN_MIN, SL_PASSWORD_LEN_MAX,
                        SL_ERR_INVALID_PASSWORD, err) &&
              length_ok(q.new_password, SL_PASSWORD_LEN_MIN, SL_PASSWORD_LEN_MAX,
                        SL_ERR_INVALID_PASSWORD, err);
    if (ok)
        ok = sl_change_password_request_encode(call->body, &q) == 0;
    json_object_put(o);
    return ok ? 0 : -1;
}

static int build_user_permissions(const sl_rest_request_t *req, sl_rest_call_t *call,
                                  sl_rest_error_t *err)
{
    json_object *o = sl_rest_body_object(req, err);
    sl_update_permissions_request_t q = {0};
    sl_buf_t perms;
    sl_buf_init(&perms, 0);
    bool ok = o && user_ident(req, &q.user_id, err) &&
              body_permissions(o, &perms, &q.has_permissions, err);
    q.permissions = sl_buf_span(&perms);
    if (ok)
        ok = sl_update_permissions_request_encode(call->body, &q) == 0;
    sl_buf_free(&perms);
    json_object_put(o);
    return ok ? 0 : -1;
}

static int build_user_delete(const sl_rest_request_t *req, sl_rest_call_t *call,
                             sl_rest_error_t *err)
{
    sl_delete_user_request_t q;
    if (!user_ident(req, &q.user_id, err))
        return -1;
    return sl_delete_user_request_encode(call->body, &q) == 0 ? 0 : -1;
}

/* --- personal access tokens ---------------------------------------------------------------- */

static int token_cmp(const void *a, const void *b)
{
    const sl_span_t *x = &((const sl_token_info_t *)a)->name;
    const sl_span_t *y = &((const sl_token_info_t *)b)->name;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->ptr, y->ptr, n);
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

static int render_pats(const sl_rest_request_t *req, const sl_rest_call_t *call, sl_span_t payload,
                       sl_arena_t *arena, sl_rest_response_t *resp)
{
    (void)req, (void)call;
    sl_get_personal_access_tokens_reply_t r;
    if (sl_get_personal_access_tokens_reply_decode(payload, arena, &r) != 0)
        return -1;
    sl_token_info_t *items = (sl_token_info_t *)r.items;
    if (r.count)
        qsort(items, r.count, sizeof(*items), token_cmp);
    json_object *list = json_object_new_array();
    for (uint32_t i = 0; i < r.count; i++) {
        json_object *o = json_object_new_object();
        json_object_object_add(o, "name", sl_rest_json_string(items[i].name));
        json_object_object_add(o, "expiry_at",
                               items[i].expiry_at ? sl_rest_json_uint(items[i].expiry_at) : NULL);
        json_object_array_add(list, o);
    }
    sl_rest_response_json(resp, 200, list);
    return 0;
}

static int build_pat_create(const sl_rest_request_t *req, sl_rest_call_t *call,
                            sl_rest_error_t *err)
{
    json_object *o = sl_rest_body_object(req, err);
    sl_create_personal_access_token_request_t q = {0};
    bool ok = o && sl_rest_json_str(o, "name", true, &q.name, NULL, err) &&
              sl_rest_json_u64(o, "expiry", true, &q.expiry_us, NULL, err) &&
              length_ok(q.name, PAT_NAME_LEN_MIN, PAT_NAME_LEN_MAX,
                        SL_ERR_INVALID_PERSONAL_ACCESS_TOKEN_NAME, err);
    if (ok)
        ok = sl_create_personal_access_token_request_encode(call->body, &q) == 0;
    json_object_put(o);
    return ok ? 0 : -1;
}

static int render_pat_create(const sl_rest_request_t *req, const sl_rest_call_t *call,
                             sl_span_t payload, sl_arena_t *arena, sl_rest_response_t *resp)
{
    (void)req, (void)call;
    sl_create_personal_access_token_reply_t r;
    if (sl_create_personal_access_token_reply_decode(payload, arena, &r) != 0)
        return -1;
    json_object *o = json_object_new_object();
    json_object_object_add(o, "token", sl_rest_json_string(r.token));
    sl_rest_response_json(resp, 200, o);
    return 0;
}

static int build_pat_delete(const sl_rest_request_t *req, sl_rest_call_t *call,
                            sl_rest_error_t *err)
{
    sl_delete_personal_access_token_request_t q = {.name = req->match->params[0]};
    if (!length_ok(q.name, 1, 255, SL_ERR_RESOURCE_NOT_FOUND, err))
        return -1;
    return sl_delete_personal_access_token_request_encode(call->body, &q) == 0 ? 0 : -1;
}

/* clang-format off */
const sl_rest_handler_t sl_rest_user_handlers[] = {
    {SL_ROUTE_USERS,            SL_OP_NON_REPLICATED, 32, false, build_empty, render_users},
    {SL_ROUTE_USER,             SL_OP_NON_REPLICATED, 31, false, build_user_ref, render_user},
    {SL_ROUTE_USER_CREATE,      SL_OP_CREATE_USER, 0, true, build_user_create, render_user_create},
    {SL_ROUTE_USER_UPDATE,      SL_OP_UPDATE_USER, 0, true, build_user_update, sl_rest_render_no_content},
    {SL_ROUTE_USER_DELETE,      SL_OP_DELETE_USER, 0, false, build_user_delete, sl_rest_render_no_content},
    {SL_ROUTE_USER_PASSWORD,    SL_OP_CHANGE_PASSWORD, 0, true, build_user_password, sl_rest_render_no_content},
    {SL_ROUTE_USER_PERMISSIONS, SL_OP_UPDATE_PERMISSIONS, 0, true, build_user_permissions, sl_rest_render_no_content},
    {SL_ROUTE_PATS,             SL_OP_NON_REPLICATED, 41, false, build_empty, render_pats},
    {SL_ROUTE_PAT_CREATE,       SL_OP_CREATE_PERSONAL_ACCESS_TOKEN, 0, true, build_pat_create, render_pat_create},
    {SL_ROUTE_PAT_DELETE,       SL_OP_DELETE_PERSONAL_ACCESS_TOKEN, 0, false, build_pat_delete, sl_rest_render_no_content},
};
/* clang-format on */
const size_t sl_rest_user_handlers_count = SL_ARRAY_LEN(sl_rest_user_handlers);

/* --- the auth routes' bodies ---------------------------------------------------------------- */

int sl_rest_login_parse(sl_rest_route_t route, sl_span_t body, sl_buf_t *scratch,
                        sl_rest_login_t *out, sl_rest_error_t *err)
{
    *out = (sl_rest_login_t){0};
    json_object *o = sl_rest_json_object(body, err);
    if (!o)
        return -1;
    sl_span_t a = {0}, b = {0};
    bool ok = route == SL_ROUTE_LOGIN ? sl_rest_json_str(o, "username", true, &a, NULL, err) &&
                                            sl_rest_json_str(o, "password", true, &b, NULL, err)
                                      : sl_rest_json_str(o, "token", true, &a, NULL, err);
    /* The spans point into o: copy them out before it goes. */
    size_t at = scratch->len;
    sl_put_span(scratch, a);
    sl_put_span(scratch, b);
    json_object_put(o);
    if (!ok || !sl_buf_ok(scratch))
        return -1;
    sl_span_t first = sl_span(scratch->data + at, a.len);
    sl_span_t second = sl_span(scratch->data + at + a.len, b.len);
    if (route == SL_ROUTE_LOGIN) {
        out->username = first;
        out->password = second;
    } else {
        out->token = first;
    }
    return 0;
}

void sl_rest_identity(sl_rest_response_t *resp, uint32_t user_id, sl_span_t token,
                      uint64_t expiry_s)
{
    json_object *t = json_object_new_object();
    json_object_object_add(t, "token", sl_rest_json_string(token));
    json_object_object_add(t, "expiry", sl_rest_json_uint(expiry_s));
    json_object *o = json_object_new_object();
    json_object_object_add(o, "user_id", sl_rest_json_uint(user_id));
    json_object_object_add(o, "access_token", t);
    sl_rest_response_json(resp, 200, o);
}
