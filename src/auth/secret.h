/* Secrets: password hashing (Argon2id, PHC strings), personal access
 * tokens (random, shown once, stored as a SHA-256 hex digest), randomness
 * from getrandom. (Constant-time comparison is sl_ct_equal in base/bytes.h.)
 *
 * Everything here is called at admission, before an operation is journaled:
 * the journal carries hashes and digests, never plaintext, and the
 * metadata state machine stays free of randomness. */
#ifndef SL_AUTH_SECRET_H
#define SL_AUTH_SECRET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/assert.h"
#include "base/bytes.h"

/* Room for an Argon2id PHC string with our parameters, NUL included. */
#define SL_PASSWORD_HASH_MAX 128u
/* SHA-256 as 64 lowercase hex digits, NUL included. */
#define SL_TOKEN_DIGEST_LEN 65u
/* Base64 text of a raw token, NUL included. */
#define SL_TOKEN_TEXT_MAX 69u

/* Fills buf with n bytes from getrandom; 0 or -SL_ERR_ERROR. */
int sl_random_bytes(void *buf, size_t n) SL_WUR;

/* Hashes password with Argon2id and a fresh 16-byte salt into a PHC string
 * ("$argon2id$v=19$m=...,t=...,p=...$salt$hash"). 0 or -SL_ERR_ERROR. */
int sl_password_hash(sl_span_t password, char out[SL_PASSWORD_HASH_MAX]) SL_WUR;
/* True when password matches the PHC string. A NULL or malformed hash is
 * checked against a fixed dummy hash so the cost does not reveal whether a
 * user exists; the answer is then false. */
bool sl_password_verify(const char *phc, sl_span_t password);

/* A new raw token: base64 (standard alphabet, '=' padding) of 50 random
 * bytes, 68 characters, NUL-terminated. 0 or -SL_ERR_ERROR. */
int sl_token_generate(char out[SL_TOKEN_TEXT_MAX]) SL_WUR;
/* SHA-256 of the token text as lowercase hex, NUL-terminated. */
void sl_token_digest(sl_span_t token, char out[SL_TOKEN_DIGEST_LEN]);

/* A random password of printable, unambiguous characters for the root
 * user's first boot: len characters (20..40) and a NUL. */
int sl_password_generate(char *out, size_t len) SL_WUR;

#endif
