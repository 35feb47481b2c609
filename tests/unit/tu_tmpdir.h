/* Temporary directories for tests that touch files: created under $TMPDIR (or /tmp) with
 * mkdtemp, removed with everything in them (two levels deep at most) at teardown. */
#ifndef SL_TU_TMPDIR_H
#define SL_TU_TMPDIR_H

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Creates <$TMPDIR or /tmp>/<prefix>-XXXXXX into out; false on failure. */
static inline bool tu_tmpdir_make(char out[PATH_MAX], const char *prefix)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(out, PATH_MAX, "%s/%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", prefix);
    return mkdtemp(out) != NULL;
}

/* <dir>/<name> into out; false when it does not fit. */
static inline bool tu_path(char out[PATH_MAX], const char *dir, const char *name)
{
    int n = snprintf(out, PATH_MAX, "%s/%s", dir, name);
    return n > 0 && n < PATH_MAX;
}

/* Removes dir and what it holds; depth bounds the walk (test trees are shallow). */
static inline void tu_tmpdir_remove_depth(const char *dir, int depth)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *de;
        while ((de = readdir(d)) != NULL) {
            if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                continue;
            char path[PATH_MAX];
            if (!tu_path(path, dir, de->d_name))
                continue;
            struct stat st;
            if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode) && depth > 0)
                tu_tmpdir_remove_depth(path, depth - 1);
            else
                unlink(path);
        }
        closedir(d);
    }
    rmdir(dir);
}

static inline void tu_tmpdir_remove(const char *dir)
{
    tu_tmpdir_remove_depth(dir, 3);
}

#endif
