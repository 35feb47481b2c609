/* The admitted body forms the server journals where they differ from the
 * wire request (META brief, "Admitted bodies"): CreateUser (141) with the
 * password replaced by its PHC hash, ChangePassword (144) with the verdict of
 * the current-password check and the new hash, CreatePersonalAccessToken
 * (146) with the token's digest instead of the token, and Register (1).
 *
 * The server calls the encoders at admission, after hashing and drawing
 * randomness; sl_meta_apply calls the decoders. Decoded spans borrow the
 * body. Decoders are exact (no trailing bytes) except CreateUser, whose
 * options block runs to the end as on the wire.
 *
 * Every other metadata operation journals the wire body unchanged, after
 * the server decoded it (status 3 and the option/bounds statuses come from
 * the wire decoders); CreateTopic is journaled as operation 64,
 * CreatePartitions as 65 and DeleteSegments as 68; Logout has no body. */
#ifndef SL_META_ADMIT_H
#define SL_META_ADMIT_H

#include <stdbool.h>
#include <stdint.h>

#include "base/assert.h"
#include "base/bytes.h"
#include "wire/cmd_users.h"
#include "wire/prim.h"

/* A token digest: 64 lowercase hex characters (SHA-256 of the raw token). */
#define SL_META_TOKEN_DIGEST_LEN 64u

/* --- 141 CreateUser ----------------------------------------------------------- */

/* Appends the wire CreateUser body of req with its password field replaced by
 * phc_hash (1..255 bytes of ASCII). 0 or -SL_ERR_INVALID_COMMAND when a field
 * cannot be encoded. Decode the result with sl_create_user_request_decode:
 * its `password` is then the hash. */
int sl_meta_admit_create_user_encode(sl_buf_t *b, const sl_create_user_request_t *req,
                                     sl_span_t phc_hash) SL_WUR;

/* --- 144 ChangePassword ------------------------------------------------------- */

/* [user_id Identifier][verified u8 0/1][new_hash str8]. verified is false
 * when the current password did not match (or the target did not exist at
 * admission); apply then commits result 42 once the target resolves. */
typedef struct sl_meta_admit_change_password {
    sl_ident_t user_id;
    bool verified;
    sl_span_t new_hash; /* PHC string of the new password */
} sl_meta_admit_change_password_t;

int sl_meta_admit_change_password_encode(sl_buf_t *b,
                                         const sl_meta_admit_change_password_t *in) SL_WUR;
int sl_meta_admit_change_password_decode(sl_span_t body,
                                         sl_meta_admit_change_password_t *out) SL_WUR;

/* --- 146 CreatePersonalAccessToken -------------------------------------------- */

/* [name Name][expiry u64, the duration as the client sent it][digest str8]. */
typedef struct sl_meta_admit_create_pat {
    sl_span_t name;
    uint64_t expiry_us; /* 0 and UINT64_MAX: never expires */
    sl_span_t digest;   /* SL_META_TOKEN_DIGEST_LEN lowercase hex characters */
} sl_meta_admit_create_pat_t;

int sl_meta_admit_create_pat_encode(sl_buf_t *b, const sl_meta_admit_create_pat_t *in) SL_WUR;
int sl_meta_admit_create_pat_decode(sl_span_t body, sl_meta_admit_create_pat_t *out) SL_WUR;

/* True when digest is SL_META_TOKEN_DIGEST_LEN lowercase hex characters. */
bool sl_meta_digest_valid(sl_span_t digest);

/* --- 1 Register ---------------------------------------------------------------- */

/* [user_id u32][protocol_version u32][sdk_name Name][sdk_version Name]: the
 * user whose password or token was verified at admission and the client's
 * version prefix. */
typedef struct sl_meta_admit_register {
    uint32_t user_id;
    sl_client_version_t version;
} sl_meta_admit_register_t;

int sl_meta_admit_register_encode(sl_buf_t *b, const sl_meta_admit_register_t *in) SL_WUR;
int sl_meta_admit_register_decode(sl_span_t body, sl_meta_admit_register_t *out) SL_WUR;

#endif
