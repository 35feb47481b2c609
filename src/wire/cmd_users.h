/* Codecs of the user, login and personal-access-token commands
 * (shared/protocol/commands.md 2.4, 2.5, 4, 5; lifecycle.md 2-4). The
 * functions follow wire/codec.h; the login helpers below serve the server's
 * two-shape login parse (lifecycle.md 3.3).
 *
 * Decoded spans borrow the decoded buffer (request body or reply payload);
 * arrays in decoded replies live in the caller's arena. Permission sets are
 * carried as raw validated bytes (sl_permissions_parse); unpack them with
 * sl_permissions_unpack when the flags are needed. */
#ifndef SL_WIRE_CMD_USERS_H
#define SL_WIRE_CMD_USERS_H

#include <stdbool.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/bytes.h"
#include "wire/codec.h"
#include "wire/prim.h"

/* --- UserHeader / UserDetails (commands.md 2.4, 2.5) ---------------------------- */

typedef enum sl_user_status {
    SL_USER_ACTIVE = 1,
    SL_USER_INACTIVE = 2,
} sl_user_status_t;

typedef struct sl_user_header {
    uint32_t id;
    uint64_t created_at; /* µs; root: 1 */
    uint8_t status;      /* sl_user_status_t; a CreateUser reply echoes any byte */
    sl_span_t username;  /* Name */
    sl_span_t options;   /* options block without its u32 prefix; validated */
} sl_user_header_t;

typedef struct sl_user_details {
    sl_user_header_t header;
    bool has_permissions;
    sl_span_t permissions; /* one encoded set when has_permissions */
} sl_user_details_t;

/* --- 31 GetUser ------------------------------------------------------------ */

typedef struct sl_get_user_request {
    sl_ident_t user_id;
} sl_get_user_request_t;

int sl_get_user_request_decode(sl_span_t body, sl_get_user_request_t *out) SL_WUR;
int sl_get_user_request_encode(sl_buf_t *b, const sl_get_user_request_t *in) SL_WUR;

typedef struct sl_get_user_reply {
    bool found; /* false: empty payload */
    sl_user_details_t user;
} sl_get_user_reply_t;

/* The permissions tail: a first byte 0 is followed by 3 bytes that are
 * skipped (not checked); any other first byte by [len u32] and a set whose
 * encoded length is exactly len. */
int sl_get_user_reply_decode(sl_span_t payload, sl_arena_t *arena, sl_get_user_reply_t *out) SL_WUR;
int sl_get_user_reply_encode(sl_buf_t *b, const sl_get_user_reply_t *in) SL_WUR;

/* --- 32 GetUsers ----------------------------------------------------------- */

SL_EMPTY_REQUEST(get_users)

/* Concatenated UserHeaders, no count prefix, no permission tails. */
typedef struct sl_get_users_reply {
    uint32_t count;
    const sl_user_header_t *items;
} sl_get_users_reply_t;

int sl_get_users_reply_decode(sl_span_t payload, sl_arena_t *arena,
                              sl_get_users_reply_t *out) SL_WUR;
int sl_get_users_reply_encode(sl_buf_t *b, const sl_get_users_reply_t *in) SL_WUR;

/* --- 33 CreateUser --------------------------------------------------------- */

typedef struct sl_create_user_request {
    sl_span_t username; /* Name; 3..50 is checked at apply (result 43) */
    sl_span_t password; /* 0..255 bytes UTF-8 */
    uint8_t status;     /* stored as sent */
    bool has_permissions;
    sl_span_t permissions; /* one encoded set when has_permissions */
    sl_span_t options;     /* options block; decode only accepts it empty */
} sl_create_user_request_t;

/* -SL_ERR_INVALID_COMMAND when the body does not decode (bad Name or UTF-8,
 * truncation, a permissions length that differs from the set's encoded
 * length, a structurally bad options block); -SL_ERR_UNSUPPORTED_OPTION_KEY
 * for any option entry (the user catalog is empty). has_permissions is
 * true only for a flag byte of exactly 1. */
int sl_create_user_request_decode(sl_span_t body, sl_create_user_request_t *out) SL_WUR;
int sl_create_user_request_encode(sl_buf_t *b, const sl_create_user_request_t *in) SL_WUR;

/* Payload after the result section: UserDetails of the new user. */
typedef struct sl_create_user_reply {
    sl_user_details_t user;
} sl_create_user_reply_t;

int sl_create_user_reply_decode(sl_span_t payload, sl_arena_t *arena,
                                sl_create_user_reply_t *out) SL_WUR;
int sl_create_user_reply_encode(sl_buf_t *b, const sl_create_user_reply_t *in) SL_WUR;

/* --- 34 DeleteUser --------------------------------------------------------- */

typedef struct sl_delete_user_request {
    sl_ident_t user_id;
} sl_delete_user_request_t;

int sl_delete_user_request_decode(sl_span_t body, sl_delete_user_request_t *out) SL_WUR;
int sl_delete_user_request_encode(sl_buf_t *b, const sl_delete_user_request_t *in) SL_WUR;
SL_EMPTY_REPLY(delete_user)

/* --- 35 UpdateUser --------------------------------------------------------- */

typedef struct sl_update_user_request {
    sl_ident_t user_id;
    bool has_username; /* flag byte == 1 */
    sl_span_t username;
    bool has_status; /* flag byte == 1 */
    uint8_t status;  /* values other than 1/2 are ignored at apply */
    sl_span_t options;
} sl_update_user_request_t;

/* Errors as CreateUser: 3 for an undecodable body, 4041 for any option key. */
int sl_update_user_request_decode(sl_span_t body, sl_update_user_request_t *out) SL_WUR;
int sl_update_user_request_encode(sl_buf_t *b, const sl_update_user_request_t *in) SL_WUR;
SL_EMPTY_REPLY(update_user)

/* --- 36 UpdatePermissions -------------------------------------------------- */

typedef struct sl_update_permissions_request {
    sl_ident_t user_id;
    bool has_permissions;  /* false (any flag but 1): clear the user's set */
    sl_span_t permissions; /* one encoded set when has_permissions */
} sl_update_permissions_request_t;

/* -SL_ERR_INVALID_COMMAND when undecodable (the reference does not pre-check
 * this body; commands.md 12). Trailing bytes ignored. */
int sl_update_permissions_request_decode(sl_span_t body,
                                         sl_update_permissions_request_t *out) SL_WUR;
int sl_update_permissions_request_encode(sl_buf_t *b,
                                         const sl_update_permissions_request_t *in) SL_WUR;
SL_EMPTY_REPLY(update_permissions)

/* --- 37 ChangePassword ----------------------------------------------------- */

typedef struct sl_change_password_request {
    sl_ident_t user_id;
    sl_span_t current_password; /* 0..255 bytes UTF-8 */
    sl_span_t new_password;     /* 0..255 bytes UTF-8 */
} sl_change_password_request_t;

int sl_change_password_request_decode(sl_span_t body, sl_change_password_request_t *out) SL_WUR;
int sl_change_password_request_encode(sl_buf_t *b, const sl_change_password_request_t *in) SL_WUR;
SL_EMPTY_REPLY(change_password)

/* --- 38 LoginUser (legacy) ------------------------------------------------- */

/* Never served: the server evicts with reason 15 whatever the body, so there
 * is no reply payload. The body layout is kept for tools and tests. */
typedef struct sl_login_user_request {
    sl_span_t username; /* Name */
    sl_span_t password; /* str8 */
    sl_span_t version;  /* Str32; empty = none */
    sl_span_t context;  /* Str32; empty = none */
} sl_login_user_request_t;

int sl_login_user_request_decode(sl_span_t body, sl_login_user_request_t *out) SL_WUR;
int sl_login_user_request_encode(sl_buf_t *b, const sl_login_user_request_t *in) SL_WUR;
SL_EMPTY_REPLY(login_user)

/* --- 39 LogoutUser --------------------------------------------------------- */

SL_EMPTY_REQUEST(logout_user)
SL_EMPTY_REPLY(logout_user)

/* --- Login bodies (lifecycle.md 2, 3) ---------------------------------------- */

/* ClientVersionInfo: the prefix of both login bodies. */
typedef struct sl_client_version {
    uint32_t protocol_version; /* packed (wire/header.h) */
    sl_span_t sdk_name;        /* Name */
    sl_span_t sdk_version;     /* Name */
} sl_client_version_t;

/* The username/password shape after the prefix. */
typedef struct sl_login_password {
    sl_span_t username; /* Name: 1..255 on the wire */
    sl_span_t password; /* str8: 0..255 */
    sl_span_t context;  /* UTF-8; empty when context_len is 0 */
} sl_login_password_t;

/* The token shape after the prefix. */
typedef struct sl_login_token {
    sl_span_t token;   /* str8: 0..255 */
    sl_span_t context; /* UTF-8; empty when context_len is 0 */
} sl_login_token_t;

/* Step 1 of lifecycle.md 3.3: reads the version prefix and sets *rest to
 * the bytes after it. false: malformed login (eviction 15). */
bool sl_login_version_decode(sl_span_t body, sl_client_version_t *out, sl_span_t *rest) SL_WUR;
/* Steps 3 and 4: each shape over `rest` (bytes after the parsed fields are
 * ignored). false: the bytes do not have that shape. The server tries the
 * password shape first, then the token shape on the same bytes. */
bool sl_login_password_decode(sl_span_t rest, sl_login_password_t *out) SL_WUR;
bool sl_login_token_decode(sl_span_t rest, sl_login_token_t *out) SL_WUR;

/* --- 40 LoginRegister / 45 LoginRegisterWithPat ------------------------------ */

typedef struct sl_login_register_request {
    sl_client_version_t version;
    sl_login_password_t login;
} sl_login_register_request_t;

/* Decodes the prefix and the password shape; -SL_ERR_INVALID_COMMAND when
 * either fails. The server should use the helpers above instead, because a
 * Register frame does not say which shape it carries. */
int sl_login_register_request_decode(sl_span_t body, sl_login_register_request_t *out) SL_WUR;
int sl_login_register_request_encode(sl_buf_t *b, const sl_login_register_request_t *in) SL_WUR;

/* Payload after the result section (count = 0). */
typedef struct sl_login_register_reply {
    uint32_t user_id;
    uint64_t session; /* echo in every later request header */
    uint32_t server_protocol_version;
    sl_span_t server_version; /* Name */
} sl_login_register_reply_t;

int sl_login_register_reply_decode(sl_span_t payload, sl_arena_t *arena,
                                   sl_login_register_reply_t *out) SL_WUR;
int sl_login_register_reply_encode(sl_buf_t *b, const sl_login_register_reply_t *in) SL_WUR;

typedef struct sl_login_register_with_pat_request {
    sl_client_version_t version;
    sl_login_token_t login;
} sl_login_register_with_pat_request_t;

int sl_login_register_with_pat_request_decode(sl_span_t body,
                                              sl_login_register_with_pat_request_t *out) SL_WUR;
int sl_login_register_with_pat_request_encode(
    sl_buf_t *b, const sl_login_register_with_pat_request_t *in) SL_WUR;

typedef sl_login_register_reply_t sl_login_register_with_pat_reply_t;

int sl_login_register_with_pat_reply_decode(sl_span_t payload, sl_arena_t *arena,
                                            sl_login_register_with_pat_reply_t *out) SL_WUR;
int sl_login_register_with_pat_reply_encode(sl_buf_t *b,
                                            const sl_login_register_with_pat_reply_t *in) SL_WUR;

/* --- 41 GetPersonalAccessTokens ----------------------------------------------- */

SL_EMPTY_REQUEST(get_personal_access_tokens)

typedef struct sl_token_info {
    sl_span_t name;     /* Name */
    uint64_t expiry_at; /* µs since the epoch; 0 = never expires */
} sl_token_info_t;

/* Concatenated [name Name][expiry_at u64], no count prefix. */
typedef struct sl_get_personal_access_tokens_reply {
    uint32_t count;
    const sl_token_info_t *items;
} sl_get_personal_access_tokens_reply_t;

int sl_get_personal_access_tokens_reply_decode(sl_span_t payload, sl_arena_t *arena,
                                               sl_get_personal_access_tokens_reply_t *out) SL_WUR;
int sl_get_personal_access_tokens_reply_encode(
    sl_buf_t *b, const sl_get_personal_access_tokens_reply_t *in) SL_WUR;

/* --- 42 CreatePersonalAccessToken --------------------------------------------- */

typedef struct sl_create_personal_access_token_request {
    sl_span_t name;     /* Name */
    uint64_t expiry_us; /* duration; 0 and UINT64_MAX = never expires */
} sl_create_personal_access_token_request_t;

int sl_create_personal_access_token_request_decode(
    sl_span_t body, sl_create_personal_access_token_request_t *out) SL_WUR;
int sl_create_personal_access_token_request_encode(
    sl_buf_t *b, const sl_create_personal_access_token_request_t *in) SL_WUR;

/* Payload after the result section: the raw token, 1..255 bytes. */
typedef struct sl_create_personal_access_token_reply {
    sl_span_t token;
} sl_create_personal_access_token_reply_t;

int sl_create_personal_access_token_reply_decode(
    sl_span_t payload, sl_arena_t *arena, sl_create_personal_access_token_reply_t *out) SL_WUR;
int sl_create_personal_access_token_reply_encode(
    sl_buf_t *b, const sl_create_personal_access_token_reply_t *in) SL_WUR;

/* --- 43 DeletePersonalAccessToken --------------------------------------------- */

typedef struct sl_delete_personal_access_token_request {
    sl_span_t name; /* Name */
} sl_delete_personal_access_token_request_t;

int sl_delete_personal_access_token_request_decode(
    sl_span_t body, sl_delete_personal_access_token_request_t *out) SL_WUR;
int sl_delete_personal_access_token_request_encode(
    sl_buf_t *b, const sl_delete_personal_access_token_request_t *in) SL_WUR;
SL_EMPTY_REPLY(delete_personal_access_token)

/* --- 44 LoginWithPersonalAccessToken (legacy) ------------------------------- */

/* Never served (eviction 15), so no reply payload; body kept for tools. */
typedef struct sl_login_with_personal_access_token_request {
    sl_span_t token; /* Name */
} sl_login_with_personal_access_token_request_t;

int sl_login_with_personal_access_token_request_decode(
    sl_span_t body, sl_login_with_personal_access_token_request_t *out) SL_WUR;
int sl_login_with_personal_access_token_request_encode(
    sl_buf_t *b, const sl_login_with_personal_access_token_request_t *in) SL_WUR;
SL_EMPTY_REPLY(login_with_personal_access_token)

#endif
