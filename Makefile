# Thin wrapper over CMake with the Ninja generator (docs/architecture.md,
# "Build", says why). Every target first makes sure the Debian packages are
# there (scripts/deps.sh is a no-op when they are), and each builds only what
# it needs: `make run` the server and the CLI, `make test` everything.
BUILD      ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
CC         ?= cc
JOBS       ?= $(shell nproc)
FUZZ_SECONDS ?= 20
# Debug, Release, RelWithDebInfo or MinSizeRel; empty keeps the build
# directory's (RelWithDebInfo for a new one, see CMakeLists.txt).
BUILD_TYPE ?=

# make install [PREFIX=/usr/local] [DESTDIR=/staging]: libsluice (static and
# shared), include/sluice/*.h, sluice.pc, sluiced, sluice, sluice-bench and
# the bash completion of sluice. PREFIX is baked into sluice.pc, so it is a
# configure-time setting; DESTDIR only stages (docs/client.md shows how to
# build against a staged tree).
PREFIX  ?= /usr/local
DESTDIR ?=

.PHONY: all deps run test asan fuzz bench clean format install sim cluster

# $(call configure,DIR,CMAKE ARGS): (re)configures DIR quietly; only CMake's
# warnings and errors show. Re-running it costs under a second and applies a
# changed CC or BUILD_TYPE. A directory configured by another generator (the
# Unix Makefiles of earlier versions) is reset first: CMake refuses to switch
# generators in place.
define configure
	@if [ -f $(1)/CMakeCache.txt ] && ! grep -qx 'CMAKE_GENERATOR:INTERNAL=Ninja' $(1)/CMakeCache.txt; then \
	  echo "$(1): configured for another generator; configuring it again for Ninja"; \
	  rm -rf $(1)/CMakeCache.txt $(1)/CMakeFiles; \
	fi
	@cmake -S . -B $(1) -G Ninja $(2) >/dev/null
endef

CONFIGURE_ARGS = -DCMAKE_C_COMPILER=$(CC) $(if $(BUILD_TYPE),-DCMAKE_BUILD_TYPE=$(BUILD_TYPE))

all: deps
	$(call configure,$(BUILD),$(CONFIGURE_ARGS))
	@cmake --build $(BUILD) -j $(JOBS)

deps:
	@./scripts/deps.sh

# Starts sluiced on 127.0.0.1:8090 with data in ./local_data and the root
# user iggy/iggy (an IGGY_ROOT_USERNAME / IGGY_ROOT_PASSWORD environment
# wins, and credentials only apply when local_data is created). Builds the
# server and the `sluice` tool the README talks to it with, nothing else.
run: deps
	$(call configure,$(BUILD),$(CONFIGURE_ARGS))
	@cmake --build $(BUILD) -j $(JOBS) --target sluiced sluice-cli
	./$(BUILD)/sluiced --with-default-root-credentials

# Three sluiced in cluster mode on loopback (docs/cluster.md); Ctrl-C stops them.
cluster: deps
	$(call configure,$(BUILD),$(CONFIGURE_ARGS))
	@cmake --build $(BUILD) -j $(JOBS) --target sluiced
	scripts/cluster.sh $(BUILD)/sluiced $(BUILD)/cluster

test: all
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

asan: deps
	$(call configure,$(ASAN_BUILD),-DCMAKE_C_COMPILER=clang -DSLUICE_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug)
	@cmake --build $(ASAN_BUILD) -j $(JOBS)
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --test-dir $(ASAN_BUILD) --output-on-failure -j $(JOBS)

fuzz: deps
	$(call configure,$(FUZZ_BUILD),-DCMAKE_C_COMPILER=clang -DSLUICE_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo)
	@cmake --build $(FUZZ_BUILD) -j $(JOBS)
	./tests/fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

# The consensus simulator (tests/sim): `make sim SEED=N` replays one seed
# verbosely enough to read a failure; `make sim SEEDS=N` runs seeds 1..N, two
# at a time (SIM_JOBS), for 3 and 5 replicas as each seed picks;
# SIM_ARGS='--replicas 5 --bug nack-quorum ...' passes more options.
SEEDS    ?= 1000
SIM_JOBS ?= 2
SIM_ARGS ?=
sim: deps
	$(call configure,$(BUILD),$(CONFIGURE_ARGS))
	@cmake --build $(BUILD) -j $(JOBS) --target sl_sim
	./$(BUILD)/tests/sim/sl_sim $(if $(SEED),--seed $(SEED),--seeds $(SEEDS) --jobs $(SIM_JOBS)) $(SIM_ARGS)

# The chaos run on a 3-node loopback cluster (tests/chaos, docs/reliability.md
# "Chaos"): CHAOS_CYCLES kill -9 cycles (3 by default; 100 for the long run),
# then cut links and a slow disk, then every acknowledged write checked.
# CHAOS_SEED=N replays a schedule; CHAOS_CHECK=metadata checks only what the
# metadata group replicates.
CHAOS_CYCLES ?= 3
.PHONY: chaos
chaos: deps
	$(call configure,$(BUILD),$(CONFIGURE_ARGS))
	@cmake --build $(BUILD) -j $(JOBS) --target sl_chaos sluiced
	SLUICE_SLUICED=$(BUILD)/sluiced CHAOS_CYCLES=$(CHAOS_CYCLES) ./$(BUILD)/tests/chaos/sl_chaos

# The long robustness runs (not in CI): 100 kill -9 cycles, 10^5 hostile frames, connection
# floods with memory bounds; figures printed at the end (tests/soak/run.sh, docs/reliability.md).
.PHONY: soak
soak: all
	./tests/soak/run.sh $(BUILD)

# Both benchmark programs; sluice-bench starts its own sluiced in a temporary
# directory under $TMPDIR (options: BENCH_ARGS="--rounds 7 --streams 4000").
BENCH_ARGS ?=
bench: deps
	$(call configure,$(BUILD),$(CONFIGURE_ARGS))
	@cmake --build $(BUILD) -j $(JOBS) --target sl_bench_wire sluice-bench sluiced
	./$(BUILD)/bench/sl_bench_wire
	./$(BUILD)/bench/sluice-bench $(BENCH_ARGS)

# What gets installed, and nothing else, is built first (the tests are not).
install: deps
	$(call configure,$(BUILD),$(CONFIGURE_ARGS) -DCMAKE_INSTALL_PREFIX=$(PREFIX))
	@cmake --build $(BUILD) -j $(JOBS) --target installed
	DESTDIR=$(DESTDIR) cmake --install $(BUILD)

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
