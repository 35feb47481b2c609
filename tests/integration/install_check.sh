#!/bin/sh
# The installed libsluice, checked the way a user meets it: `cmake --install`
# of the build into a fresh DESTDIR (what `make install DESTDIR=...` runs),
# then a program compiled with `pkg-config --cflags --libs sluice` against
# the staged headers and library, linked dynamically and statically, and run
# against the sluiced on 127.0.0.1:PORT. Also: the shared library exports
# exactly the functions the public headers declare, and the headers compile
# on their own as C17 (and C++ when a C++ compiler is around).
#
#   install_check.sh BUILD_DIR PORT HELLO_C CC [CFLAGS]
set -eu
build=$1
port=$2
hello=$3
cc=$4
extra=${5:-}

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
DESTDIR="$stage" cmake --install "$build" >/dev/null

pc=$(find "$stage" -name sluice.pc)
test -n "$pc" || { echo "no sluice.pc installed" >&2; exit 1; }
# The .pc names the real prefix; the sysroot maps it into the staging tree.
export PKG_CONFIG_SYSROOT_DIR="$stage"
export PKG_CONFIG_PATH="$(dirname "$pc")"
cflags=$(pkg-config --cflags sluice)
libs=$(pkg-config --libs sluice)
libdir=$(dirname "$(find "$stage" -name libsluice.so | head -n 1)")
includedir=$(dirname "$(find "$stage" -name client.h | head -n 1)")
for f in client.h consumer.h producer.h error.h error_codes.h; do
    test -f "$includedir/$f" || { echo "missing header $f" >&2; exit 1; }
done
test -f "$libdir/libsluice.a" || { echo "missing libsluice.a" >&2; exit 1; }
echo "pkg-config: $cflags $libs"

# Every public header compiles alone, warnings as errors.
for h in client consumer producer error; do
    printf '#include <sluice/%s.h>\nint main(void) { return 0; }\n' "$h" > "$stage/only_$h.c"
    $cc -std=c17 -Wall -Wextra -Wpedantic -Werror $cflags -c "$stage/only_$h.c" \
        -o "$stage/only_$h.o"
done
if command -v c++ >/dev/null 2>&1; then
    printf '#include <sluice/client.h>\n#include <sluice/consumer.h>\n#include <sluice/producer.h>\n' \
        > "$stage/cxx.cc"
    c++ -Wall -Wextra -Werror $cflags -fsyntax-only "$stage/cxx.cc"
fi

# Exported symbols of the shared library == functions of the headers.
cat "$includedir"/*.h | sed 's://.*$::' | tr '\n' ' ' |
    sed 's:/\*[^*]*\*\+\([^/*][^*]*\*\+\)*/: :g' | tr ';' '\n' | sed 's/^[ }]*//' |
    grep -v '{' | grep -v '^typedef' | grep -v '^#' |
    grep -oE '(^|[ *])sl_[a-z0-9_]+ *\(' | sed 's/[ *(]//g' | sort -u > "$stage/declared"
nm -D --defined-only "$libdir/libsluice.so" | awk '$2 == "T" { sub(/@.*/, "", $3); print $3 }' |
    sort -u > "$stage/exported"
if ! cmp -s "$stage/declared" "$stage/exported"; then
    echo "exports differ from the headers (< declared, > exported):" >&2
    diff "$stage/declared" "$stage/exported" >&2 || true
    exit 1
fi
echo "exports: $(wc -l < "$stage/exported") functions, as declared"

# Dynamic (pkg-config's flags; rpath into the staging tree) and static.
$cc -std=c17 -Wall -Wextra -Werror $extra $cflags "$hello" -o "$stage/hello" $libs \
    -Wl,-rpath,"$libdir"
$cc -std=c17 -Wall -Wextra -Werror $extra $cflags "$hello" -o "$stage/hello_static" \
    "$libdir/libsluice.a" -pthread
ldd "$stage/hello" | grep -q "$libdir/libsluice.so" || { echo "not linked to the staged .so" >&2; exit 1; }
"$stage/hello" 127.0.0.1 "$port"
"$stage/hello_static" 127.0.0.1 "$port"
echo "install check passed"
