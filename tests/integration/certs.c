/* Test certificates with the OpenSSL API (certs.h): the command-line tool
 * cannot date a certificate in the past, and an expired one is a case. */
#include "certs.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <string.h>

#define DAY_S (24L * 60 * 60)

static bool add_ext(X509 *cert, X509 *issuer, int nid, const char *value)
{
    X509V3_CTX ctx;
    X509V3_set_ctx(&ctx, issuer, cert, NULL, NULL, 0);
    X509_EXTENSION *e = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
    bool ok = e != NULL && X509_add_ext(cert, e, -1) == 1;
    X509_EXTENSION_free(e);
    return ok;
}

/* A certificate for key, signed by issuer_key (itself when issuer is NULL),
 * valid from not_before_s to not_after_s seconds from now. */
static X509 *make_cert(EVP_PKEY *key, const char *cn, const char *san, bool ca, X509 *issuer,
                       EVP_PKEY *issuer_key, long not_before_s, long not_after_s, long serial)
{
    X509 *x = X509_new();
    bool ok = x && X509_set_version(x, 2) && ASN1_INTEGER_set(X509_get_serialNumber(x), serial) &&
              X509_gmtime_adj(X509_getm_notBefore(x), not_before_s) &&
              X509_gmtime_adj(X509_getm_notAfter(x), not_after_s) && X509_set_pubkey(x, key);
    X509_NAME *name = ok ? X509_get_subject_name(x) : NULL;
    ok = ok &&
         X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
    ok = ok && X509_set_issuer_name(x, issuer ? X509_get_subject_name(issuer) : name);
    X509 *signer = issuer ? issuer : x;
    if (ok && ca)
        ok = add_ext(x, signer, NID_basic_constraints, "critical,CA:TRUE") &&
             add_ext(x, signer, NID_key_usage, "critical,keyCertSign,cRLSign");
    if (ok && !ca)
        ok = add_ext(x, signer, NID_basic_constraints, "CA:FALSE") &&
             add_ext(x, signer, NID_ext_key_usage, "serverAuth") &&
             add_ext(x, signer, NID_subject_alt_name, san);
    ok = ok && X509_sign(x, issuer_key ? issuer_key : key, EVP_sha256()) > 0;
    if (!ok) {
        X509_free(x);
        return NULL;
    }
    return x;
}

static bool write_pem(const char *path, X509 *cert, EVP_PKEY *key)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return false;
    bool ok = cert ? PEM_write_X509(f, cert) == 1
                   : PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL, NULL) == 1;
    return fclose(f) == 0 && ok;
}

static bool leaf(const char *dir, const char *name, const char *san, long from_s, long to_s,
                 long serial, X509 *ca, EVP_PKEY *ca_key, char *cert_path, char *key_path)
{
    EVP_PKEY *key = EVP_RSA_gen(2048);
    X509 *x =
        key ? make_cert(key, "localhost", san, false, ca, ca_key, from_s, to_s, serial) : NULL;
    snprintf(cert_path, 320, "%s/%s.pem", dir, name);
    snprintf(key_path, 320, "%s/%s.key", dir, name);
    bool ok = x && write_pem(cert_path, x, NULL) && write_pem(key_path, NULL, key);
    X509_free(x);
    EVP_PKEY_free(key);
    return ok;
}

bool th_certs_make(const char *dir, th_certs_t *out)
{
    memset(out, 0, sizeof(*out));
    EVP_PKEY *ca_key = EVP_RSA_gen(2048);
    EVP_PKEY *other_key = EVP_RSA_gen(2048);
    X509 *ca =
        ca_key ? make_cert(ca_key, "sluice test CA", NULL, true, NULL, NULL, -DAY_S, 30 * DAY_S, 1)
               : NULL;
    X509 *other = other_key ? make_cert(other_key, "sluice other CA", NULL, true, NULL, NULL,
                                        -DAY_S, 30 * DAY_S, 2)
                            : NULL;
    snprintf(out->ca, sizeof(out->ca), "%s/ca.pem", dir);
    snprintf(out->other_ca, sizeof(out->other_ca), "%s/other_ca.pem", dir);
    bool ok = ca && other && write_pem(out->ca, ca, NULL) && write_pem(out->other_ca, other, NULL);
    ok = ok && leaf(dir, "leaf", "DNS:localhost", -DAY_S, 30 * DAY_S, 10, ca, ca_key, out->leaf,
                    out->leaf_key);
    ok = ok && leaf(dir, "wrong", "DNS:not-this-host.example", -DAY_S, 30 * DAY_S, 11, ca, ca_key,
                    out->wrong, out->wrong_key);
    ok = ok && leaf(dir, "expired", "DNS:localhost", -30 * DAY_S, -DAY_S, 12, ca, ca_key,
                    out->expired, out->expired_key);
    X509_free(ca);
    X509_free(other);
    EVP_PKEY_free(ca_key);
    EVP_PKEY_free(other_key);
    return ok;
}
