/* Reads of users and personal access tokens (commands.md 31, 32, 41). */
#include "server/reads.h"
#include "wire/cmd_users.h"
#include "wire/command.h"

static void get_user(sl_read_t *c)
{
    sl_get_user_request_t q;
    int rc = sl_get_user_request_decode(c->body, &q);
    if (rc != 0)
        return sl_read_status(c, rc);
    const sl_meta_user_t *u = sl_meta_user_find(c->meta, &q.user_id);
    /* read_users, except for the caller's own account (permissions.md 2.3).
     * The check comes before the lookup answer so that an unprivileged
     * caller cannot probe which users exist. */
    if (!(u && u->id == c->s->user_id) && !sl_read_allowed(c, SL_PERM_READ_USERS, 0, 0))
        return;
    if (!u)
        return sl_read_ok(c);
    sl_get_user_reply_t r = {.found = true};
    sl_meta_user_details(u, &r.user);
    if (sl_get_user_reply_encode(c->out, &r) != 0)
        return sl_read_status(c, SL_ERR_ERROR);
    sl_read_ok(c);
}

static void get_users(sl_read_t *c)
{
    if (!sl_read_allowed(c, SL_PERM_READ_USERS, 0, 0))
        return;
    uint32_t n = 0;
    for (const sl_meta_user_t *u = sl_meta_user_next(c->meta, NULL); u;
         u = sl_meta_user_next(c->meta, u))
        n++;
    sl_user_header_t *items = n ? SL_ARENA_NEW(&c->s->arena, sl_user_header_t, n) : NULL;
    if (n && !items)
        return sl_read_status(c, SL_ERR_ERROR);
    uint32_t i = 0;
    for (const sl_meta_user_t *u = sl_meta_user_next(c->meta, NULL); u && i < n;
         u = sl_meta_user_next(c->meta, u))
        sl_meta_user_header(u, &items[i++]);
    sl_get_users_reply_t r = {.count = n, .items = items};
    if (sl_get_users_reply_encode(c->out, &r) != 0)
        return sl_read_status(c, SL_ERR_ERROR);
    sl_read_ok(c);
}

static void get_tokens(sl_read_t *c)
{
    const sl_meta_user_t *u = sl_meta_user_by_id(c->meta, c->s->user_id);
    uint32_t n = u ? u->tokens_count : 0;
    sl_token_info_t *items = n ? SL_ARENA_NEW(&c->s->arena, sl_token_info_t, n) : NULL;
    if (n && !items)
        return sl_read_status(c, SL_ERR_ERROR);
    /* Stored sorted by name, the order the reference's HTTP API uses. */
    for (uint32_t i = 0; i < n; i++)
        items[i] = (sl_token_info_t){u->tokens[i].name, u->tokens[i].expiry_at};
    sl_get_personal_access_tokens_reply_t r = {.count = n, .items = items};
    if (sl_get_personal_access_tokens_reply_encode(c->out, &r) != 0)
        return sl_read_status(c, SL_ERR_ERROR);
    sl_read_ok(c);
}

void sl_reads_users(sl_read_t *c)
{
    switch (c->req->code) {
    case SL_CMD_GET_USER:
        return get_user(c);
    case SL_CMD_GET_USERS:
        return get_users(c);
    default:
        return get_tokens(c);
    }
}
