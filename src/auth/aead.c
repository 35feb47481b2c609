/* AES-256-GCM seal and open for at-rest encryption (auth/aead.h). */
#include "auth/aead.h"

#include <limits.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/rand.h>
#include <sluice/error.h>
#include <stdlib.h>
#include <string.h>

#include "base/base64.h"

/* Nonces (auth/aead.h): a per-context random 96-bit start whose low 64
 * bits OpenSSL's GCM counts up by one per seal (its "IV generation" for a
 * fixed field plus an invocation counter, SP 800-38D 8.2.1). Asking for the
 * next nonce also resets the GCM state, so a seal needs no re-init; and
 * OpenSSL refuses to encrypt again under a nonce whose message it finished. */
#define NONCE_FIXED 4u

typedef struct key_ctx {
    EVP_CIPHER_CTX *seal; /* NULL for the previous key: it never seals */
    EVP_CIPHER_CTX *open;
} key_ctx_t;

struct sl_aead {
    EVP_CIPHER *cipher; /* fetched once: EVP_aes_256_gcm() in an init is a provider lookup */
    bool fast_iv;       /* opens set nonce and tag in one parameter call (open_with) */
    key_ctx_t current;
    key_ctx_t previous;
    bool has_previous;
    bool primed;                           /* next_nonce is set in the seal context */
    uint8_t next_nonce[SL_AEAD_NONCE_SIZE]; /* the nonce the next seal uses */
};

bool sl_aead_key_decode(const char *text, uint8_t key[SL_AEAD_KEY_SIZE])
{
    uint8_t raw[96];
    sl_buf_t out;
    sl_buf_init_fixed(&out, raw, sizeof(raw));
    bool ok = strlen(text) <= 64 && sl_base64_decode(&out, sl_span_str(text), false) &&
              out.len == SL_AEAD_KEY_SIZE;
    memcpy(key, raw, SL_AEAD_KEY_SIZE);
    explicit_bzero(raw, sizeof(raw));
    if (!ok)
        explicit_bzero(key, SL_AEAD_KEY_SIZE);
    return ok;
}

/* A cipher context with the key schedule done once; each use only sets the
 * nonce. */
static EVP_CIPHER_CTX *cipher_new(const EVP_CIPHER *cipher, const uint8_t *key, int enc)
{
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    if (!c)
        return NULL;
    if (EVP_CipherInit_ex(c, cipher, NULL, NULL, NULL, enc) != 1 ||
        EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_IVLEN, SL_AEAD_NONCE_SIZE, NULL) != 1 ||
        EVP_CipherInit_ex(c, NULL, NULL, key, NULL, enc) != 1) {
        EVP_CIPHER_CTX_free(c);
        return NULL;
    }
    return c;
}

static void key_ctx_free(key_ctx_t *k)
{
    EVP_CIPHER_CTX_free(k->seal);
    EVP_CIPHER_CTX_free(k->open);
}

/* Primes the seal context's nonce counter: 4 random fixed bytes, and
 * OpenSSL draws the 8 bytes of the invocation field from its DRBG. */
static bool nonce_start(EVP_CIPHER_CTX *c)
{
    uint8_t fixed[NONCE_FIXED];
    bool ok = RAND_bytes(fixed, sizeof(fixed)) == 1 &&
              EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_IV_FIXED, NONCE_FIXED, fixed) == 1;
    explicit_bzero(fixed, sizeof(fixed));
    return ok;
}

/* Takes the next nonce into a->next_nonce and, in the same call, the tag of
 * the message just finished (tag NULL: none, at start or after a failure). */
static bool take_nonce(sl_aead_t *a, uint8_t *tag)
{
    OSSL_PARAM p[3], *q = p;
    if (tag)
        *q++ = OSSL_PARAM_construct_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG, tag,
                                                 SL_AEAD_TAG_SIZE);
    *q++ = OSSL_PARAM_construct_octet_string(OSSL_CIPHER_PARAM_AEAD_TLS1_GET_IV_GEN,
                                             a->next_nonce, SL_AEAD_NONCE_SIZE);
    *q = OSSL_PARAM_construct_end();
    a->primed = EVP_CIPHER_CTX_get_params(a->current.seal, p) == 1;
    return a->primed;
}

/* EVP counts in int; longer spans go through in int-sized steps. */
static bool cipher_update(EVP_CIPHER_CTX *c, uint8_t *out, const uint8_t *in, size_t len)
{
    while (len > 0) {
        int step = len > (size_t)INT_MAX / 2 ? INT_MAX / 2 : (int)len, n = 0;
        if (EVP_CipherUpdate(c, out, &n, in, step) != 1 || n != step)
            return false;
        out += step;
        in += step;
        len -= (size_t)step;
    }
    return true;
}

static bool add_aad(EVP_CIPHER_CTX *c, sl_span_t aad)
{
    int n = 0;
    return aad.len == 0 || (aad.len <= INT_MAX / 2 &&
                            EVP_CipherUpdate(c, NULL, &n, aad.ptr, (int)aad.len) == 1);
}

/* Starts opening a message under nonce with the expected tag. The usual way
 * is EVP_CipherInit_ex with the nonce, then the tag through a ctrl; each of
 * those goes through OpenSSL 3's parameter lookups, and the init also asks
 * the provider for the IV length, together about 750 instructions of a 1 KiB
 * open's 5500 (docs/benchmarks.md). fast: one EVP_CIPHER_CTX_set_params
 * instead, with the tag and the whole nonce as the GCM "fixed IV" (the
 * length (size_t)-1 means the whole IV, as EVP_CTRL_GCM_SET_IV_FIXED's -1
 * does), which OpenSSL applies, and resets the GCM state with, at the next
 * update. sl_aead_create uses it only when a self-check opens a message
 * sealed the usual way through it. */
static bool open_start(EVP_CIPHER_CTX *c, bool fast, const uint8_t *nonce, const uint8_t *tag)
{
    if (fast) {
        OSSL_PARAM p[3] = {
            OSSL_PARAM_construct_octet_string(OSSL_CIPHER_PARAM_AEAD_TLS1_IV_FIXED,
                                              (void *)nonce, (size_t)-1),
            OSSL_PARAM_construct_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG, (void *)tag,
                                              SL_AEAD_TAG_SIZE),
            OSSL_PARAM_construct_end(),
        };
        return EVP_CIPHER_CTX_set_params(c, p) == 1;
    }
    return EVP_CipherInit_ex(c, NULL, NULL, NULL, nonce, 0) == 1 &&
           EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, SL_AEAD_TAG_SIZE, (void *)tag) == 1;
}

/* Runs one key over the blob (nonce ‖ body ‖ tag, len bytes), the
 * plaintext to out (body_len bytes; out is either the body itself or does
 * not overlap the blob). True when the tag verified (verify) or the
 * keystream ran (!verify). */
static bool open_with(EVP_CIPHER_CTX *c, bool fast, sl_span_t aad, const uint8_t *blob,
                      size_t len, uint8_t *out, bool verify)
{
    const uint8_t *nonce = blob, *body = blob + SL_AEAD_NONCE_SIZE;
    size_t body_len = len - SL_AEAD_OVERHEAD;
    uint8_t tag[SL_AEAD_TAG_SIZE];
    memcpy(tag, body + body_len, SL_AEAD_TAG_SIZE); /* out may be the body: read it first */
    int n = 0;
    uint8_t last[16];
    if (!open_start(c, fast, nonce, tag) || !add_aad(c, aad) ||
        !cipher_update(c, out, body, body_len))
        return false;
    return !verify || EVP_CipherFinal_ex(c, last, &n) == 1;
}

/* Whether the fast open_start works with this libcrypto: a message sealed
 * the usual way opens through it, and the same message with a changed tag
 * does not. */
static bool fast_open_works(sl_aead_t *a, const uint8_t key[SL_AEAD_KEY_SIZE])
{
    static const uint8_t nonce[SL_AEAD_NONCE_SIZE] = "sluice check";
    static const uint8_t plain[32] = "the fast open must give this...";
    uint8_t blob[SL_AEAD_NONCE_SIZE + sizeof(plain) + SL_AEAD_TAG_SIZE], out[sizeof(plain)];
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    int n = 0;
    bool sealed = c && EVP_EncryptInit_ex(c, a->cipher, NULL, NULL, NULL) == 1 &&
                  EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_IVLEN, SL_AEAD_NONCE_SIZE, NULL) == 1 &&
                  EVP_EncryptInit_ex(c, NULL, NULL, key, nonce) == 1 &&
                  EVP_EncryptUpdate(c, NULL, &n, (const uint8_t *)"x", 1) == 1 &&
                  EVP_EncryptUpdate(c, blob + SL_AEAD_NONCE_SIZE, &n, plain, sizeof(plain)) == 1 &&
                  EVP_EncryptFinal_ex(c, out, &n) == 1 &&
                  EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, SL_AEAD_TAG_SIZE,
                                      blob + SL_AEAD_NONCE_SIZE + sizeof(plain)) == 1;
    EVP_CIPHER_CTX_free(c);
    memcpy(blob, nonce, SL_AEAD_NONCE_SIZE);
    bool opens = sealed &&
                 open_with(a->current.open, true, sl_span_str("x"), blob, sizeof(blob), out, true);
    opens = opens && memcmp(out, plain, sizeof(plain)) == 0;
    blob[sizeof(blob) - 1] ^= 1;
    bool refuses =
        sealed && !open_with(a->current.open, true, sl_span_str("x"), blob, sizeof(blob), out, true);
    return opens && refuses;
}

int sl_aead_create(const uint8_t key[SL_AEAD_KEY_SIZE], const uint8_t *previous, sl_aead_t **out)
{
    *out = NULL;
    sl_aead_t *a = calloc(1, sizeof(*a));
    if (!a)
        return -SL_ERR_ERROR;
    a->cipher = EVP_CIPHER_fetch(NULL, "AES-256-GCM", NULL);
    bool ok = a->cipher != NULL;
    a->current.seal = ok ? cipher_new(a->cipher, key, 1) : NULL;
    a->current.open = ok ? cipher_new(a->cipher, key, 0) : NULL;
    ok = ok && a->current.seal && a->current.open;
    if (previous) {
        a->has_previous = true;
        a->previous.open = ok ? cipher_new(a->cipher, previous, 0) : NULL;
        ok = ok && a->previous.open;
    }
    if (!ok || !nonce_start(a->current.seal) || !take_nonce(a, NULL)) {
        sl_aead_destroy(a);
        return -SL_ERR_INVALID_ENCRYPTION_KEY;
    }
    a->fast_iv = fast_open_works(a, key);
    *out = a;
    return 0;
}

void sl_aead_destroy(sl_aead_t *a)
{
    if (!a)
        return;
    key_ctx_free(&a->current);
    key_ctx_free(&a->previous);
    EVP_CIPHER_free(a->cipher);
    explicit_bzero(a, sizeof(*a));
    free(a);
}

bool sl_aead_fast_open(const sl_aead_t *a)
{
    return a->fast_iv;
}

int sl_aead_seal(sl_aead_t *a, sl_span_t aad, const uint8_t *in, size_t len, uint8_t *out)
{
    EVP_CIPHER_CTX *c = a->current.seal;
    uint8_t *body = out + SL_AEAD_NONCE_SIZE, *tag = body + len;
    int n = 0;
    /* Not primed: the last seal failed part way; a new nonce resets it. */
    if (!a->primed && !take_nonce(a, NULL))
        return -SL_ERR_CANNOT_ENCRYPT_DATA;
    memcpy(out, a->next_nonce, SL_AEAD_NONCE_SIZE);
    a->primed = false; /* this nonce is spent whatever happens next */
    if (!add_aad(c, aad) || !cipher_update(c, body, in, len) ||
        EVP_CipherFinal_ex(c, body + len, &n) != 1 || !take_nonce(a, tag))
        return -SL_ERR_CANNOT_ENCRYPT_DATA;
    return 0;
}

int sl_aead_open(sl_aead_t *a, sl_span_t aad, uint8_t *in, size_t len, sl_aead_key_used_t *used)
{
    if (len < SL_AEAD_OVERHEAD)
        return -SL_ERR_CANNOT_DECRYPT_DATA;
    uint8_t *body = in + SL_AEAD_NONCE_SIZE;
    if (open_with(a->current.open, a->fast_iv, aad, in, len, body, true)) {
        if (used)
            *used = SL_AEAD_KEY_CURRENT;
        return 0;
    }
    if (a->has_previous) {
        /* GCM's body is CTR mode: running the current key's keystream over
         * the buffer again gives the ciphertext back, so the previous key
         * sees the stored bytes without a copy being kept for a rare case. */
        bool restored = open_with(a->current.open, a->fast_iv, aad, in, len, body, false);
        if (restored && open_with(a->previous.open, a->fast_iv, aad, in, len, body, true)) {
            if (used)
                *used = SL_AEAD_KEY_PREVIOUS;
            return 0;
        }
    }
    memset(body, 0, len - SL_AEAD_OVERHEAD);
    return -SL_ERR_CANNOT_DECRYPT_DATA;
}

int sl_aead_open_to(sl_aead_t *a, sl_span_t aad, const uint8_t *in, size_t len, uint8_t *out,
                    sl_aead_key_used_t *used)
{
    if (len < SL_AEAD_OVERHEAD)
        return -SL_ERR_CANNOT_DECRYPT_DATA;
    /* in is left as it was, so the previous key reads it again as stored. */
    if (open_with(a->current.open, a->fast_iv, aad, in, len, out, true)) {
        if (used)
            *used = SL_AEAD_KEY_CURRENT;
        return 0;
    }
    if (a->has_previous && open_with(a->previous.open, a->fast_iv, aad, in, len, out, true)) {
        if (used)
            *used = SL_AEAD_KEY_PREVIOUS;
        return 0;
    }
    memset(out, 0, len - SL_AEAD_OVERHEAD);
    return -SL_ERR_CANNOT_DECRYPT_DATA;
}
