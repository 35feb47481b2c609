# Thin wrapper over CMake. Every target first makes sure the Debian
# packages are there (scripts/deps.sh is a no-op when they are).
BUILD      ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
CC         ?= cc
JOBS       ?= $(shell nproc)
FUZZ_SECONDS ?= 20

# make install [PREFIX=/usr/local] [DESTDIR=/staging]: libsluice (static and
# shared), include/sluice/*.h, sluice.pc and sluiced. PREFIX is baked into
# sluice.pc, so it is a configure-time setting; DESTDIR only stages.
PREFIX  ?= /usr/local
DESTDIR ?=

.PHONY: all deps run test asan fuzz bench clean format install

all: deps
	cmake -S . -B $(BUILD) -DCMAKE_C_COMPILER=$(CC) >/dev/null
	cmake --build $(BUILD) -j $(JOBS)

deps:
	@./scripts/deps.sh

# Starts sluiced on 127.0.0.1:8090 with data in ./local_data and the root
# user iggy/iggy (an IGGY_ROOT_USERNAME / IGGY_ROOT_PASSWORD environment
# wins, and credentials only apply when local_data is created).
run: all
	./$(BUILD)/sluiced --with-default-root-credentials

test: all
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

asan: deps
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_C_COMPILER=clang -DSLUICE_SANITIZE=ON \
	  -DCMAKE_BUILD_TYPE=Debug >/dev/null
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --test-dir $(ASAN_BUILD) --output-on-failure -j $(JOBS)

fuzz: deps
	cmake -S . -B $(FUZZ_BUILD) -DCMAKE_C_COMPILER=clang -DSLUICE_FUZZ=ON \
	  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build $(FUZZ_BUILD) -j $(JOBS)
	./tests/fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

# The long robustness runs (not in CI): 100 kill -9 cycles, 10^5 hostile frames, connection
# floods with memory bounds; figures printed at the end (tests/soak/run.sh, docs/reliability.md).
.PHONY: soak
soak: all
	./tests/soak/run.sh $(BUILD)

# Both benchmark programs; sluice-bench starts its own sluiced in a temporary
# directory under $TMPDIR (options: BENCH_ARGS="--rounds 7 --streams 4000").
BENCH_ARGS ?=
bench: all
	./$(BUILD)/bench/sl_bench_wire
	./$(BUILD)/bench/sluice-bench $(BENCH_ARGS)

install: all
	cmake -S . -B $(BUILD) -DCMAKE_INSTALL_PREFIX=$(PREFIX) >/dev/null
	cmake --build $(BUILD) -j $(JOBS)
	DESTDIR=$(DESTDIR) cmake --install $(BUILD)

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
