/* Certificates made at test time with OpenSSL, for the TLS tests: a CA, and
 * leaves it signed (RSA 2048, SHA-256). Nothing is shipped: each run makes
 * its own in a directory of the test's. */
#ifndef SL_TEST_CERTS_H
#define SL_TEST_CERTS_H

#include <stdbool.h>

/* Paths of one set, under the directory given to th_certs_make. */
typedef struct th_certs {
    char ca[320];   /* ca.pem: the trust anchor */
    char leaf[320]; /* leaf.pem / leaf.key: SAN DNS:localhost, valid now */
    char leaf_key[320];
    char wrong[320]; /* wrong.pem / wrong.key: SAN DNS:not-this-host.example */
    char wrong_key[320];
    char expired[320]; /* expired.pem / expired.key: DNS:localhost, expired a day ago */
    char expired_key[320];
    char other_ca[320]; /* other_ca.pem: a CA that signed none of these */
} th_certs_t;

/* Makes every file of the set under dir (which exists). False on failure. */
bool th_certs_make(const char *dir, th_certs_t *out);

#endif
