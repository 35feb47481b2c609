/* Names of the protocol error codes (include/sluice/error_codes.h). */
#include <sluice/error.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int code;
    const char *name;
} error_name_t;

static const error_name_t error_names[] = {
    {0, "Ok"},
#define SL_ERROR(num, cname, pname) {num, pname},
#include <sluice/error_codes.h>
#undef SL_ERROR
};

#define ERROR_NAME_COUNT (sizeof(error_names) / sizeof(error_names[0]))

const char *sl_err_name(int code)
{
    if (code < 0)
        code = -code;
    /* The table is sorted by number; a binary search keeps lookups cheap. */
    size_t lo = 0, hi = ERROR_NAME_COUNT;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (error_names[mid].code == code)
            return error_names[mid].name;
        if (error_names[mid].code < code)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

const char *sl_strerror(int code)
{
    static _Thread_local char text[96];
    if (code < 0)
        code = -code;
    const char *name = sl_err_name(code);
    if (!name) {
        snprintf(text, sizeof(text), "unknown error (%d)", code);
        return text;
    }
    /* "InvalidCommand" -> "invalid command (3)" */
    size_t o = 0;
    for (size_t i = 0; name[i] && o + 2 < sizeof(text) - 16; i++) {
        unsigned char c = (unsigned char)name[i];
        if (isupper(c) && i > 0)
            text[o++] = ' ';
        text[o++] = (char)tolower(c);
    }
    snprintf(text + o, sizeof(text) - o, " (%d)", code);
    return text;
}
