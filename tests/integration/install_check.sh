#!/bin/sh
# The installed Sluice, checked the way a user meets it. First the recipe of
# docs/client.md ("Building against a staged install") runs as written there:
# `make install DESTDIR=...` (here `cmake --install` of this build, which is
# what it runs once it has built), then a program compiled with pkg-config
# against the staged headers and library and run against the sluiced on
# 127.0.0.1:PORT. Then: the installed programs run from the staged prefix,
# the shared library exports exactly the functions the public headers
# declare, the headers compile on their own as C17 (and C++ when a C++
# compiler is around), and the static library links.
#
#   install_check.sh BUILD_DIR PORT HELLO_C CC [CFLAGS]
set -eu
build=$1
port=$2
hello=$3
cc_path=$4
extra=${5:-}
doc=$(dirname "$0")/../../docs/client.md

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
stage=$work/stage
fail() {
    echo "install check: $*" >&2
    exit 1
}

# The recipe is written for the default PREFIX (/usr/local, lib); a build
# configured with another one is staged under its own.
cache_value() { sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt"; }
prefix=$(cache_value CMAKE_INSTALL_PREFIX)
libdir=$(cache_value CMAKE_INSTALL_LIBDIR)
case $libdir in /*) fail "an absolute CMAKE_INSTALL_LIBDIR ($libdir) is not checked here" ;; esac
recipe=$(awk '/<!-- END TESTED: staged install/ { on = 0 }
              on && !/^```/ { print }
              /<!-- BEGIN TESTED: staged install/ { on = 1 }' "$doc" |
    sed -e "s|/tmp/stage/usr/local/lib|$stage$prefix/$libdir|g" \
        -e "s|/tmp/stage/usr/local|$stage$prefix|g" -e "s|/tmp/stage|$stage|g")
echo "$recipe" | grep -q "^make install DESTDIR=$stage\$" ||
    fail "no 'make install DESTDIR=/tmp/stage' line in the recipe of $doc"
echo "$recipe" | grep -q "app.c" || fail "the recipe of $doc builds no app.c"
echo "recipe:"
echo "$recipe" | sed 's/^/  /'

# Stand-ins for the commands the recipe names: make (only `make install
# DESTDIR=DIR`, without building again: ctest is running this build's
# tests) and cc (this build's compiler and sanitizer flags).
make() {
    [ "$#" -eq 2 ] && [ "$1" = install ] && [ "${2%%=*}" = DESTDIR ] ||
        fail "the recipe runs 'make $*', which this check cannot stand in for"
    DESTDIR=${2#DESTDIR=} cmake --install "$build" >/dev/null
}
cc() {
    "$cc_path" $extra "$@"
}
cp "$hello" "$work/app.c"
cd "$work"
eval "$recipe" > "$work/recipe.out"
cat "$work/recipe.out"
grep -q "^sluice [0-9]" "$work/recipe.out" || fail "the recipe's 'sluice --version' printed no version"
test -n "${PKG_CONFIG_SYSROOT_DIR:-}" || fail "the recipe set no PKG_CONFIG_SYSROOT_DIR"
libdir=$stage$prefix/$libdir
ldd ./app | grep -q "$libdir/libsluice.so" || fail "app is not linked to the staged libsluice.so"
./app 127.0.0.1 "$port"

# The programs run from the staged prefix; sluice-bench would start the
# sluiced installed beside it.
bindir=$stage$prefix/bin
"$bindir/sluiced" --version | grep -q "^sluiced [0-9]" || fail "sluiced --version"
"$bindir/sluice-bench" --help > "$work/bench-help"
grep -q -- "--sluiced PATH .*(default $bindir/sluiced " "$work/bench-help" ||
    fail "sluice-bench --help does not name the staged sluiced: $(cat "$work/bench-help")"
test -f "$stage$prefix/share/bash-completion/completions/sluice" || fail "no bash completion"

cflags=$(pkg-config --cflags sluice)
includedir=$stage$prefix/include/sluice
for f in client.h consumer.h producer.h error.h error_codes.h; do
    test -f "$includedir/$f" || fail "missing header $f"
done
test -f "$libdir/libsluice.a" || fail "missing libsluice.a"
echo "pkg-config: $cflags $(pkg-config --libs sluice)"

# Every public header compiles alone, warnings as errors.
for h in client consumer producer error; do
    printf '#include <sluice/%s.h>\nint main(void) { return 0; }\n' "$h" > "$work/only_$h.c"
    "$cc_path" -std=c17 -Wall -Wextra -Wpedantic -Werror $cflags -c "$work/only_$h.c" \
        -o "$work/only_$h.o"
done
if command -v c++ >/dev/null 2>&1; then
    printf '#include <sluice/client.h>\n#include <sluice/consumer.h>\n#include <sluice/producer.h>\n' \
        > "$work/cxx.cc"
    c++ -Wall -Wextra -Werror $cflags -fsyntax-only "$work/cxx.cc"
fi

# Exported symbols of the shared library == functions of the headers.
cat "$includedir"/*.h | sed 's://.*$::' | tr '\n' ' ' |
    sed 's:/\*[^*]*\*\+\([^/*][^*]*\*\+\)*/: :g' | tr ';' '\n' | sed 's/^[ }]*//' |
    grep -v '{' | grep -v '^typedef' | grep -v '^#' |
    grep -oE '(^|[ *])sl_[a-z0-9_]+ *\(' | sed 's/[ *(]//g' | sort -u > "$work/declared"
nm -D --defined-only "$libdir/libsluice.so" | awk '$2 == "T" { sub(/@.*/, "", $3); print $3 }' |
    sort -u > "$work/exported"
if ! cmp -s "$work/declared" "$work/exported"; then
    echo "exports differ from the headers (< declared, > exported):" >&2
    diff "$work/declared" "$work/exported" >&2 || true
    exit 1
fi
echo "exports: $(wc -l < "$work/exported") functions, as declared"

# Static, warnings as errors.
"$cc_path" -std=c17 -Wall -Wextra -Werror $extra $cflags "$hello" -o "$work/hello_static" \
    "$libdir/libsluice.a" -pthread -lssl -lcrypto -lwslay
"$work/hello_static" 127.0.0.1 "$port"
echo "install check passed"
