/* Fuzz target: the strict TOML reader of the server configuration
 * (src/server/toml.c). Any bytes must parse or fail with a position inside
 * the input; never crash, never read past the end. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/assert.h"
#include "server/toml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* An exact-size copy so ASan sees any read past the end. */
    char *text = malloc(size ? size : 1);
    sl_assert(text != NULL);
    if (size)
        memcpy(text, data, size);
    sl_toml_doc_t doc;
    sl_toml_error_t err;
    int rc = sl_toml_parse(text, size, &doc, &err);
    if (rc == 0) {
        /* Every entry found again by its key. */
        for (uint32_t i = 0; i < doc.count; i++) {
            sl_assert(sl_toml_find(&doc, doc.entries[i].name) != NULL);
            sl_assert(doc.entries[i].line >= 1);
        }
        sl_toml_doc_free(&doc);
    } else {
        (void)err;
    }
    free(text);
    return 0;
}
