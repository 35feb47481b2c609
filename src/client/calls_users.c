/* User and personal-access-token commands of the public API (commands.md 4
 * and 5): GetUser, GetUsers, CreateUser, DeleteUser, UpdateUser,
 * UpdatePermissions, ChangePassword, and the caller's own tokens. */
#include "client/client_internal.h"

#include "wire/command.h"

static sl_client_conv_t conv(sl_client_t *c)
{
    return (sl_client_conv_t){&c->arena, false};
}

/* --- reads ---------------------------------------------------------------------- */

int sl_client_get_user(sl_client_t *c, sl_id_t user, const sl_user_t **out)
{
    sl_get_user_request_t req;
    if (!sl_client_ident(user, &req.user_id))
        return -SL_ERR_INVALID_COMMAND;
    sl_client_call_begin(c);
    sl_span_t payload;
    int rc = sl_client_run(c, sl_get_user_request_encode(&c->tx, &req), SL_OP_NON_REPLICATED,
                           SL_CMD_GET_USER, &payload);
    sl_get_user_reply_t w;
    if (rc == 0)
        rc = sl_get_user_reply_decode(payload, &c->arena, &w);
    if (rc != 0)
        return rc;
    sl_client_conv_t cv = conv(c);
    sl_user_t *u = w.found ? SL_CONV_NEW(&cv, sl_user_t, 1) : NULL;
    if (u != NULL)
        sl_client_conv_user_details(&cv, &w.user, u);
    rc = sl_client_conv_end(&cv);
    if (rc == 0)
        *out = u;
    return rc;
}

int sl_client_get_users(sl_client_t *c, const sl_user_t **items, uint32_t *count)
{
    sl_client_call_begin(c);
    sl_span_t payload;
    int rc = sl_client_run(c, 0, SL_OP_NON_REPLICATED, SL_CMD_GET_USERS, &payload);
    sl_get_users_reply_t w;
    if (rc == 0)
        rc = sl_get_users_reply_decode(payload, &c->arena, &w);
    if (rc != 0)
        return rc;
    sl_client_conv_t cv = conv(c);
    sl_user_t *list = SL_CONV_NEW(&cv, sl_user_t, w.count);
    for (uint32_t i = 0; list != NULL && i < w.count; i++)
        sl_client_conv_user(&cv, &w.items[i], &list[i]);
    rc = sl_client_conv_end(&cv);
    if (rc == 0) {
        *items = list;
        *count = w.count;
    }
    return rc;
}

/* --- writes --------------------------------------------------------------------- */

/* The encoded set goes into perms (freed by the caller); an empty span when
 * permissions is NULL. */
static int encode_permissions(sl_client_t *c, const sl_permission_set_t *permissions,
                              sl_buf_t *perms)
{
    sl_buf_init(perms, c->frame_max);
    if (permissions == NULL)
        return 0;
    sl_client_conv_t cv = conv(c);
    return sl_client_permissions_encode(perms, &cv, permissions);
}

int sl_client_create_user(sl_client_t *c, const char *username, const char *password,
                          uint8_t status, const sl_permission_set_t *permissions,
                          const sl_user_t **out)
{
    if (username == NULL || password == NULL)
        return -SL_ERR_INVALID_COMMAND;
    sl_client_call_begin(c);
    sl_buf_t perms;
    int rc = encode_permissions(c, permissions, &perms);
    sl_create_user_request_t req = {
        .username = sl_span_str(username),
        .password = sl_span_str(password),
        .status = status,
        .has_permissions = permissions != NULL,
        .permissions = sl_buf_span(&perms),
    };
    if (rc == 0)
        rc = sl_create_user_request_encode(&c->tx, &req);
    sl_buf_free(&perms);
    sl_span_t payload;
    rc = sl_client_run(c, rc, SL_OP_CREATE_USER, SL_CMD_CREATE_USER, &payload);
    sl_create_user_reply_t w;
    if (rc == 0)
        rc = sl_create_user_reply_decode(payload, &c->arena, &w);
    if (rc != 0 || out == NULL)
        return rc;
    sl_client_conv_t cv = conv(c);
    sl_user_t *u = SL_CONV_NEW(&cv, sl_user_t, 1);
    if (u != NULL)
        sl_client_conv_user_details(&cv, &w.user, u);
    rc = sl_client_conv_end(&cv);
    if (rc == 0)
        *out = u;
    return rc;
}

int sl_client_delete_user(sl_client_t *c, sl_id_t user)
{
    sl_delete_user_request_t req;
    if (!sl_client_ident(user, &req.user_id))
        return -SL_ERR_INVALID_COMMAND;
    sl_client_call_begin(c);
    sl_span_t payload;
    int rc = sl_client_run(c, sl_delete_user_request_encode(&c->tx, &req), SL_OP_DELETE_USER,
                           SL_CMD_DELETE_USER, &payload);
    sl_delete_user_reply_t w;
    return rc != 0 ? rc : sl_delete_user_reply_decode(payload, &c->arena, &w);
}

int sl_client_update_user(sl_client_t *c, sl_id_t user, const char *new_username, uint8_t status)
{
    sl_update_user_request_t req = {
        .has_username = new_username != NULL,
        .username = sl_span_str(new_username),
        .has_status = status != 0,
        .status = status,
    };
    if (!sl_client_ident(user, &req.user_id))
        return -SL_ERR_INVALID_COMMAND;
    sl_client_call_begin(c);
    sl_span_t payload;
    int rc = sl_client_run(c, sl_update_user_request_encode(&c->tx, &req), SL_OP_UPDATE_USER,
                           SL_CMD_UPDATE_USER, &payload);
    sl_update_user_reply_t w;
    return rc != 0 ? rc : sl_update_user_reply_decode(payload, &c->arena, &w);
}

int sl_client_update_permissions(sl_client_t *c, sl_id_t user,
                                 const sl_permission_set_t *permissions)
{
    sl_update_permissions_request_t req = {.has_permissions = permissions != NULL};
    if (!sl_client_ident(user, &req.user_id))
        return -SL_ERR_INVALID_COMMAND;
    sl_client_call_begin(c);
    sl_buf_t perms;
    int rc = encode_permissions(c, permissions, &perms);
    req.permissions = sl_buf_span(&perms);
    if (rc == 0)
        rc = sl_update_permissions_request_encode(&c->tx, &req);
    sl_buf_free(&perms);
    sl_span_t payload;
    rc = sl_client_run(c, rc, SL_OP_UPDATE_PERMISSIONS, SL_CMD_UPDATE_PERMISSIONS, &payload);
    sl_update_permissions_reply_t w;
    return rc != 0 ? rc : sl_update_permissions_reply_decode(payload, &c->arena, &w);
}

int sl_client_change_password(sl_client_t *c, sl_id_t user, const char *current_password,
                              const char *new_password)
{
    if (current_password == NULL || new_password == NULL)
        return -SL_ERR_INVALID_COMMAND;
    sl_change_password_request_t req = {
        .current_password = sl_span_str(current_password),
        .new_password = sl_span_str(new_password),
    };
    if (!sl_client_ident(user, &req.user_id))
        return -SL_ERR_INVALID_COMMAND;
    sl_client_call_begin(c);
    sl_span_t payload;
    int rc = sl_client_run(c, sl_change_password_request_encode(&c->tx, &req),
                           SL_OP_CHANGE_PASSWORD, SL_CMD_CHANGE_PASSWORD, &payload);
    sl_change_password_reply_t w;
    return rc != 0 ? rc : sl_change_password_reply_decode(payload, &c->arena, &w);
}

/* --- personal access tokens ------------------------------------------------------ */

int sl_client_get_tokens(sl_client_t *c, const sl_token_t **items, uint32_t *count)
{
    sl_client_call_begin(c);
    sl_span_t payload;
    int rc = sl_client_run(c, 0, SL_OP_NON_REPLICATED, SL_CMD_GET_PERSONAL_ACCESS_TOKENS, &payload);
    sl_get_personal_access_tokens_reply_t w;
    if (rc == 0)
        rc = sl_get_personal_access_tokens_reply_decode(payload, &c->arena, &w);
    if (rc != 0)
        return rc;
    sl_client_conv_t cv = conv(c);
    sl_token_t *list = SL_CONV_NEW(&cv, sl_token_t, w.count);
    for (uint32_t i = 0; list != NULL && i < w.count; i++)
        list[i] = (sl_token_t){sl_client_conv_str(&cv, w.items[i].name), w.items[i].expiry_at};
    rc = sl_client_conv_end(&cv);
    if (rc == 0) {
        *items = list;
        *count = w.count;
    }
    return rc;
}

int sl_client_create_token(sl_client_t *c, const char *name, uint64_t expiry_us, const char **token)
{
    sl_client_call_begin(c);
    sl_create_personal_access_token_request_t req = {.name = sl_span_str(name),
                                                     .expiry_us = expiry_us};
    sl_span_t payload;
    int rc = sl_client_run(c, sl_create_personal_access_token_request_encode(&c->tx, &req),
                           SL_OP_CREATE_PERSONAL_ACCESS_TOKEN, SL_CMD_CREATE_PERSONAL_ACCESS_TOKEN,
                           &payload);
    sl_create_personal_access_token_reply_t w;
    if (rc == 0)
        rc = sl_create_personal_access_token_reply_decode(payload, &c->arena, &w);
    if (rc != 0)
        return rc;
    sl_client_conv_t cv = conv(c);
    const char *text = sl_client_conv_str(&cv, w.token);
    rc = sl_client_conv_end(&cv);
    if (rc == 0)
        *token = text;
    return rc;
}

int sl_client_delete_token(sl_client_t *c, const char *name)
{
    sl_client_call_begin(c);
    sl_delete_personal_access_token_request_t req = {.name = sl_span_str(name)};
    sl_span_t payload;
    int rc = sl_client_run(c, sl_delete_personal_access_token_request_encode(&c->tx, &req),
                           SL_OP_DELETE_PERSONAL_ACCESS_TOKEN, SL_CMD_DELETE_PERSONAL_ACCESS_TOKEN,
                           &payload);
    sl_delete_personal_access_token_reply_t w;
    return rc != 0 ? rc : sl_delete_personal_access_token_reply_decode(payload, &c->arena, &w);
}
