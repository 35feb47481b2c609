/* User, login and personal-access-token codecs (wire/cmd_users.h). */
#include "wire/cmd_users.h"

#include "wire/perms.h"
#include "wire/tlv.h"

/* An array of n elements from the arena; NULL for n == 0 (and on failure). */
#define NEW_ITEMS(arena, type, n) ((n) ? SL_ARENA_NEW((arena), type, (n)) : NULL)

/* --- permission sets ---------------------------------------------------------- */

/* True when raw is exactly one encoded set. */
static bool perms_exact(sl_span_t raw)
{
    sl_reader_t r = sl_reader(raw);
    sl_span_t set;
    return sl_permissions_parse(&r, &set) && sl_reader_done(&r);
}

/* [len u32][set of exactly len bytes]. */
static bool perms_with_len_decode(sl_reader_t *r, sl_span_t *out)
{
    uint32_t len;
    if (!sl_read_u32(r, &len) || !sl_read_span(r, len, out))
        return false;
    if (!perms_exact(*out)) {
        r->failed = true;
        return false;
    }
    return true;
}

static bool perms_with_len_encode(sl_buf_t *b, sl_span_t set)
{
    if (set.len > UINT32_MAX || !perms_exact(set))
        return false;
    sl_put_u32(b, (uint32_t)set.len);
    sl_put_span(b, set);
    return sl_buf_ok(b);
}

/* The options block running to the end of a request body: structure first
 * (status 3), then the empty user catalog (status 4041). */
static int user_options_check(sl_span_t block)
{
    uint32_t pairs;
    if (!sl_options_validate(block, &pairs))
        return -SL_ERR_INVALID_COMMAND;
    return pairs == 0 ? 0 : -SL_ERR_UNSUPPORTED_OPTION_KEY;
}

static bool options_encode(sl_buf_t *b, sl_span_t block)
{
    uint32_t pairs;
    if (!sl_options_validate(block, &pairs))
        return false;
    sl_put_span(b, block);
    return sl_buf_ok(b);
}

/* --- UserHeader / UserDetails ----------------------------------------------------- */

static bool user_header_decode(sl_reader_t *r, sl_user_header_t *h)
{
    sl_read_u32(r, &h->id);
    sl_read_u64(r, &h->created_at);
    sl_read_u8(r, &h->status);
    sl_name_decode(r, &h->username);
    sl_poptions_decode(r, &h->options);
    return sl_reader_ok(r);
}

static bool user_header_encode(sl_buf_t *b, const sl_user_header_t *h)
{
    sl_put_u32(b, h->id);
    sl_put_u64(b, h->created_at);
    sl_put_u8(b, h->status);
    uint32_t pairs;
    return sl_name_encode(b, h->username) && sl_options_validate(h->options, &pairs) &&
           sl_poptions_encode(b, h->options);
}

/* UserDetails filling the whole payload. */
static int user_details_decode(sl_span_t payload, sl_user_details_t *out)
{
    sl_reader_t r = sl_reader(payload);
    sl_user_details_t d = {0};
    uint8_t flag;
    if (!user_header_decode(&r, &d.header) || !sl_read_u8(&r, &flag))
        return -SL_ERR_INVALID_FORMAT;
    if (flag == 0) {
        /* The Rust client skips these without looking at them. */
        sl_read_take(&r, 3);
    } else {
        d.has_permissions = true;
        perms_with_len_decode(&r, &d.permissions);
    }
    int rc = sl_reply_decode_end(&r);
    if (rc == 0)
        *out = d;
    return rc;
}

static int user_details_encode(sl_buf_t *b, const sl_user_details_t *d)
{
    if (!user_header_encode(b, &d->header))
        return sl_encode_end(b, false);
    if (!d->has_permissions) {
        sl_put_zeros(b, 4);
        return sl_encode_end(b, true);
    }
    sl_put_u8(b, 1);
    return sl_encode_end(b, perms_with_len_encode(b, d->permissions));
}

/* --- requests naming one user ------------------------------------------------------ */

static int ident_request_decode(sl_span_t body, sl_ident_t *out)
{
    sl_reader_t r = sl_reader(body);
    sl_ident_decode(&r, out);
    return sl_request_decode_end(&r);
}

static int ident_request_encode(sl_buf_t *b, const sl_ident_t *id)
{
    return sl_encode_end(b, sl_ident_encode(b, id));
}

/* --- 31 GetUser / 32 GetUsers ------------------------------------------------------ */

int sl_get_user_request_decode(sl_span_t body, sl_get_user_request_t *out)
{
    return ident_request_decode(body, &out->user_id);
}

int sl_get_user_request_encode(sl_buf_t *b, const sl_get_user_request_t *in)
{
    return ident_request_encode(b, &in->user_id);
}

int sl_get_user_reply_decode(sl_span_t payload, sl_arena_t *arena, sl_get_user_reply_t *out)
{
    (void)arena;
    if (payload.len == 0) {
        *out = (sl_get_user_reply_t){.found = false};
        return 0;
    }
    int rc = user_details_decode(payload, &out->user);
    out->found = rc == 0;
    return rc;
}

int sl_get_user_reply_encode(sl_buf_t *b, const sl_get_user_reply_t *in)
{
    if (!in->found)
        return sl_encode_end(b, true);
    return user_details_encode(b, &in->user);
}

int sl_get_users_reply_decode(sl_span_t payload, sl_arena_t *arena, sl_get_users_reply_t *out)
{
    /* First pass validates and counts; the array then has the exact size. */
    sl_reader_t r = sl_reader(payload);
    uint32_t count = 0;
    while (sl_reader_left(&r) > 0) {
        sl_user_header_t h;
        if (!user_header_decode(&r, &h))
            return -SL_ERR_INVALID_FORMAT;
        count++;
    }
    sl_user_header_t *items = NEW_ITEMS(arena, sl_user_header_t, count);
    if (count && !items)
        return -SL_ERR_INVALID_FORMAT;
    r = sl_reader(payload);
    for (uint32_t i = 0; i < count; i++)
        user_header_decode(&r, &items[i]);
    sl_assert(sl_reader_done(&r));
    *out = (sl_get_users_reply_t){count, items};
    return 0;
}

int sl_get_users_reply_encode(sl_buf_t *b, const sl_get_users_reply_t *in)
{
    bool ok = true;
    for (uint32_t i = 0; ok && i < in->count; i++)
        ok = user_header_encode(b, &in->items[i]);
    return sl_encode_end(b, ok);
}

/* --- 33 CreateUser ------------------------------------------------------------------ */

int sl_create_user_request_decode(sl_span_t body, sl_create_user_request_t *out)
{
    sl_reader_t r = sl_reader(body);
    sl_create_user_request_t q = {0};
    uint8_t flag;
    sl_name_decode(&r, &q.username);
    sl_str8_decode(&r, &q.password);
    sl_read_u8(&r, &q.status);
    sl_read_u8(&r, &flag);
    q.has_permissions = flag == 1;
    if (q.has_permissions)
        perms_with_len_decode(&r, &q.permissions);
    if (!sl_reader_ok(&r))
        return -SL_ERR_INVALID_COMMAND;
    q.options = sl_read_rest(&r);
    int rc = user_options_check(q.options);
    if (rc == 0)
        *out = q;
    return rc;
}

int sl_create_user_request_encode(sl_buf_t *b, const sl_create_user_request_t *in)
{
    bool ok = sl_name_encode(b, in->username) && sl_str8_encode(b, in->password);
    sl_put_u8(b, in->status);
    sl_put_u8(b, in->has_permissions ? 1 : 0);
    if (ok && in->has_permissions)
        ok = perms_with_len_encode(b, in->permissions);
    ok = ok && options_encode(b, in->options);
    return sl_encode_end(b, ok);
}

int sl_create_user_reply_decode(sl_span_t payload, sl_arena_t *arena, sl_create_user_reply_t *out)
{
    (void)arena;
    return user_details_decode(payload, &out->user);
}

int sl_create_user_reply_encode(sl_buf_t *b, const sl_create_user_reply_t *in)
{
    return user_details_encode(b, &in->user);
}

/* --- 34 DeleteUser ------------------------------------------------------------------ */

int sl_delete_user_request_decode(sl_span_t body, sl_delete_user_request_t *out)
{
    return ident_request_decode(body, &out->user_id);
}

int sl_delete_user_request_encode(sl_buf_t *b, const sl_delete_user_request_t *in)
{
    return ident_request_encode(b, &in->user_id);
}

/* --- 35 UpdateUser ------------------------------------------------------------------ */

int sl_update_user_request_decode(sl_span_t body, sl_update_user_request_t *out)
{
    sl_reader_t r = sl_reader(body);
    sl_update_user_request_t q = {0};
    uint8_t flag;
    sl_ident_decode(&r, &q.user_id);
    sl_read_u8(&r, &flag);
    q.has_username = flag == 1;
    if (q.has_username)
        sl_name_decode(&r, &q.username);
    sl_read_u8(&r, &flag);
    q.has_status = flag == 1;
    if (q.has_status)
        sl_read_u8(&r, &q.status);
    if (!sl_reader_ok(&r))
        return -SL_ERR_INVALID_COMMAND;
    q.options = sl_read_rest(&r);
    int rc = user_options_check(q.options);
    if (rc == 0)
        *out = q;
    return rc;
}

int sl_update_user_request_encode(sl_buf_t *b, const sl_update_user_request_t *in)
{
    bool ok = sl_ident_encode(b, &in->user_id);
    sl_put_u8(b, in->has_username ? 1 : 0);
    if (ok && in->has_username)
        ok = sl_name_encode(b, in->username);
    sl_put_u8(b, in->has_status ? 1 : 0);
    if (in->has_status)
        sl_put_u8(b, in->status);
    ok = ok && options_encode(b, in->options);
    return sl_encode_end(b, ok);
}

/* --- 36 UpdatePermissions ------------------------------------------------------------ */

int sl_update_permissions_request_decode(sl_span_t body, sl_update_permissions_request_t *out)
{
    sl_reader_t r = sl_reader(body);
    sl_update_permissions_request_t q = {0};
    uint8_t flag;
    sl_ident_decode(&r, &q.user_id);
    sl_read_u8(&r, &flag);
    q.has_permissions = flag == 1;
    if (q.has_permissions)
        perms_with_len_decode(&r, &q.permissions);
    int rc = sl_request_decode_end(&r);
    if (rc == 0)
        *out = q;
    return rc;
}

int sl_update_permissions_request_encode(sl_buf_t *b, const sl_update_permissions_request_t *in)
{
    bool ok = sl_ident_encode(b, &in->user_id);
    sl_put_u8(b, in->has_permissions ? 1 : 0);
    if (ok && in->has_permissions)
        ok = perms_with_len_encode(b, in->permissions);
    return sl_encode_end(b, ok);
}

/* --- 37 ChangePassword --------------------------------------------------------------- */

int sl_change_password_request_decode(sl_span_t body, sl_change_password_request_t *out)
{
    sl_reader_t r = sl_reader(body);
    sl_change_password_request_t q = {0};
    sl_ident_decode(&r, &q.user_id);
    sl_str8_decode(&r, &q.current_password);
    sl_str8_decode(&r, &q.new_password);
    int rc = sl_request_decode_end(&r);
    if (rc == 0)
        *out = q;
    return rc;
}

int sl_change_password_request_encode(sl_buf_t *b, const sl_change_password_request_t *in)
{
    bool ok = sl_ident_encode(b, &in->user_id) && sl_str8_encode(b, in->current_password) &&
              sl_str8_encode(b, in->new_password);
    return sl_encode_end(b, ok);
}

/* --- 38 LoginUser (legacy) ------------------------------------------------------------ */

int sl_login_user_request_decode(sl_span_t body, sl_login_user_request_t *out)
{
    sl_reader_t r = sl_reader(body);
    sl_login_user_request_t q = {0};
    sl_name_decode(&r, &q.username);
    sl_str8_decode(&r, &q.password);
    sl_str32_decode(&r, &q.version);
    sl_str32_decode(&r, &q.context);
    int rc = sl_request_decode_end(&r);
    if (rc == 0)
        *out = q;
    return rc;
}

int sl_login_user_request_encode(sl_buf_t *b, const sl_login_user_request_t *in)
{
    bool ok = sl_name_encode(b, in->username) && sl_str8_encode(b, in->password) &&
              sl_str32_encode(b, in->version) && sl_str32_encode(b, in->context);
    return sl_encode_end(b, ok);
}

/* --- login bodies ------------------------------------------------------------------------ */

bool sl_login_version_decode(sl_span_t body, sl_client_version_t *out, sl_span_t *rest)
{
    sl_reader_t r = sl_reader(body);
    sl_client_version_t v = {0};
    sl_read_u32(&r, &v.protocol_version);
    sl_name_decode(&r, &v.sdk_name);
    sl_name_decode(&r, &v.sdk_version);
    if (!sl_reader_ok(&r))
        return false;
    *out = v;
    *rest = sl_read_rest(&r);
    return true;
}

static bool version_encode(sl_buf_t *b, const sl_client_version_t *v)
{
    sl_put_u32(b, v->protocol_version);
    return sl_name_encode(b, v->sdk_name) && sl_name_encode(b, v->sdk_version);
}

/* [context_len u32][context UTF-8, only when context_len > 0]. */
static bool context_decode(sl_reader_t *r, sl_span_t *out)
{
    return sl_str32_decode(r, out);
}

bool sl_login_password_decode(sl_span_t rest, sl_login_password_t *out)
{
    sl_reader_t r = sl_reader(rest);
    sl_login_password_t p = {0};
    sl_name_decode(&r, &p.username);
    sl_str8_decode(&r, &p.password);
    context_decode(&r, &p.context);
    if (!sl_reader_ok(&r))
        return false;
    *out = p;
    return true;
}

bool sl_login_token_decode(sl_span_t rest, sl_login_token_t *out)
{
    sl_reader_t r = sl_reader(rest);
    sl_login_token_t t = {0};
    sl_str8_decode(&r, &t.token);
    context_decode(&r, &t.context);
    if (!sl_reader_ok(&r))
        return false;
    *out = t;
    return true;
}

/* --- 40 LoginRegister / 45 LoginRegisterWithPat ------------------------------------------ */

int sl_login_register_request_decode(sl_span_t body, sl_login_register_request_t *out)
{
    sl_span_t rest;
    sl_login_register_request_t q;
    if (!sl_login_version_decode(body, &q.version, &rest) ||
        !sl_login_password_decode(rest, &q.login))
        return -SL_ERR_INVALID_COMMAND;
    *out = q;
    return 0;
}

int sl_login_register_request_encode(sl_buf_t *b, const sl_login_register_request_t *in)
{
    bool ok = version_encode(b, &in->version) && sl_name_encode(b, in->login.username) &&
              sl_str8_encode(b, in->login.password) && sl_str32_encode(b, in->login.context);
    return sl_encode_end(b, ok);
}

int sl_login_register_with_pat_request_decode(sl_span_t body,
                                              sl_login_register_with_pat_request_t *out)
{
    sl_span_t rest;
    sl_login_register_with_pat_request_t q;
    if (!sl_login_version_decode(body, &q.version, &rest) || !sl_login_token_decode(rest, &q.login))
        return -SL_ERR_INVALID_COMMAND;
    *out = q;
    return 0;
}

int sl_login_register_with_pat_request_encode(sl_buf_t *b,
                                              const sl_login_register_with_pat_request_t *in)
{
    bool ok = version_encode(b, &in->version) && sl_str8_encode(b, in->login.token) &&
              sl_str32_encode(b, in->login.context);
    return sl_encode_end(b, ok);
}

int sl_login_register_reply_decode(sl_span_t payload, sl_arena_t *arena,
                                   sl_login_register_reply_t *out)
{
    (void)arena;
    sl_reader_t r = sl_reader(payload);
    sl_login_register_reply_t p = {0};
    sl_read_u32(&r, &p.user_id);
    sl_read_u64(&r, &p.session);
    sl_read_u32(&r, &p.server_protocol_version);
    sl_name_decode(&r, &p.server_version);
    int rc = sl_reply_decode_end(&r);
    if (rc == 0)
        *out = p;
    return rc;
}

int sl_login_register_reply_encode(sl_buf_t *b, const sl_login_register_reply_t *in)
{
    sl_put_u32(b, in->user_id);
    sl_put_u64(b, in->session);
    sl_put_u32(b, in->server_protocol_version);
    return sl_encode_end(b, sl_name_encode(b, in->server_version));
}

int sl_login_register_with_pat_reply_decode(sl_span_t payload, sl_arena_t *arena,
                                            sl_login_register_with_pat_reply_t *out)
{
    return sl_login_register_reply_decode(payload, arena, out);
}

int sl_login_register_with_pat_reply_encode(sl_buf_t *b,
                                            const sl_login_register_with_pat_reply_t *in)
{
    return sl_login_register_reply_encode(b, in);
}

/* --- 41..44 personal access tokens --------------------------------------------------------- */

static bool token_info_decode(sl_reader_t *r, sl_token_info_t *t)
{
    sl_name_decode(r, &t->name);
    sl_read_u64(r, &t->expiry_at);
    return sl_reader_ok(r);
}

int sl_get_personal_access_tokens_reply_decode(sl_span_t payload, sl_arena_t *arena,
                                               sl_get_personal_access_tokens_reply_t *out)
{
    sl_reader_t r = sl_reader(payload);
    uint32_t count = 0;
    while (sl_reader_left(&r) > 0) {
        sl_token_info_t t;
        if (!token_info_decode(&r, &t))
            return -SL_ERR_INVALID_FORMAT;
        count++;
    }
    sl_token_info_t *items = NEW_ITEMS(arena, sl_token_info_t, count);
    if (count && !items)
        return -SL_ERR_INVALID_FORMAT;
    r = sl_reader(payload);
    for (uint32_t i = 0; i < count; i++)
        token_info_decode(&r, &items[i]);
    sl_assert(sl_reader_done(&r));
    *out = (sl_get_personal_access_tokens_reply_t){count, items};
    return 0;
}

int sl_get_personal_access_tokens_reply_encode(sl_buf_t *b,
                                               const sl_get_personal_access_tokens_reply_t *in)
{
    bool ok = true;
    for (uint32_t i = 0; ok && i < in->count; i++) {
        ok = sl_name_encode(b, in->items[i].name);
        sl_put_u64(b, in->items[i].expiry_at);
    }
    return sl_encode_end(b, ok);
}

int sl_create_personal_access_token_request_decode(sl_span_t body,
                                                   sl_create_personal_access_token_request_t *out)
{
    sl_reader_t r = sl_reader(body);
    sl_create_personal_access_token_request_t q = {0};
    sl_name_decode(&r, &q.name);
    sl_read_u64(&r, &q.expiry_us);
    int rc = sl_request_decode_end(&r);
    if (rc == 0)
        *out = q;
    return rc;
}

int sl_create_personal_access_token_request_encode(
    sl_buf_t *b, const sl_create_personal_access_token_request_t *in)
{
    bool ok = sl_name_encode(b, in->name);
    sl_put_u64(b, in->expiry_us);
    return sl_encode_end(b, ok);
}

int sl_create_personal_access_token_reply_decode(sl_span_t payload, sl_arena_t *arena,
                                                 sl_create_personal_access_token_reply_t *out)
{
    (void)arena;
    sl_reader_t r = sl_reader(payload);
    sl_span_t token;
    sl_name_decode(&r, &token);
    int rc = sl_reply_decode_end(&r);
    if (rc == 0)
        out->token = token;
    return rc;
}

int sl_create_personal_access_token_reply_encode(sl_buf_t *b,
                                                 const sl_create_personal_access_token_reply_t *in)
{
    return sl_encode_end(b, sl_name_encode(b, in->token));
}

/* DeletePersonalAccessToken and the legacy token login: one Name. */
static int name_request_decode(sl_span_t body, sl_span_t *out)
{
    sl_reader_t r = sl_reader(body);
    sl_span_t name;
    sl_name_decode(&r, &name);
    int rc = sl_request_decode_end(&r);
    if (rc == 0)
        *out = name;
    return rc;
}

int sl_delete_personal_access_token_request_decode(sl_span_t body,
                                                   sl_delete_personal_access_token_request_t *out)
{
    return name_request_decode(body, &out->name);
}

int sl_delete_personal_access_token_request_encode(
    sl_buf_t *b, const sl_delete_personal_access_token_request_t *in)
{
    return sl_encode_end(b, sl_name_encode(b, in->name));
}

int sl_login_with_personal_access_token_request_decode(
    sl_span_t body, sl_login_with_personal_access_token_request_t *out)
{
    return name_request_decode(body, &out->token);
}

int sl_login_with_personal_access_token_request_encode(
    sl_buf_t *b, const sl_login_with_personal_access_token_request_t *in)
{
    return sl_encode_end(b, sl_name_encode(b, in->token));
}
