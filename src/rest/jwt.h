/* The HTTP API's access tokens (http.md 2.3): compact JWS with an HMAC
 * (HS256, HS384 or HS512), the reference's claims (jti, iss, aud, sub, iat,
 * exp, nbf) and one of Sluice's own, `user_created_at`, so a token of a
 * deleted user never passes for a later user given the same id.
 *
 * Pure: the key, the clock and the random jti are the caller's. */
#ifndef SL_REST_JWT_H
#define SL_REST_JWT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/assert.h"
#include "base/bytes.h"

typedef enum sl_jwt_alg {
    SL_JWT_HS256 = 0,
    SL_JWT_HS384,
    SL_JWT_HS512,
} sl_jwt_alg_t;

/* "HS256" and the like (exact); false for anything else. */
bool sl_jwt_alg_parse(const char *text, sl_jwt_alg_t *out);
const char *sl_jwt_alg_name(sl_jwt_alg_t alg);

/* A UUIDv7 text: 36 characters and a NUL. */
#define SL_JWT_JTI_MAX 64u

typedef struct sl_jwt_claims {
    char jti[SL_JWT_JTI_MAX + 1];
    uint32_t user_id;         /* sub, a decimal string in the token */
    uint64_t user_created_at; /* 0: absent (then any user with that id matches) */
    uint64_t iat, exp, nbf;   /* Unix seconds */
} sl_jwt_claims_t;

typedef struct sl_jwt_params {
    sl_jwt_alg_t alg;
    sl_span_t key;
    const char *issuer;          /* written into iss */
    const char *audience;        /* written into aud */
    const char *valid_issuers;   /* comma-separated; a token's iss must be one */
    const char *valid_audiences; /* comma-separated; a token's aud must be one */
    uint64_t leeway_s;           /* clock skew allowed on exp and nbf */
} sl_jwt_params_t;

/* Writes the UUIDv7 of a millisecond timestamp and 10 random bytes. */
void sl_jwt_uuid7(uint64_t unix_ms, const uint8_t random[10], char out[37]);

/* Appends the signed token. 0 or -SL_ERR_ERROR (out of memory). */
int sl_jwt_encode(const sl_jwt_params_t *p, const sl_jwt_claims_t *c, sl_buf_t *out) SL_WUR;

/* Verifies signature, algorithm, iss, aud, exp and nbf at now_s and fills
 * out. 0, or -SL_ERR_UNAUTHENTICATED for any token that does not pass
 * (malformed, forged, expired, not yet valid, foreign issuer or audience). */
int sl_jwt_verify(const sl_jwt_params_t *p, sl_span_t token, uint64_t now_s,
                  sl_jwt_claims_t *out) SL_WUR;

/* True when item is one of the comma-separated entries of list (entries
 * trimmed of spaces). */
bool sl_jwt_list_has(const char *list, sl_span_t item);

#endif
