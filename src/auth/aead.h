/* At-rest encryption's cipher: AES-256-GCM, through Intel's multi-buffer
 * crypto library (intel-ipsec-mb: AES-NI, or VAES and VPCLMULQDQ with
 * AVX-512) where the build has it and the CPU has AES-NI, otherwise through
 * OpenSSL's EVP; both give the same bytes (a check at create compares them),
 * so data written by one opens with the other. A sealed blob is nonce(12) ‖ ciphertext ‖ tag(16),
 * so it is exactly SL_AEAD_OVERHEAD bytes longer than the plaintext. Every
 * seal takes a fresh nonce: each context starts from 96 random bits (4
 * fixed bytes and an 8-byte invocation field, OpenSSL's DRBG) and counts
 * the invocation field up by one per seal, so a context never repeats one
 * and two contexts (threads, restarts) collide only if their random starts
 * do (docs/security.md).
 *
 * A context holds the current key and, during a rotation, the previous one:
 * seals always use the current key; opens try the current key, then the
 * previous one (a GCM tag made under one key never verifies under another,
 * so trying both cannot yield wrong bytes).
 *
 * Threading: one owner thread per context (the cipher contexts and the
 * nonce pool are not shared); threads that need the keys create their own. */
#ifndef SL_AUTH_AEAD_H
#define SL_AUTH_AEAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/assert.h"
#include "base/bytes.h"

#define SL_AEAD_KEY_SIZE   32u
#define SL_AEAD_NONCE_SIZE 12u
#define SL_AEAD_TAG_SIZE   16u
#define SL_AEAD_OVERHEAD   (SL_AEAD_NONCE_SIZE + SL_AEAD_TAG_SIZE)

typedef struct sl_aead sl_aead_t;

/* Which implementation of AES-256-GCM a context uses. */
typedef enum sl_aead_engine {
    SL_AEAD_ENGINE_BEST = 0,     /* intel-ipsec-mb where it is usable, else OpenSSL */
    SL_AEAD_ENGINE_OPENSSL = 1,  /* OpenSSL's EVP */
    SL_AEAD_ENGINE_IPSEC_MB = 2, /* intel-ipsec-mb's direct GCM API */
} sl_aead_engine_t;

/* Which key opened a blob. */
typedef enum sl_aead_key_used {
    SL_AEAD_KEY_CURRENT = 1,
    SL_AEAD_KEY_PREVIOUS = 2,
} sl_aead_key_used_t;

/* Decodes a key setting: base64 (standard alphabet, padded) of exactly 32
 * bytes. false otherwise; key is then zeroed. */
bool sl_aead_key_decode(const char *text, uint8_t key[SL_AEAD_KEY_SIZE]) SL_WUR;

/* A context for key and, when previous is not NULL, the previous key. The
 * key bytes are copied into OpenSSL's key schedules; the caller may wipe
 * its copies. 0, or -SL_ERR_INVALID_ENCRYPTION_KEY when OpenSSL refuses the
 * cipher (no AES-256-GCM in this libcrypto), -SL_ERR_ERROR out of memory. */
int sl_aead_create(const uint8_t key[SL_AEAD_KEY_SIZE], const uint8_t *previous, sl_aead_t **out)
    SL_WUR;
/* The same with a chosen engine (tests, benchmarks): an engine this build
 * or CPU cannot run gives -SL_ERR_FEATURE_UNAVAILABLE. */
int sl_aead_create_engine(const uint8_t key[SL_AEAD_KEY_SIZE], const uint8_t *previous,
                          sl_aead_engine_t engine, sl_aead_t **out) SL_WUR;
void sl_aead_destroy(sl_aead_t *a);

/* Whether engine can run here (built in, and for intel-ipsec-mb a CPU with
 * AES-NI and a check that its bytes are OpenSSL's). */
bool sl_aead_engine_available(sl_aead_engine_t engine);
/* Whether this build has engine at all (the CPU aside). */
bool sl_aead_engine_built(sl_aead_engine_t engine);
/* The engine a context uses, and a name for the log ("intel-ipsec-mb,
 * AVX-512", "OpenSSL EVP"). */
sl_aead_engine_t sl_aead_engine(const sl_aead_t *a);
const char *sl_aead_engine_name(const sl_aead_t *a);

/* Seals len bytes of in into out (len + SL_AEAD_OVERHEAD bytes), binding
 * aad (authenticated, not stored). in and out must not overlap. 0 or
 * -SL_ERR_CANNOT_ENCRYPT_DATA. */
int sl_aead_seal(sl_aead_t *a, sl_span_t aad, const uint8_t *in, size_t len, uint8_t *out) SL_WUR;

/* Opens the sealed blob in (len >= SL_AEAD_OVERHEAD) with the same aad:
 * the len - SL_AEAD_OVERHEAD plaintext bytes go to in + SL_AEAD_NONCE_SIZE,
 * in place over the ciphertext (the blob is the caller's to overwrite).
 * *used (may be NULL) says which key verified. 0, or
 * -SL_ERR_CANNOT_DECRYPT_DATA when no key verifies the tag (wrong key,
 * tampered bytes, wrong aad, too short): the plaintext area is then zeroed
 * so no unverified byte can be served. */
int sl_aead_open(sl_aead_t *a, sl_span_t aad, uint8_t *in, size_t len, sl_aead_key_used_t *used)
    SL_WUR;
/* The same, but the len - SL_AEAD_OVERHEAD plaintext bytes go to out, which
 * must not overlap in; in is not changed. On failure out is zeroed. The
 * poll path's form: the plaintext lands in the reply, no copy after. */
int sl_aead_open_to(sl_aead_t *a, sl_span_t aad, const uint8_t *in, size_t len, uint8_t *out,
                    sl_aead_key_used_t *used) SL_WUR;

/* OpenSSL engine: whether opens set the nonce and tag in one OpenSSL
 * parameter call (the self-check at create passed) rather than an init and
 * a ctrl. true for the intel-ipsec-mb engine, which has no such calls. For
 * tests and the log. */
bool sl_aead_fast_open(const sl_aead_t *a);

#endif
