/* AES-256-GCM seal and open for at-rest encryption (auth/aead.h). */
#include "auth/aead.h"

#include <limits.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/rand.h>
#include <sluice/error.h>
#include <stdlib.h>
#include <string.h>
#ifdef SL_HAVE_IPSEC_MB
#include <intel-ipsec-mb.h>
#include <pthread.h>
#endif

#include "base/base64.h"

/* Nonces (auth/aead.h): a per-context random 96-bit start whose low 64
 * bits count up by one per seal (a fixed field plus an invocation counter,
 * SP 800-38D 8.2.1). The OpenSSL engine has OpenSSL's GCM "IV generation"
 * count them: asking for the next nonce also resets the GCM state, so a
 * seal needs no re-init, and OpenSSL refuses to encrypt again under a nonce
 * whose message it finished. The intel-ipsec-mb engine counts them itself
 * (nonce_next); its GCM calls take the nonce with each message. */
#define NONCE_FIXED 4u

typedef struct key_ctx {
    EVP_CIPHER_CTX *seal; /* NULL for the previous key: it never seals */
    EVP_CIPHER_CTX *open;
} key_ctx_t;

#ifdef SL_HAVE_IPSEC_MB
/* The intel-ipsec-mb engine: the key schedules and GHASH tables of the
 * current and the previous key (a library-sized struct, 64-byte aligned),
 * and one process-wide manager whose only use here is its table of the
 * GCM functions the CPU runs best (init_mb_mgr_auto, read-only after). */
typedef struct imb_keys {
    struct gcm_key_data *current;
    struct gcm_key_data *previous; /* NULL without a previous key */
} imb_keys_t;
#endif

struct sl_aead {
    sl_aead_engine_t engine;
#ifdef SL_HAVE_IPSEC_MB
    imb_keys_t imb;
#endif
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

/* Seals plain (len bytes) under key and nonce the usual EVP way, one shot:
 * the ciphertext to body, the tag to tag. The reference the checks at
 * create compare against. */
static bool evp_seal_once(const EVP_CIPHER *cipher, const uint8_t key[SL_AEAD_KEY_SIZE],
                          const uint8_t nonce[SL_AEAD_NONCE_SIZE], sl_span_t aad,
                          const uint8_t *plain, size_t len, uint8_t *body, uint8_t *tag)
{
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    uint8_t last[16];
    int n = 0;
    bool ok = c && EVP_EncryptInit_ex(c, cipher, NULL, NULL, NULL) == 1 &&
              EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_IVLEN, SL_AEAD_NONCE_SIZE, NULL) == 1 &&
              EVP_EncryptInit_ex(c, NULL, NULL, key, nonce) == 1 && add_aad(c, aad) &&
              cipher_update(c, body, plain, len) && EVP_EncryptFinal_ex(c, last, &n) == 1 &&
              EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, SL_AEAD_TAG_SIZE, tag) == 1;
    EVP_CIPHER_CTX_free(c);
    return ok;
}

/* Whether the fast open_start works with this libcrypto: a message sealed
 * the usual way opens through it, and the same message with a changed tag
 * does not. */
static bool fast_open_works(sl_aead_t *a, const uint8_t key[SL_AEAD_KEY_SIZE])
{
    static const uint8_t nonce[SL_AEAD_NONCE_SIZE] = "sluice check";
    static const uint8_t plain[32] = "the fast open must give this...";
    uint8_t blob[SL_AEAD_NONCE_SIZE + sizeof(plain) + SL_AEAD_TAG_SIZE], out[sizeof(plain)];
    memcpy(blob, nonce, SL_AEAD_NONCE_SIZE);
    bool sealed = evp_seal_once(a->cipher, key, nonce, sl_span_str("x"), plain, sizeof(plain),
                                blob + SL_AEAD_NONCE_SIZE,
                                blob + SL_AEAD_NONCE_SIZE + sizeof(plain));
    bool opens = sealed &&
                 open_with(a->current.open, true, sl_span_str("x"), blob, sizeof(blob), out, true);
    opens = opens && memcmp(out, plain, sizeof(plain)) == 0;
    blob[sizeof(blob) - 1] ^= 1;
    bool refuses =
        sealed && !open_with(a->current.open, true, sl_span_str("x"), blob, sizeof(blob), out, true);
    return opens && refuses;
}

#ifdef SL_HAVE_IPSEC_MB
/* Counts the nonce's 8-byte invocation field (bytes 4..11, big-endian) up
 * by one; the 4 fixed bytes stay. The intel-ipsec-mb engine's form of what
 * OpenSSL's IV generation does for the other (file comment). */
static void nonce_next(uint8_t nonce[SL_AEAD_NONCE_SIZE])
{
    for (size_t i = SL_AEAD_NONCE_SIZE; i-- > NONCE_FIXED;)
        if (++nonce[i] != 0)
            return;
}

static pthread_once_t imb_once = PTHREAD_ONCE_INIT;
static IMB_MGR *imb_mgr; /* NULL: intel-ipsec-mb is not used in this process */
static const char *imb_name = "intel-ipsec-mb";

/* intel-ipsec-mb refuses NULL buffers even for zero lengths (and then
 * writes nothing): empty spans point here instead. */
static uint8_t imb_empty[16];

static uint8_t *imb_buf(uint8_t *p)
{
    return p ? p : imb_empty;
}

static const uint8_t *imb_cbuf(const uint8_t *p)
{
    return p ? p : imb_empty;
}

static struct gcm_key_data *imb_key_new(const uint8_t key[SL_AEAD_KEY_SIZE])
{
    void *p = NULL;
    if (posix_memalign(&p, 64, sizeof(struct gcm_key_data)) != 0)
        return NULL;
    IMB_AES256_GCM_PRE(imb_mgr, key, (struct gcm_key_data *)p);
    return p;
}

static void imb_key_free(struct gcm_key_data *k)
{
    if (!k)
        return;
    explicit_bzero(k, sizeof(*k));
    free(k);
}

static void imb_seal(const struct gcm_key_data *k, const uint8_t nonce[SL_AEAD_NONCE_SIZE],
                     sl_span_t aad, const uint8_t *in, size_t len, uint8_t *body, uint8_t *tag)
{
    struct gcm_context_data ctx;
    IMB_AES256_GCM_ENC(imb_mgr, k, &ctx, body, imb_cbuf(in), len, nonce, imb_cbuf(aad.ptr),
                       aad.len, tag, SL_AEAD_TAG_SIZE);
}

/* Runs key k over the blob (nonce ‖ body ‖ tag, len bytes), the plaintext
 * to out (the body itself, or not overlapping the blob). True when the tag
 * verified. The computed tag starts as the complement of the stored one, so
 * a call that wrote nothing cannot pass. */
static bool imb_open_with(const struct gcm_key_data *k, sl_span_t aad, const uint8_t *blob,
                          size_t len, uint8_t *out)
{
    const uint8_t *body = blob + SL_AEAD_NONCE_SIZE;
    size_t body_len = len - SL_AEAD_OVERHEAD;
    uint8_t want[SL_AEAD_TAG_SIZE], got[SL_AEAD_TAG_SIZE];
    memcpy(want, body + body_len, SL_AEAD_TAG_SIZE); /* out may be the body: read it first */
    for (size_t i = 0; i < SL_AEAD_TAG_SIZE; i++)
        got[i] = (uint8_t)~want[i];
    struct gcm_context_data ctx;
    IMB_AES256_GCM_DEC(imb_mgr, k, &ctx, imb_buf(out), body, body_len, blob, imb_cbuf(aad.ptr),
                       aad.len, got, SL_AEAD_TAG_SIZE);
    return CRYPTO_memcmp(got, want, SL_AEAD_TAG_SIZE) == 0;
}

/* intel-ipsec-mb's bytes against OpenSSL's for one message with a partial
 * last block: the same ciphertext and tag, it opens what it sealed, and a
 * changed tag does not verify. Anything else leaves the engine unused. */
static bool imb_matches_openssl(void)
{
    static const uint8_t key[SL_AEAD_KEY_SIZE] = "sluice engine check key 32 bytes";
    static const uint8_t nonce[SL_AEAD_NONCE_SIZE] = "engine check";
    static const uint8_t plain[77] = "both engines must give the same bytes for this message, "
                                     "tag and all.......";
    uint8_t ref[sizeof(plain) + SL_AEAD_TAG_SIZE];
    uint8_t blob[SL_AEAD_NONCE_SIZE + sizeof(plain) + SL_AEAD_TAG_SIZE], out[sizeof(plain)];
    EVP_CIPHER *cipher = EVP_CIPHER_fetch(NULL, "AES-256-GCM", NULL);
    bool ok = cipher && evp_seal_once(cipher, key, nonce, sl_span_str("aad"), plain,
                                      sizeof(plain), ref, ref + sizeof(plain));
    EVP_CIPHER_free(cipher);
    struct gcm_key_data *k = ok ? imb_key_new(key) : NULL;
    if (!k)
        return false;
    memcpy(blob, nonce, SL_AEAD_NONCE_SIZE);
    imb_seal(k, nonce, sl_span_str("aad"), plain, sizeof(plain), blob + SL_AEAD_NONCE_SIZE,
             blob + SL_AEAD_NONCE_SIZE + sizeof(plain));
    ok = memcmp(blob + SL_AEAD_NONCE_SIZE, ref, sizeof(ref)) == 0 &&
         imb_open_with(k, sl_span_str("aad"), blob, sizeof(blob), out) &&
         memcmp(out, plain, sizeof(plain)) == 0;
    blob[sizeof(blob) - 1] ^= 1;
    ok = ok && !imb_open_with(k, sl_span_str("aad"), blob, sizeof(blob), out);
    imb_key_free(k);
    return ok;
}

static void imb_setup(void)
{
    IMB_MGR *m = alloc_mb_mgr(0);
    if (!m)
        return;
    IMB_ARCH arch = IMB_ARCH_NONE;
    init_mb_mgr_auto(m, &arch);
    if (arch < IMB_ARCH_SSE || imb_get_errno(m) != 0) { /* no AES-NI: OpenSSL */
        free_mb_mgr(m);
        return;
    }
    imb_name = arch == IMB_ARCH_AVX512 ? "intel-ipsec-mb, AVX-512"
               : arch == IMB_ARCH_AVX2 ? "intel-ipsec-mb, AVX2"
               : arch == IMB_ARCH_AVX  ? "intel-ipsec-mb, AVX"
                                       : "intel-ipsec-mb, SSE";
    imb_mgr = m;
    if (!imb_matches_openssl()) {
        imb_mgr = NULL;
        free_mb_mgr(m);
    }
}
#endif

bool sl_aead_engine_available(sl_aead_engine_t engine)
{
    switch (engine) {
    case SL_AEAD_ENGINE_BEST:
    case SL_AEAD_ENGINE_OPENSSL:
        return true;
    case SL_AEAD_ENGINE_IPSEC_MB:
#ifdef SL_HAVE_IPSEC_MB
        pthread_once(&imb_once, imb_setup);
        return imb_mgr != NULL;
#else
        return false;
#endif
    }
    return false;
}

bool sl_aead_engine_built(sl_aead_engine_t engine)
{
#ifdef SL_HAVE_IPSEC_MB
    (void)engine;
    return true;
#else
    return engine != SL_AEAD_ENGINE_IPSEC_MB;
#endif
}

static int create_openssl(sl_aead_t *a, const uint8_t key[SL_AEAD_KEY_SIZE],
                          const uint8_t *previous)
{
    a->cipher = EVP_CIPHER_fetch(NULL, "AES-256-GCM", NULL);
    bool ok = a->cipher != NULL;
    a->current.seal = ok ? cipher_new(a->cipher, key, 1) : NULL;
    a->current.open = ok ? cipher_new(a->cipher, key, 0) : NULL;
    ok = ok && a->current.seal && a->current.open;
    if (previous) {
        a->previous.open = ok ? cipher_new(a->cipher, previous, 0) : NULL;
        ok = ok && a->previous.open;
    }
    if (!ok || !nonce_start(a->current.seal) || !take_nonce(a, NULL))
        return -SL_ERR_INVALID_ENCRYPTION_KEY;
    a->fast_iv = fast_open_works(a, key);
    return 0;
}

static int create_ipsec_mb(sl_aead_t *a, const uint8_t key[SL_AEAD_KEY_SIZE],
                           const uint8_t *previous)
{
#ifdef SL_HAVE_IPSEC_MB
    a->imb.current = imb_key_new(key);
    a->imb.previous = previous ? imb_key_new(previous) : NULL;
    if (!a->imb.current || (previous && !a->imb.previous))
        return -SL_ERR_ERROR;
    /* The same start as the OpenSSL engine's: 96 random bits. */
    if (RAND_bytes(a->next_nonce, SL_AEAD_NONCE_SIZE) != 1)
        return -SL_ERR_CANNOT_ENCRYPT_DATA;
    a->primed = true;
    a->fast_iv = true;
    return 0;
#else
    (void)a;
    (void)key;
    (void)previous;
    return -SL_ERR_FEATURE_UNAVAILABLE;
#endif
}

int sl_aead_create_engine(const uint8_t key[SL_AEAD_KEY_SIZE], const uint8_t *previous,
                          sl_aead_engine_t engine, sl_aead_t **out)
{
    *out = NULL;
    if (engine == SL_AEAD_ENGINE_BEST)
        engine = sl_aead_engine_available(SL_AEAD_ENGINE_IPSEC_MB) ? SL_AEAD_ENGINE_IPSEC_MB
                                                                   : SL_AEAD_ENGINE_OPENSSL;
    if (!sl_aead_engine_available(engine))
        return -SL_ERR_FEATURE_UNAVAILABLE;
    sl_aead_t *a = calloc(1, sizeof(*a));
    if (!a)
        return -SL_ERR_ERROR;
    a->engine = engine;
    a->has_previous = previous != NULL;
    int rc = engine == SL_AEAD_ENGINE_IPSEC_MB ? create_ipsec_mb(a, key, previous)
                                               : create_openssl(a, key, previous);
    if (rc != 0) {
        sl_aead_destroy(a);
        return rc;
    }
    *out = a;
    return 0;
}

int sl_aead_create(const uint8_t key[SL_AEAD_KEY_SIZE], const uint8_t *previous, sl_aead_t **out)
{
    return sl_aead_create_engine(key, previous, SL_AEAD_ENGINE_BEST, out);
}

void sl_aead_destroy(sl_aead_t *a)
{
    if (!a)
        return;
    key_ctx_free(&a->current);
    key_ctx_free(&a->previous);
    EVP_CIPHER_free(a->cipher);
#ifdef SL_HAVE_IPSEC_MB
    imb_key_free(a->imb.current);
    imb_key_free(a->imb.previous);
#endif
    explicit_bzero(a, sizeof(*a));
    free(a);
}

bool sl_aead_fast_open(const sl_aead_t *a)
{
    return a->fast_iv;
}

sl_aead_engine_t sl_aead_engine(const sl_aead_t *a)
{
    return a->engine;
}

const char *sl_aead_engine_name(const sl_aead_t *a)
{
#ifdef SL_HAVE_IPSEC_MB
    if (a->engine == SL_AEAD_ENGINE_IPSEC_MB)
        return imb_name;
#endif
    return a->fast_iv ? "OpenSSL EVP" : "OpenSSL EVP, opens through EVP_CipherInit_ex";
}

int sl_aead_seal(sl_aead_t *a, sl_span_t aad, const uint8_t *in, size_t len, uint8_t *out)
{
    uint8_t *body = out + SL_AEAD_NONCE_SIZE, *tag = body + len;
#ifdef SL_HAVE_IPSEC_MB
    if (a->engine == SL_AEAD_ENGINE_IPSEC_MB) {
        memcpy(out, a->next_nonce, SL_AEAD_NONCE_SIZE);
        nonce_next(a->next_nonce);
        imb_seal(a->imb.current, out, aad, in, len, body, tag);
        return 0;
    }
#endif
    EVP_CIPHER_CTX *c = a->current.seal;
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

/* One key of a context over a blob (engine-neutral form of open_with and
 * imb_open_with). */
static bool open_key(sl_aead_t *a, bool previous, sl_span_t aad, const uint8_t *blob, size_t len,
                     uint8_t *out, bool verify)
{
#ifdef SL_HAVE_IPSEC_MB
    if (a->engine == SL_AEAD_ENGINE_IPSEC_MB) {
        bool ok = imb_open_with(previous ? a->imb.previous : a->imb.current, aad, blob, len, out);
        return ok || !verify;
    }
#endif
    return open_with(previous ? a->previous.open : a->current.open, a->fast_iv, aad, blob, len,
                     out, verify);
}

int sl_aead_open(sl_aead_t *a, sl_span_t aad, uint8_t *in, size_t len, sl_aead_key_used_t *used)
{
    if (len < SL_AEAD_OVERHEAD)
        return -SL_ERR_CANNOT_DECRYPT_DATA;
    uint8_t *body = in + SL_AEAD_NONCE_SIZE;
    if (open_key(a, false, aad, in, len, body, true)) {
        if (used)
            *used = SL_AEAD_KEY_CURRENT;
        return 0;
    }
    if (a->has_previous) {
        /* GCM's body is CTR mode: running the current key's keystream over
         * the buffer again gives the ciphertext back, so the previous key
         * sees the stored bytes without a copy being kept for a rare case. */
        bool restored = open_key(a, false, aad, in, len, body, false);
        if (restored && open_key(a, true, aad, in, len, body, true)) {
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
    if (open_key(a, false, aad, in, len, out, true)) {
        if (used)
            *used = SL_AEAD_KEY_CURRENT;
        return 0;
    }
    if (a->has_previous && open_key(a, true, aad, in, len, out, true)) {
        if (used)
            *used = SL_AEAD_KEY_PREVIOUS;
        return 0;
    }
    memset(out, 0, len - SL_AEAD_OVERHEAD);
    return -SL_ERR_CANNOT_DECRYPT_DATA;
}
