/* JWT (RFC 7519) compact JWS with HMAC, written and checked by hand over
 * OpenSSL's HMAC: the claims and the checks are the reference's, and no
 * algorithm but the configured one is ever accepted (no "none", no switch
 * to another HMAC). */
#include "rest/jwt.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sluice/error.h>
#include <stdio.h>
#include <string.h>

#include "rest/internal.h"

/* Signed part (header.payload) and a whole token are bounded: a bearer
 * longer than this is not one of ours. */
#define SL_JWT_TEXT_MAX 4096u

static const char *const alg_names[] = {"HS256", "HS384", "HS512"};

bool sl_jwt_alg_parse(const char *text, sl_jwt_alg_t *out)
{
    for (size_t i = 0; i < SL_ARRAY_LEN(alg_names); i++)
        if (strcmp(text, alg_names[i]) == 0) {
            *out = (sl_jwt_alg_t)i;
            return true;
        }
    return false;
}

const char *sl_jwt_alg_name(sl_jwt_alg_t alg)
{
    return (size_t)alg < SL_ARRAY_LEN(alg_names) ? alg_names[alg] : "HS256";
}

static const EVP_MD *alg_md(sl_jwt_alg_t alg)
{
    switch (alg) {
    case SL_JWT_HS384:
        return EVP_sha384();
    case SL_JWT_HS512:
        return EVP_sha512();
    default:
        return EVP_sha256();
    }
}

void sl_jwt_uuid7(uint64_t unix_ms, const uint8_t random[10], char out[37])
{
    uint8_t b[16];
    for (int i = 0; i < 6; i++)
        b[i] = (uint8_t)(unix_ms >> (40 - 8 * i));
    memcpy(b + 6, random, 10);
    b[6] = (uint8_t)(0x70 | (b[6] & 0x0F)); /* version 7 */
    b[8] = (uint8_t)(0x80 | (b[8] & 0x3F)); /* variant 10 */
    snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
             b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
             b[14], b[15]);
}

bool sl_jwt_list_has(const char *list, sl_span_t item)
{
    const char *p = list;
    for (size_t guard = 0; p && *p && guard < 1024; guard++) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        const char *s = p;
        /* Iggy's environment form "[a, b]" (quotes allowed) reads the same. */
        while (n > 0 && strchr(" \t[\"", *s)) {
            s++;
            n--;
        }
        while (n > 0 && strchr(" \t]\"", s[n - 1]))
            n--;
        if (n == item.len && memcmp(s, item.ptr, n) == 0)
            return true;
        p = end ? end + 1 : NULL;
    }
    return false;
}

static bool sign(const sl_jwt_params_t *p, sl_span_t data, uint8_t *mac, unsigned *mac_len)
{
    return HMAC(alg_md(p->alg), p->key.ptr, (int)p->key.len, data.ptr, data.len, mac, mac_len) !=
           NULL;
}

static json_object *claims_json(const sl_jwt_params_t *p, const sl_jwt_claims_t *c)
{
    char sub[16];
    snprintf(sub, sizeof(sub), "%u", c->user_id);
    json_object *o = json_object_new_object();
    json_object_object_add(o, "jti", json_object_new_string(c->jti));
    json_object_object_add(o, "iss", json_object_new_string(p->issuer));
    json_object_object_add(o, "aud", json_object_new_string(p->audience));
    json_object_object_add(o, "sub", json_object_new_string(sub));
    json_object_object_add(o, "iat", json_object_new_uint64(c->iat));
    json_object_object_add(o, "exp", json_object_new_uint64(c->exp));
    json_object_object_add(o, "nbf", json_object_new_uint64(c->nbf));
    json_object_object_add(o, "user_created_at", json_object_new_uint64(c->user_created_at));
    return o;
}

int sl_jwt_encode(const sl_jwt_params_t *p, const sl_jwt_claims_t *c, sl_buf_t *out)
{
    char header[48];
    int hn = snprintf(header, sizeof(header), "{\"typ\":\"JWT\",\"alg\":\"%s\"}",
                      sl_jwt_alg_name(p->alg));
    json_object *claims = claims_json(p, c);
    size_t cn = 0;
    const char *ctext = json_object_to_json_string_length(
        claims, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &cn);
    size_t start = out->len;
    sl_base64_encode(out, sl_span(header, (size_t)hn), true);
    sl_put_u8(out, '.');
    sl_base64_encode(out, sl_span(ctext, cn), true);
    json_object_put(claims);
    if (!sl_buf_ok(out))
        return -SL_ERR_ERROR;
    uint8_t mac[EVP_MAX_MD_SIZE];
    unsigned mac_len = 0;
    if (!sign(p, sl_span(out->data + start, out->len - start), mac, &mac_len))
        return -SL_ERR_ERROR;
    sl_put_u8(out, '.');
    sl_base64_encode(out, sl_span(mac, mac_len), true);
    return sl_buf_ok(out) ? 0 : -SL_ERR_ERROR;
}

/* --- verification ------------------------------------------------------------------ */

/* Decodes one base64url part into a JSON object (NULL when it is not one). */
static json_object *part_json(sl_span_t part)
{
    uint8_t mem[SL_JWT_TEXT_MAX];
    sl_buf_t b;
    sl_buf_init_fixed(&b, mem, sizeof(mem));
    if (!sl_base64_decode(&b, part, true))
        return NULL;
    sl_rest_error_t err;
    return sl_rest_json_object(sl_buf_span(&b), &err);
}

static bool header_ok(const sl_jwt_params_t *p, sl_span_t part)
{
    json_object *h = part_json(part);
    json_object *alg = NULL;
    bool ok = h && json_object_object_get_ex(h, "alg", &alg) &&
              json_object_is_type(alg, json_type_string) &&
              strcmp(json_object_get_string(alg), sl_jwt_alg_name(p->alg)) == 0;
    json_object_put(h);
    return ok;
}

static bool signature_ok(const sl_jwt_params_t *p, sl_span_t signed_part, sl_span_t sig)
{
    uint8_t mac[EVP_MAX_MD_SIZE];
    unsigned mac_len = 0;
    if (!sign(p, signed_part, mac, &mac_len))
        return false;
    uint8_t mem[EVP_MAX_MD_SIZE + 4];
    sl_buf_t got;
    sl_buf_init_fixed(&got, mem, sizeof(mem));
    if (!sl_base64_decode(&got, sig, true) || got.len != mac_len)
        return false;
    return sl_ct_equal(got.data, mac, mac_len);
}

static bool aud_ok(const sl_jwt_params_t *p, json_object *aud)
{
    if (json_object_is_type(aud, json_type_string))
        return sl_jwt_list_has(
            p->valid_audiences,
            sl_span(json_object_get_string(aud), (size_t)json_object_get_string_len(aud)));
    if (!json_object_is_type(aud, json_type_array))
        return false;
    size_t n = json_object_array_length(aud);
    for (size_t i = 0; i < n && i < 64; i++)
        if (aud_ok(p, json_object_array_get_idx(aud, i)))
            return true;
    return false;
}

static bool claims_read(const sl_jwt_params_t *p, json_object *o, sl_jwt_claims_t *out)
{
    sl_rest_error_t err;
    sl_span_t jti = {0}, iss = {0}, sub = {0};
    bool has_nbf = false, has_iat = false, has_uc = false;
    json_object *aud = NULL;
    *out = (sl_jwt_claims_t){0};
    if (!sl_rest_json_str(o, "jti", true, &jti, NULL, &err) || jti.len > SL_JWT_JTI_MAX ||
        !sl_rest_json_str(o, "iss", true, &iss, NULL, &err) ||
        !sl_rest_json_str(o, "sub", true, &sub, NULL, &err) ||
        !sl_rest_json_u64(o, "exp", true, &out->exp, NULL, &err) ||
        !sl_rest_json_u64(o, "nbf", false, &out->nbf, &has_nbf, &err) ||
        !sl_rest_json_u64(o, "iat", false, &out->iat, &has_iat, &err) ||
        !sl_rest_json_u64(o, "user_created_at", false, &out->user_created_at, &has_uc, &err) ||
        !json_object_object_get_ex(o, "aud", &aud))
        return false;
    memcpy(out->jti, jti.ptr, jti.len);
    out->jti[jti.len] = '\0';
    return sl_rest_parse_u32(sub, &out->user_id) && sl_jwt_list_has(p->valid_issuers, iss) &&
           aud_ok(p, aud);
}

int sl_jwt_verify(const sl_jwt_params_t *p, sl_span_t token, uint64_t now_s, sl_jwt_claims_t *out)
{
    if (token.len == 0 || token.len > SL_JWT_TEXT_MAX)
        return -SL_ERR_UNAUTHENTICATED;
    const uint8_t *d1 = memchr(token.ptr, '.', token.len);
    if (!d1)
        return -SL_ERR_UNAUTHENTICATED;
    size_t rest = token.len - (size_t)(d1 + 1 - token.ptr);
    const uint8_t *d2 = memchr(d1 + 1, '.', rest);
    if (!d2 || memchr(d2 + 1, '.', token.len - (size_t)(d2 + 1 - token.ptr)))
        return -SL_ERR_UNAUTHENTICATED;
    sl_span_t header = sl_span(token.ptr, (size_t)(d1 - token.ptr));
    sl_span_t payload = sl_span(d1 + 1, (size_t)(d2 - d1 - 1));
    sl_span_t sig = sl_span(d2 + 1, token.len - (size_t)(d2 + 1 - token.ptr));
    /* The signature first: nothing of an unsigned token is trusted or even
     * parsed beyond the header's algorithm. */
    if (!header_ok(p, header) ||
        !signature_ok(p, sl_span(token.ptr, (size_t)(d2 - token.ptr)), sig))
        return -SL_ERR_UNAUTHENTICATED;
    json_object *o = part_json(payload);
    bool ok = o && claims_read(p, o, out);
    json_object_put(o);
    if (!ok)
        return -SL_ERR_UNAUTHENTICATED;
    uint64_t until = out->exp > UINT64_MAX - p->leeway_s ? UINT64_MAX : out->exp + p->leeway_s;
    if (until < now_s)
        return -SL_ERR_UNAUTHENTICATED;
    if (out->nbf > now_s + p->leeway_s)
        return -SL_ERR_UNAUTHENTICATED;
    return 0;
}
