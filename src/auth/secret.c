/* Argon2id passwords, tokens, randomness (auth/secret.h). */
#include "auth/secret.h"

#include <argon2.h>
#include <errno.h>
#include <malloc.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <sluice/error.h>
#include <string.h>
#include <sys/random.h>

/* Argon2id cost: 2 passes over 19 MiB, one lane (the OWASP baseline). Login
 * is rare next to the work a session does, and tests stay quick. */
#define ARGON2_T_COST 2u
#define ARGON2_M_COST_KIB 19456u
#define ARGON2_LANES 1u
#define ARGON2_SALT_LEN 16u
#define ARGON2_HASH_LEN 32u

_Static_assert(SL_PASSWORD_HASH_MAX <= 255, "a hash travels in a u8-length field of the journal");

int sl_random_bytes(void *buf, size_t n)
{
    uint8_t *p = buf;
    size_t done = 0;
    while (done < n) {
        ssize_t got = getrandom(p + done, n - done, 0);
        if (got < 0) {
            if (errno == EINTR)
                continue;
            return -SL_ERR_ERROR;
        }
        done += (size_t)got;
    }
    return 0;
}

/* Argon2id's 19 MiB working memory goes back to the system after each use.
 * glibc raises its mmap threshold when the first such block is freed, so
 * later blocks come from the heap and would stay resident; a login is rare
 * enough for a trim each time. (A global low mmap threshold would instead
 * make every large request frame a fresh mmap: cold pages on the hot path.)
 * The trim shrinks only the main arena's top: a caller on another thread
 * must keep that thread on the main arena (sluiced's hash pool sets
 * M_ARENA_MAX to 1), or the block stays in the thread's own arena. */
static void give_back_memory(void)
{
    malloc_trim(0);
}

int sl_password_hash(sl_span_t password, char out[SL_PASSWORD_HASH_MAX])
{
    uint8_t salt[ARGON2_SALT_LEN];
    if (sl_random_bytes(salt, sizeof(salt)) != 0)
        return -SL_ERR_ERROR;
    size_t need = argon2_encodedlen(ARGON2_T_COST, ARGON2_M_COST_KIB, ARGON2_LANES,
                                    ARGON2_SALT_LEN, ARGON2_HASH_LEN, Argon2_id);
    sl_assert(need <= SL_PASSWORD_HASH_MAX);
    int rc = argon2id_hash_encoded(ARGON2_T_COST, ARGON2_M_COST_KIB, ARGON2_LANES, password.ptr,
                                   password.len, salt, sizeof(salt), ARGON2_HASH_LEN, out,
                                   SL_PASSWORD_HASH_MAX);
    give_back_memory();
    return rc == ARGON2_OK ? 0 : -SL_ERR_ERROR;
}

/* A valid hash of a password nobody has, computed once on first use: the
 * miss path verifies against it so that unknown users cost the same. */
static char dummy[SL_PASSWORD_HASH_MAX];
static bool dummy_ok;
static pthread_once_t dummy_once = PTHREAD_ONCE_INIT;

static void dummy_init(void)
{
    uint8_t junk[24];
    dummy_ok = sl_random_bytes(junk, sizeof(junk)) == 0 &&
               sl_password_hash(sl_span(junk, sizeof(junk)), dummy) == 0;
}

static const char *dummy_hash(void)
{
    pthread_once(&dummy_once, dummy_init);
    return dummy_ok ? dummy : NULL;
}

bool sl_password_verify(const char *phc, sl_span_t password)
{
    bool usable = phc && strncmp(phc, "$argon2id$", 10) == 0;
    const char *target = usable ? phc : dummy_hash();
    if (!target)
        return false;
    int rc = argon2id_verify(target, password.ptr, password.len);
    give_back_memory();
    return usable && rc == ARGON2_OK;
}

static void base64(const uint8_t *in, size_t n, char *out)
{
    static const char alphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16;
        if (i + 1 < n)
            v |= (uint32_t)in[i + 1] << 8;
        if (i + 2 < n)
            v |= in[i + 2];
        out[o++] = alphabet[(v >> 18) & 63];
        out[o++] = alphabet[(v >> 12) & 63];
        out[o++] = i + 1 < n ? alphabet[(v >> 6) & 63] : '=';
        out[o++] = i + 2 < n ? alphabet[v & 63] : '=';
    }
    out[o] = '\0';
}

int sl_token_generate(char out[SL_TOKEN_TEXT_MAX])
{
    uint8_t raw[50];
    if (sl_random_bytes(raw, sizeof(raw)) != 0)
        return -SL_ERR_ERROR;
    base64(raw, sizeof(raw), out);
    return 0;
}

void sl_token_digest(sl_span_t token, char out[SL_TOKEN_DIGEST_LEN])
{
    uint8_t md[32];
    unsigned int md_len = 0;
    int ok = EVP_Digest(token.ptr, token.len, md, &md_len, EVP_sha256(), NULL);
    sl_assert(ok == 1 && md_len == sizeof(md));
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < sizeof(md); i++) {
        out[2 * i] = hex[md[i] >> 4];
        out[2 * i + 1] = hex[md[i] & 15];
    }
    out[64] = '\0';
}

int sl_password_generate(char *out, size_t len)
{
    /* No look-alikes (0/O, 1/l/I) so a password read off a log is typed right. */
    static const char alphabet[] = "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789";
    const size_t k = sizeof(alphabet) - 1;
    if (len < 20 || len > 40)
        return -SL_ERR_INVALID_COMMAND;
    uint8_t raw[64];
    size_t o = 0;
    while (o < len) {
        if (sl_random_bytes(raw, sizeof(raw)) != 0)
            return -SL_ERR_ERROR;
        /* Rejection sampling keeps every character equally likely. */
        for (size_t i = 0; i < sizeof(raw) && o < len; i++)
            if (raw[i] < 256 - 256 % k)
                out[o++] = alphabet[raw[i] % k];
    }
    out[len] = '\0';
    return 0;
}
