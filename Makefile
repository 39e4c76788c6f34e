# paddock — build, test, benchmark.
#   make            build bin/paddock and lib/libpaddock.a
#   make test       the whole test suite (unit, isolation, residue); ends with "N passed, N failed"
#   make bench      the side-by-side benchmark (paddock bench)
#   make asan       the test suite under ASan+UBSan
#   make tsan       the API tests against a ThreadSanitizer build of the daemon (TSAN_TESTS narrows)
#   make valgrind   the unit tests and a sample of isolation cases under valgrind
#   make run        the main job: the bundled requests, then the bundled submissions judged against
#                   examples/problems, through `paddock run` (results and verdicts in build/)
#   make examples   the bundled examples through `paddock exec`
#   make soak       100,000 sandbox lifecycles through the pools, then a residue count
#   make deps       install the Debian packages needed to build, test and benchmark (root)

CC      ?= cc
BUILD   ?= build
BIN     ?= bin
WARN    := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wmissing-declarations \
           -Wformat=2 -Wformat-security -Wno-format-nonliteral -Wno-format-truncation -Wpointer-arith -Wvla \
           -Wundef -Wcast-align -Wwrite-strings -Wimplicit-fallthrough
CFLAGS  ?= -O2 -g -D_FORTIFY_SOURCE=2
# flags the code needs whatever CFLAGS a caller passes (make asan overrides CFLAGS)
# public headers only: lib/paddock.h, pool/pool.h, server/server.h. Each layer's internal headers
# are on its own objects' include path alone (LAYER_INC below), so a higher layer cannot include them.
override CFLAGS += -std=gnu11 $(WARN) -fstack-protector-strong -fPIE -Ilib -Ipool -Iserver
LDFLAGS += -pie -Wl,-z,relro,-z,now
# libmicrohttpd is not linked: server/mhd.c loads it when a server starts (see mhd.h)
# libarchive, libcrypto and SQLite are loaded on first use too (lib/dl.c); the unit tests, which
# call them directly, link them
# libseccomp and jansson linked in from their archives when installed (Debian's -dev packages
# ship them): every paddock process, one per `paddock exec`, then maps and relocates two shared
# objects fewer (`paddock version` 0.88 -> 0.80 ms of CPU; docs/benchmarks.md). Both stay
# shared libraries where the archives are missing.
STATIC_LIBS := $(foreach l,seccomp jansson,$(if $(wildcard $(shell $(CC) -print-file-name=lib$(l).a)),$(l)))
STATIC_LINK := -Wl,-Bstatic $(STATIC_LIBS:%=-l%) -Wl,-Bdynamic
LDLIBS  := $(if $(STATIC_LIBS),$(STATIC_LINK)) \
           $(filter-out $(STATIC_LIBS:%=-l%),-lseccomp -ljansson) -lpthread
TEST_LDLIBS := -lsqlite3 -larchive -lcrypto

LIB_SRC := $(wildcard lib/*.c lib/*/*.c)
POOL_SRC := $(wildcard pool/*.c pool/*/*.c)
SERVER_SRC := $(wildcard server/*.c server/*/*.c)
CLI_SRC := $(wildcard cli/*.c)
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o)
POOL_OBJ := $(POOL_SRC:%.c=$(BUILD)/%.o)
SERVER_OBJ := $(SERVER_SRC:%.c=$(BUILD)/%.o)
CLI_OBJ := $(CLI_SRC:%.c=$(BUILD)/%.o)
UNIT_SRC := $(wildcard tests/unit/*.c)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
PROBE_SRC := $(wildcard tests/probes/*.c)
PROBE_BIN := $(PROBE_SRC:tests/probes/%.c=$(BUILD)/probes/%)

.PHONY: all deps run test test-loaded bench asan tsan valgrind examples soak fuzz clean format

LIBS    := $(BUILD)/libpaddock-server.a $(BUILD)/libpaddock-pool.a $(BUILD)/libpaddock.a

all: $(BIN)/paddock $(LIBS)

$(LIB_OBJ): LAYER_INC := -Ilib/internal
$(POOL_OBJ): LAYER_INC := -Ipool/internal
# unit tests and the soak test look inside the layers they test
TEST_INC := -Itests/unit -Ilib/internal -Ipool/internal

$(BUILD)/%.o: %.c $(wildcard lib/*.h lib/*/*.h pool/*.h pool/*/*.h server/*.h server/*/*.h cli/*.h)
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	@$(CC) $(CFLAGS) $(LAYER_INC) -c $< -o $@

$(BUILD)/libpaddock.a: $(LIB_OBJ)
	@echo "  AR      $@"
	@rm -f $@ && ar rcs $@ $^

$(BUILD)/libpaddock-pool.a: $(POOL_OBJ)
	@echo "  AR      $@"
	@rm -f $@ && ar rcs $@ $^

$(BUILD)/libpaddock-server.a: $(SERVER_OBJ)
	@echo "  AR      $@"
	@rm -f $@ && ar rcs $@ $^

$(BIN)/paddock: $(CLI_OBJ) $(LIBS)
	@mkdir -p $(BIN)
	@echo "  LD      $@"
	@$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $(CLI_OBJ) $(LIBS) $(LDLIBS)

$(BUILD)/tests/%: tests/unit/%.c $(wildcard tests/unit/*.h) tests/hostcount.h $(LIBS)
	@mkdir -p $(dir $@)
	@echo "  TEST    $@"
	@$(CC) $(CFLAGS) $(TEST_INC) $(LDFLAGS) -o $@ $< $(LIBS) $(LDLIBS) $(TEST_LDLIBS)

# probes run inside sandboxes: static, so they need nothing from the image
$(BUILD)/probes/%: tests/probes/%.c
	@mkdir -p $(dir $@)
	@echo "  PROBE   $@"
	@$(CC) -std=gnu11 -O1 -g -Wall -Wextra -Werror -static -o $@ $<

# TESTS: run-all patterns (default every file), e.g. make test TESTS="unit/reset api/sessions"
TESTS ?=
test: all $(UNIT_BIN) $(PROBE_BIN)
	@PADDOCK_BUILD=$(BUILD) PADDOCK=$(BIN)/paddock tests/run-all $(TESTS)

# the whole suite beside a busy loop on every CPU (tests/run-all: PADDOCK_TEST_LOAD)
test-loaded: all $(UNIT_BIN) $(PROBE_BIN)
	@PADDOCK_TEST_LOAD=$$(nproc) PADDOCK_BUILD=$(BUILD) PADDOCK=$(BIN)/paddock tests/run-all

$(BUILD)/soak: tests/soak/soak.c tests/hostcount.h tests/unit/tap.h $(LIBS)
	@echo "  SOAK    $@"
	@$(CC) $(CFLAGS) $(TEST_INC) $(LDFLAGS) -o $@ $< $(LIBS) $(LDLIBS) $(TEST_LDLIBS)

soak: $(BUILD)/soak
	$(BUILD)/soak

bench: all
	$(BIN)/paddock bench
	$(BIN)/paddock bench --http --rounds 5
	$(BIN)/paddock bench --judge

# ASan and UBSan end the process at their first report (-fno-sanitize-recover=all; LeakSanitizer
# exits 23), and tests/api/api.sh finds the report in a daemon's log. Their reports stay on stderr:
# ASan also writes from a sandbox's program-starting child, where a log_path outside the sandbox
# cannot be opened (it then ends the child: every exec failed).
# ASAN_TESTS: run-all patterns (default every file), e.g. make asan ASAN_TESTS="api/basics unit/"
# First a check of the report path of the paddock processes a test file runs itself (sb, sbt keep
# their stderr in a file): tests/san/asan_report.t runs an overflowing program as its paddock and
# must fail.
ASAN_TESTS ?=
asan:
	@mkdir -p build-asan/san
	@$(CC) -O1 -g -fsanitize=address -fno-omit-frame-pointer -o build-asan/san/overflow tests/san/overflow.c
	@if PADDOCK=build-asan/san/overflow tests/san/asan_report.t >/dev/null 2>&1; then \
	  echo "make asan: a sanitizer report did not fail its test file (tests/san/asan_report.t)" >&2; exit 1; fi
	UBSAN_OPTIONS="print_stacktrace=1 $(UBSAN_OPTIONS)" \
	  $(MAKE) BUILD=build-asan BIN=build-asan/bin CFLAGS="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" \
	  LDFLAGS="-fsanitize=address,undefined" TESTS="$(ASAN_TESTS)" test

# ThreadSanitizer on the daemon's threads: bin/paddock built into build-tsan/, then the API tests
# (TSAN_TESTS: run-all patterns, default every API file). tests/tsan.supp lists the reports judged
# benign, each with its reason. A data race does not stop the process, so TSan writes its reports
# into build-tsan/reports (log_path), not to stderr: a report from any process a test starts (a
# daemon however started, a cluster node, paddock run, bench) lands there, and tests/run-all fails
# the file that left one (PADDOCK_SANITIZER_REPORTS) even if the file's own checks all passed.
# First a check of that path itself: tests/san/race.t runs a racy program whose output and exit
# status it throws away, and must still be counted failed.
TSAN_TESTS ?= tests/api/
TSAN_ENV = TSAN_OPTIONS="suppressions=$(CURDIR)/tests/tsan.supp second_deadlock_stack=1 \
  log_path=$(CURDIR)/build-tsan/reports/tsan $(TSAN_OPTIONS)" PADDOCK_SANITIZER_REPORTS=$(CURDIR)/build-tsan/reports \
  PADDOCK_BUILD=build-tsan PADDOCK=build-tsan/bin/paddock
tsan:
	$(MAKE) BUILD=build-tsan BIN=build-tsan/bin CFLAGS="-O1 -g -fsanitize=thread -fno-omit-frame-pointer" \
	  LDFLAGS="-fsanitize=thread" all
	@mkdir -p build-tsan/san build-tsan/tests
	@$(CC) -O1 -g -fsanitize=thread -o build-tsan/san/race tests/san/race.c -lpthread
	@cp tests/san/race.t build-tsan/tests/tsan_race
	@if $(TSAN_ENV) tests/run-all build-tsan/tests/tsan_race >/dev/null; then \
	  echo "make tsan: a data race did not fail its test file (tests/san/race.t)" >&2; exit 1; fi
	@$(TSAN_ENV) tests/run-all $(TSAN_TESTS)

# valgrind 3.19 does not know clone3 or seccomp's flags: the modules that make sandboxes are
# checked by `make asan` instead
VALGRIND_UNITS := util capture result cgroup_v2 audit auditnames image imagestore
valgrind: all $(UNIT_BIN)
	@PADDOCK_BUILD=$(BUILD) PADDOCK=$(BIN)/paddock PADDOCK_VALGRIND=1 tests/run-all $(VALGRIND_UNITS:%=$(BUILD)/tests/%)

deps:
	@scripts/install-deps.sh

run: all
	@mkdir -p $(BUILD)
	$(BIN)/paddock run -j 4 examples/requests.jsonl -o $(BUILD)/results.jsonl
	@echo "results: $(BUILD)/results.jsonl (one JSON record per request)"
	$(BIN)/paddock run -j 2 --problems examples/problems examples/submissions.jsonl -o $(BUILD)/verdicts.jsonl
	@echo "verdicts: $(BUILD)/verdicts.jsonl (one judged record per submission)"
	examples/episode/grade.sh $(BIN)/paddock $(BUILD)/episode

# libFuzzer on every parser of untrusted bytes, FUZZ_SECONDS each (clang)
FUZZ_SECONDS ?= 60
fuzz:
	$(MAKE) -C fuzz run FUZZ_SECONDS=$(FUZZ_SECONDS)

examples: all
	@examples/run

# every C file of the layers, their subfolders included (lib/image, server/http, ...)
format:
	clang-format -i $(wildcard lib/*.[ch] lib/*/*.[ch] pool/*.[ch] pool/*/*.[ch] server/*.[ch] server/*/*.[ch] \
	  cli/*.[ch] tests/unit/*.[ch] tests/probes/*.c)

clean:
	rm -rf build build-asan build-tsan bin
