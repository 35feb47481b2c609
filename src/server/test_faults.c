/* Test-only I/O fault injection (server/test_faults.h): the control file named by
 * SLUICE_FAULT_FILE, parsed into one src/base/io.h fault plan. The file is read with plain
 * libc calls, never through sl_io, so a plan can never fail its own control file. */
#include "server/test_faults.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/io.h"
#include "base/log.h"

/* The control file's text is one short line; anything longer is cut here. */
#define FAULT_TEXT_MAX 512u

static struct {
    bool on;
    char path[4096];
    char text[FAULT_TEXT_MAX]; /* the text the current plan came from */
    char substring[FAULT_TEXT_MAX];
    sl_io_fault_t plan;
    bool hold_workers;   /* the line "hold workers" */
    bool hold_telemetry; /* the line "hold telemetry" */
    bool plan_armed;
    uint32_t create_delay_ms; /* the line "delay creates <ms>" */
} faults;

uint32_t sl_test_faults_create_delay_ms(void)
{
    return faults.create_delay_ms;
}

bool sl_test_faults_plan_armed(void)
{
    return faults.plan_armed;
}

bool sl_test_faults_hold_telemetry(void)
{
    return faults.hold_telemetry;
}

bool sl_test_faults_hold_workers(void)
{
    return faults.hold_workers;
}

bool sl_test_faults_init(void)
{
    const char *path = getenv("SLUICE_FAULT_FILE");
    if (!path || !path[0] || strlen(path) >= sizeof(faults.path))
        return false;
    memcpy(faults.path, path, strlen(path) + 1);
    faults.on = true;
    sl_log_warn("SLUICE_FAULT_FILE is set: test fault injection is on (control file %s); never "
                "set it outside tests",
                faults.path);
    sl_test_faults_poll();
    return true;
}

static int parse_error(const char *word)
{
    static const struct {
        const char *name;
        int error;
    } names[] = {{"enospc", ENOSPC}, {"eio", EIO}, {"edquot", EDQUOT}, {"erofs", EROFS}};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strcmp(word, names[i].name) == 0)
            return names[i].error;
    char *end;
    long n = strtol(word, &end, 10);
    return *end == '\0' && n > 0 && n < 4096 ? (int)n : 0;
}

static uint32_t parse_calls(const char *word)
{
    if (strcmp(word, "writes") == 0)
        return SL_IO_MASK_WRITES;
    if (strcmp(word, "syncs") == 0)
        return SL_IO_MASK_SYNCS;
    if (strcmp(word, "any") == 0)
        return SL_IO_MASK_ALL;
    for (int c = 0; c < SL_IO_CALL_COUNT; c++)
        if (strcmp(word, sl_io_call_name((sl_io_call_t)c)) == 0)
            return SL_IO_BIT(c);
    return 0;
}

/* "name=<n>" into *out; false when word is not that option. */
static bool parse_option(const char *word, const char *name, uint64_t *out, bool *bad)
{
    size_t n = strlen(name);
    if (strncmp(word, name, n) != 0 || word[n] != '=')
        return false;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(word + n + 1, &end, 10);
    *bad = *bad || errno != 0 || end == word + n + 1 || *end != '\0';
    *out = v;
    return true;
}

/* Fills faults.plan from one line; false when the line is not a plan. */
static bool parse_plan(char *line)
{
    char *save = NULL;
    char *error = strtok_r(line, " \t", &save);
    char *call = error ? strtok_r(NULL, " \t", &save) : NULL;
    /* "slow" fails nothing: with delay=<ms> the calls only take longer. */
    bool slow = error && strcmp(error, "slow") == 0;
    sl_io_fault_t plan = {.error = error && !slow ? parse_error(error) : 0,
                          .calls = call ? parse_calls(call) : 0};
    if ((plan.error == 0 && !slow) || plan.calls == 0)
        return false;
    bool bad = false;
    uint64_t short_len = 0, delay_ms = 0;
    faults.substring[0] = '\0';
    for (char *w = strtok_r(NULL, " \t", &save); w && !bad; w = strtok_r(NULL, " \t", &save)) {
        if (!parse_option(w, "after", &plan.after, &bad) &&
            !parse_option(w, "count", &plan.count, &bad) &&
            !parse_option(w, "short", &short_len, &bad) &&
            !parse_option(w, "delay", &delay_ms, &bad))
            snprintf(faults.substring, sizeof(faults.substring), "%s", w);
    }
    /* A minute bounds one call's delay: longer is a hang, not a slow disk. */
    if (delay_ms > 60000 || (slow && delay_ms == 0))
        return false;
    plan.delay_ms = (uint32_t)delay_ms;
    plan.short_len = (size_t)short_len;
    plan.path_contains = faults.substring[0] ? faults.substring : NULL;
    faults.plan = plan;
    return !bad;
}

/* The file's first line, trimmed; empty when the file is missing or unreadable. */
static void read_line(char out[FAULT_TEXT_MAX])
{
    out[0] = '\0';
    FILE *f = fopen(faults.path, "r");
    if (!f)
        return;
    if (!fgets(out, FAULT_TEXT_MAX, f))
        out[0] = '\0';
    fclose(f);
    size_t n = strcspn(out, "\r\n");
    while (n > 0 && (out[n - 1] == ' ' || out[n - 1] == '\t'))
        n--;
    out[n] = '\0';
}

void sl_test_faults_poll(void)
{
    if (!faults.on)
        return;
    char text[FAULT_TEXT_MAX];
    read_line(text);
    if (strcmp(text, faults.text) == 0)
        return;
    memcpy(faults.text, text, sizeof(text));
    sl_io_fault_arm(NULL);
    faults.plan_armed = false;
    faults.create_delay_ms = 0;
    unsigned delay = 0;
    char tail;
    if (sscanf(text, "delay creates %u%c", &delay, &tail) == 1 && delay <= 60000u) {
        faults.create_delay_ms = delay;
        sl_log_warn("test faults: first segments created %u ms late", delay);
        return;
    }
    faults.hold_workers = strcmp(text, "hold workers") == 0;
    faults.hold_telemetry = strcmp(text, "hold telemetry") == 0;
    if (faults.hold_workers || faults.hold_telemetry) {
        sl_log_warn("test faults: the %s", faults.hold_workers
                                               ? "worker pool takes no job"
                                               : "telemetry exporter sends nothing");
        return;
    }
    if (text[0] == '\0') {
        sl_log_warn("test faults: cleared");
        return;
    }
    char line[FAULT_TEXT_MAX];
    memcpy(line, text, sizeof(line));
    if (!parse_plan(line)) {
        sl_log_error("test faults: cannot parse '%s'; no fault armed", text);
        return;
    }
    sl_io_fault_arm(&faults.plan);
    faults.plan_armed = true;
    sl_log_warn("test faults: armed '%s'", text);
}
