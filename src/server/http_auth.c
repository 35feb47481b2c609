/* The HTTP door's access tokens (http.h): the signing key (configured, or
 * generated once and kept in <data>/http_jwt_key, mode 0600), issuing and
 * verifying JWTs (rest/jwt.h), and the logged-out tokens: their jti until
 * they expire, in memory and in <data>/http_revoked, so a token logged out
 * stays refused across a restart (docs/compatibility.md: the reference's
 * logout revokes nothing). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "auth/secret.h"
#include "base/clock.h"
#include "base/io.h"
#include "base/log.h"
#include "base/xxh3.h"
#include "base/base64.h"
#include "server/datadir.h"
#include "server/http.h"

#define KEY_FILE     "http_jwt_key"
#define REVOKED_FILE "http_revoked"
/* Random bytes of a generated key: HS512 takes keys up to its block size. */
#define KEY_RANDOM_BYTES 64u

typedef struct revoked_entry {
    uint64_t exp; /* 0: free slot */
    char jti[SL_JWT_JTI_MAX + 1];
} revoked_entry_t;

struct sl_http_revoked {
    uint32_t count;
    uint32_t cap; /* power of two, at least twice count */
    revoked_entry_t *slots;
    int fd; /* the append-only file */
};

/* --- the key -------------------------------------------------------------------------------- */

static bool key_from_text(sl_http_auth_t *a, sl_span_t text, bool base64)
{
    sl_buf_t b;
    sl_buf_init_fixed(&b, a->key, sizeof(a->key));
    if (base64) {
        if (!sl_base64_decode(&b, text, false) || b.len == 0)
            return false;
    } else {
        sl_put_span(&b, text);
        if (!sl_buf_ok(&b))
            return false;
    }
    a->key_len = b.len;
    return true;
}

/* The kept key: base64 of KEY_RANDOM_BYTES random bytes and a newline. */
static bool key_load(sl_http_auth_t *a, const char *path)
{
    char text[256];
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, text, sizeof(text) - 1);
    struct stat st;
    if (fstat(fd, &st) == 0 && (st.st_mode & 077) != 0 && fchmod(fd, 0600) == 0)
        sl_log_warn("http: %s was readable by others; its mode is now 0600", path);
    close(fd);
    while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == '\r'))
        n--;
    return n > 0 && key_from_text(a, sl_span(text, (size_t)n), true) &&
           a->key_len == KEY_RANDOM_BYTES;
}

static int key_create(sl_http_auth_t *a, const char *dir, char *err, size_t err_len)
{
    uint8_t raw[KEY_RANDOM_BYTES];
    char text[256], path[PATH_MAX];
    if (sl_random_bytes(raw, sizeof(raw)) != 0) {
        snprintf(err, err_len, "http: cannot draw a random JWT key");
        return -EIO;
    }
    sl_buf_t b;
    sl_buf_init_fixed(&b, text, sizeof(text));
    sl_base64_encode(&b, sl_span(raw, sizeof(raw)), false);
    sl_put_u8(&b, '\n');
    sl_put_u8(&b, '\0');
    memcpy(a->key, raw, sizeof(raw));
    a->key_len = sizeof(raw);
    memset(raw, 0, sizeof(raw));
    int rc = sl_datadir_write_private(dir, KEY_FILE, text, path);
    memset(text, 0, sizeof(text));
    if (rc != 0) {
        snprintf(err, err_len, "http: cannot write the JWT key to %s/%s: %s", dir, KEY_FILE,
                 strerror(-rc));
        return rc;
    }
    sl_log_info("http: generated a JWT signing key, kept in %s (mode 0600)", path);
    return 0;
}

static int key_open(sl_http_auth_t *a, const sl_config_t *cfg, char *err, size_t err_len)
{
    const char *secret = cfg->http.jwt.encoding_secret[0] ? cfg->http.jwt.encoding_secret
                                                          : cfg->http.jwt.decoding_secret;
    if (secret[0]) {
        if (!key_from_text(a, sl_span_str(secret), cfg->http.jwt.use_base64_secret)) {
            snprintf(err, err_len, "http.jwt.encoding_secret: not %s",
                     cfg->http.jwt.use_base64_secret ? "valid base64" : "a usable key");
            return -EINVAL;
        }
        return 0;
    }
    char path[PATH_MAX + 32];
    snprintf(path, sizeof(path), "%s/%s", cfg->system.path, KEY_FILE);
    if (key_load(a, path))
        return 0;
    if (access(path, F_OK) == 0)
        sl_log_warn("http: %s does not hold a key; a new one replaces it (tokens issued "
                    "before no longer verify)",
                    path);
    return key_create(a, cfg->system.path, err, err_len);
}

/* --- the logged-out tokens ----------------------------------------------------------------------
 */

static revoked_entry_t *slot_of(sl_http_revoked_t *r, const char *jti, bool *found)
{
    uint64_t h = sl_xxh3_64(jti, strlen(jti));
    uint32_t mask = r->cap - 1;
    /* The table is never more than half full, so an empty slot ends the probe. */
    for (uint32_t i = 0; i < r->cap; i++) {
        revoked_entry_t *e = &r->slots[(h + i) & mask];
        if (e->exp == 0 || strcmp(e->jti, jti) == 0) {
            *found = e->exp != 0;
            return e;
        }
    }
    sl_assert(false);
    return NULL;
}

static bool table_put(sl_http_revoked_t *r, const char *jti, uint64_t exp)
{
    if ((r->count + 1) * 2 > r->cap) {
        uint32_t cap = r->cap ? r->cap * 2 : 64;
        revoked_entry_t *old = r->slots;
        uint32_t old_cap = r->cap;
        r->slots = calloc(cap, sizeof(*r->slots));
        if (!r->slots) {
            r->slots = old;
            return false;
        }
        r->cap = cap;
        r->count = 0;
        for (uint32_t i = 0; i < old_cap; i++)
            if (old[i].exp)
                table_put(r, old[i].jti, old[i].exp);
        free(old);
    }
    bool found;
    revoked_entry_t *e = slot_of(r, jti, &found);
    if (!found) {
        snprintf(e->jti, sizeof(e->jti), "%s", jti);
        r->count++;
    }
    e->exp = exp;
    return true;
}

/* The file's lines for the entries that are still live. */
static char *table_text(const sl_http_revoked_t *r, uint64_t now_s)
{
    size_t cap = (size_t)r->count * (SL_JWT_JTI_MAX + 24) + 1, len = 0;
    char *text = malloc(cap);
    if (!text)
        return NULL;
    text[0] = '\0';
    for (uint32_t i = 0; i < r->cap; i++)
        if (r->slots[i].exp > now_s)
            len += (size_t)snprintf(text + len, cap - len, "%llu %s\n",
                                    (unsigned long long)r->slots[i].exp, r->slots[i].jti);
    return text;
}

/* Replaces the file with the live entries (tmp, fsync, rename, directory
 * fsync), so a crash leaves the old list or the new one, never less. */
static int revoked_rewrite(sl_http_auth_t *a, uint64_t now_s)
{
    sl_http_revoked_t *r = a->revoked;
    char tmp[sizeof(a->revoked_path) + 8];
    snprintf(tmp, sizeof(tmp), "%s.tmp", a->revoked_path);
    char *text = table_text(r, now_s);
    /* Not a secret (token ids and expiries): the data directory's file mode. */
    int fd = text ? sl_io_open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, sl_io_file_mode())
                  : -ENOMEM;
    int rc = fd < 0 ? fd : sl_io_pwrite_all(fd, text, strlen(text), 0);
    if (rc == 0)
        rc = sl_io_fsync(fd);
    if (fd >= 0)
        sl_io_close(fd);
    free(text);
    if (rc == 0)
        rc = sl_io_rename(tmp, a->revoked_path);
    if (rc == 0) {
        char dir[sizeof(a->revoked_path)];
        snprintf(dir, sizeof(dir), "%s", a->revoked_path);
        char *slash = strrchr(dir, '/');
        if (slash)
            *slash = '\0';
        rc = sl_io_fsync_dir(slash ? dir : ".");
    }
    if (r->fd >= 0)
        close(r->fd);
    r->fd = open(a->revoked_path, O_WRONLY | O_APPEND | O_CLOEXEC);
    return rc != 0 ? rc : (r->fd < 0 ? -errno : 0);
}

/* Keeps only what has not expired. */
static void revoked_purge(sl_http_revoked_t *r, uint64_t now_s)
{
    revoked_entry_t *old = r->slots;
    uint32_t old_cap = r->cap;
    r->slots = NULL;
    r->cap = 0;
    r->count = 0;
    for (uint32_t i = 0; i < old_cap; i++)
        if (old[i].exp > now_s)
            table_put(r, old[i].jti, old[i].exp);
    free(old);
}

static void revoked_load(sl_http_auth_t *a, uint64_t now_s)
{
    FILE *f = fopen(a->revoked_path, "r");
    if (!f)
        return;
    char line[SL_JWT_JTI_MAX + 32];
    unsigned long long exp;
    char jti[SL_JWT_JTI_MAX + 1];
    for (uint32_t n = 0; n < 4 * SL_HTTP_REVOKED_MAX && fgets(line, sizeof(line), f); n++)
        if (sscanf(line, "%llu %64s", &exp, jti) == 2 && exp > now_s &&
            a->revoked->count < SL_HTTP_REVOKED_MAX)
            table_put(a->revoked, jti, exp);
    fclose(f);
}

int sl_http_auth_revoke(sl_http_auth_t *a, const sl_jwt_claims_t *c)
{
    uint64_t now_s = sl_clock_realtime_us() / 1000000u;
    pthread_mutex_lock(&a->mu);
    sl_http_revoked_t *r = a->revoked;
    int rc = 0;
    if (r->count >= SL_HTTP_REVOKED_MAX) {
        revoked_purge(r, now_s);
        rc = revoked_rewrite(a, now_s);
    }
    if (rc == 0 && r->count >= SL_HTTP_REVOKED_MAX)
        rc = -ENOSPC;
    if (rc == 0 && !table_put(r, c->jti, c->exp ? c->exp : 1))
        rc = -ENOMEM;
    if (rc == 0) {
        char line[SL_JWT_JTI_MAX + 32];
        int n = snprintf(line, sizeof(line), "%llu %s\n", (unsigned long long)c->exp, c->jti);
        rc = r->fd < 0 ? -EBADF : (write(r->fd, line, (size_t)n) == n ? 0 : -EIO);
        if (rc == 0)
            rc = sl_io_fsync(r->fd);
    }
    pthread_mutex_unlock(&a->mu);
    if (rc != 0)
        sl_log_warn("http: cannot record a logged-out token: %s", strerror(-rc));
    return rc == 0 ? 0 : -1;
}

static bool is_revoked(sl_http_auth_t *a, const char *jti)
{
    pthread_mutex_lock(&a->mu);
    bool found = false;
    if (a->revoked->cap)
        slot_of(a->revoked, jti, &found);
    pthread_mutex_unlock(&a->mu);
    return found;
}

/* --- open, issue, verify --------------------------------------------------------------------- */

int sl_http_auth_open(sl_http_auth_t *a, const sl_config_t *cfg, char *err, size_t err_len)
{
    memset(a, 0, sizeof(*a));
    pthread_mutex_init(&a->mu, NULL);
    a->revoked = calloc(1, sizeof(*a->revoked));
    if (!a->revoked)
        return -ENOMEM;
    a->revoked->fd = -1;
    sl_jwt_alg_parse(cfg->http.jwt.algorithm, &a->params.alg);
    a->params.issuer = cfg->http.jwt.issuer;
    a->params.audience = cfg->http.jwt.audience;
    a->params.valid_issuers = cfg->http.jwt.valid_issuers;
    a->params.valid_audiences = cfg->http.jwt.valid_audiences;
    a->params.leeway_s = cfg->http.jwt.clock_skew_us / 1000000u;
    a->expiry_s = cfg->http.jwt.access_token_expiry_us / 1000000u;
    a->not_before_s = cfg->http.jwt.not_before_us / 1000000u;
    int rc = key_open(a, cfg, err, err_len);
    if (rc != 0)
        return rc;
    a->params.key = sl_span(a->key, a->key_len);
    snprintf(a->revoked_path, sizeof(a->revoked_path), "%s/%s", cfg->system.path, REVOKED_FILE);
    uint64_t now_s = sl_clock_realtime_us() / 1000000u;
    revoked_load(a, now_s);
    rc = revoked_rewrite(a, now_s);
    if (rc != 0) {
        snprintf(err, err_len, "http: cannot write %s: %s", a->revoked_path, strerror(-rc));
        return rc;
    }
    return 0;
}

void sl_http_auth_close(sl_http_auth_t *a)
{
    if (a->revoked) {
        if (a->revoked->fd >= 0)
            close(a->revoked->fd);
        free(a->revoked->slots);
        free(a->revoked);
    }
    pthread_mutex_destroy(&a->mu);
    memset(a, 0, sizeof(*a));
}

int sl_http_auth_issue(sl_http_auth_t *a, uint32_t user_id, uint64_t created_at, sl_buf_t *out,
                       uint64_t *expiry_s)
{
    uint64_t now_us = sl_clock_realtime_us();
    uint64_t now_s = now_us / 1000000u;
    uint8_t random[10];
    if (sl_random_bytes(random, sizeof(random)) != 0)
        return -1;
    sl_jwt_claims_t c = {
        .user_id = user_id,
        .user_created_at = created_at,
        .iat = now_s,
        .exp = now_s + a->expiry_s,
        .nbf = now_s + a->not_before_s,
    };
    sl_jwt_uuid7(now_us / 1000u, random, c.jti);
    *expiry_s = c.exp;
    return sl_jwt_encode(&a->params, &c, out) == 0 ? 0 : -1;
}

int sl_http_auth_verify(sl_http_auth_t *a, sl_span_t token, sl_jwt_claims_t *out)
{
    uint64_t now_s = sl_clock_realtime_us() / 1000000u;
    if (sl_jwt_verify(&a->params, token, now_s, out) != 0)
        return -1;
    return is_revoked(a, out->jti) ? -1 : 0;
}
