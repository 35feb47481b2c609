/* What a buffered write of 1 MiB costs, by whether the page cache pages it
 * lands in are new to the file or already there: a new file written in
 * steps of 256 MiB (new pages, taken from the machine's free memory),
 * each step followed by the same 256 MiB written again over the pages it
 * just made (the baseline, in the same run). Wall time per MiB of each.
 * On a virtual machine whose free memory the host takes back (a balloon's
 * free page reporting), new pages can cost many times what reused ones do,
 * which is what a replicated batch meets: it writes six such MiB on a
 * 3-node cluster (the ring and the segment on each node) where one node
 * writes one (docs/benchmarks.md, "Messages on 3 nodes: what a new page
 * costs here"). Built with the tree, never run by the tests:
 *   ./build/bench/sl_bench_pagecache [DIR [MiB]]   (default $TMPDIR or /tmp, 4096)
 * The file is removed at the end. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"

enum { MIB = 1 << 20, STEP_MIB = 256 };

/* Writes STEP_MIB MiB from offset at (in MiB): ns per MiB, or -1. */
static double write_step(int fd, const uint8_t *buf, size_t at)
{
    uint64_t start = sl_clock_monotonic_ns();
    for (size_t i = 0; i < STEP_MIB; i++)
        if (pwrite(fd, buf, MIB, (off_t)((at + i) * MIB)) != MIB)
            return -1;
    return (double)(sl_clock_monotonic_ns() - start) / STEP_MIB;
}

int main(int argc, char **argv)
{
    const char *tmp = getenv("TMPDIR");
    const char *dir = argc > 1 ? argv[1] : tmp && *tmp ? tmp : "/tmp";
    long total = argc > 2 ? strtol(argv[2], NULL, 10) : 4096;
    if (total < STEP_MIB) {
        fprintf(stderr, "usage: sl_bench_pagecache [DIR [MiB, at least %d]]\n", STEP_MIB);
        return 2;
    }
    char path[4096];
    snprintf(path, sizeof(path), "%s/sl_bench_pagecache.XXXXXX", dir);
    int fd = mkstemp(path);
    uint8_t *buf = malloc(MIB);
    if (fd < 0 || !buf) {
        perror(path);
        return 1;
    }
    memset(buf, 0x5a, MIB);
    printf("Buffered writes of 1 MiB into %s, ms per MiB: new pages, then the same range again\n",
           dir);
    printf("  %-12s %10s %10s %8s\n", "MiB", "new", "again", "ratio");
    int rc = 0;
    for (size_t at = 0; at + STEP_MIB <= (size_t)total; at += STEP_MIB) {
        double fresh = write_step(fd, buf, at), again = write_step(fd, buf, at);
        if (fresh < 0 || again < 0) {
            perror("pwrite");
            rc = 1;
            break;
        }
        printf("  %5zu-%-6zu %10.3f %10.3f %7.1fx\n", at, at + STEP_MIB, fresh / 1e6, again / 1e6,
               fresh / again);
    }
    close(fd);
    unlink(path);
    free(buf);
    return rc;
}
