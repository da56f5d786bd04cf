# gpuwasm front door. `make help` lists the targets.
BUILD      ?= build
ASAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan
BUILD_TYPE ?= RelWithDebInfo
JOBS       ?= $(shell nproc)
CMAKE_ARGS ?=
GENERATOR  := $(shell command -v ninja >/dev/null 2>&1 && echo Ninja || echo "Unix Makefiles")

.PHONY: all build configure test demo bench asan tsan fuzz deps ptx-update format format-check tidy clean help gpu-bundle

all: build

help:
	@echo "make            build $(BUILD)/gpuwasm ($(BUILD_TYPE))"
	@echo "make test       build, then run every test suite (ctest)"
	@echo "make demo       install missing deps, build, run the first example on the auto-chosen device"
	@echo "make bench      build and run the benchmarks in bench/"
	@echo "make asan       build with ASan+UBSan in $(ASAN_BUILD) and run every test suite"
	@echo "make tsan       build the concurrency tests with ThreadSanitizer in $(TSAN_BUILD) and run them"
	@echo "make fuzz       build the libFuzzer targets (clang) and run each for FUZZ_SECONDS (60)"
	@echo "make deps       install the Debian packages the build needs (scripts/install-deps.sh)"
	@echo "make ptx-update refresh committed .ptx fixtures from nvcc (needs the CUDA toolkit)"
	@echo "make gpu-bundle the GPU check, self-contained, in $(BUILD)/gpu-bundle (docs/development.md)"
	@echo "make format     reformat the C++ sources to .clang-format (scripts/format.sh)"
	@echo "make format-check  fail on any C++ source that differs from .clang-format (CI runs it)"
	@echo "make tidy       clang-tidy (.clang-tidy) over src/, after make; fails on any finding (CI runs it)"
	@echo "make clean      remove every build directory (build, build-asan, build-tsan, build-fuzz)"

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -G "$(GENERATOR)" -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_ARGS)

configure: $(BUILD)/CMakeCache.txt

build: configure
	cmake --build $(BUILD) -j $(JOBS)

# A private PostgreSQL server runs for the suite when PostgreSQL is installed (scripts/with-postgres.sh).
test: build
	scripts/with-postgres.sh ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

deps:
	scripts/install-deps.sh

demo:
	@scripts/install-deps.sh --check >/dev/null 2>&1 || scripts/install-deps.sh
	@$(MAKE) --no-print-directory build >/dev/null
	scripts/demo.sh $(BUILD)

bench: build
	scripts/bench.sh $(BUILD)

gpu-bundle: build
	scripts/gpu-bundle.sh $(BUILD) $(BUILD)/gpu-bundle

# The concurrency tests (ctest label `concurrency`, tests/CMakeLists.txt) under ThreadSanitizer.
# Guest memory traps (SIGSEGV on guard pages) cannot run under TSan, which takes over that signal:
# the one test built on them is left out.
tsan:
	cmake -S . -B $(TSAN_BUILD) -G "$(GENERATOR)" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPUWASM_TSAN=ON \
	  -DGPUWASM_BUILD_BENCH=OFF $(CMAKE_ARGS)
	cmake --build $(TSAN_BUILD) -j $(JOBS) --target common_tests host_tests wasm_tests runtime_tests server_tests
	TSAN_OPTIONS=halt_on_error=1 ctest --test-dir $(TSAN_BUILD) --output-on-failure -j $(JOBS) \
	  -L concurrency -E '^Concurrency\.traps_in_one_thread_do_not_disturb_another$$'

fuzz:
	scripts/fuzz.sh $(FUZZ_SECONDS)

asan:
	cmake -S . -B $(ASAN_BUILD) -G "$(GENERATOR)" -DCMAKE_BUILD_TYPE=Debug -DGPUWASM_SANITIZE=ON \
	  -DGPUWASM_BUILD_BENCH=OFF $(CMAKE_ARGS)
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  scripts/with-postgres.sh ctest --test-dir $(ASAN_BUILD) --output-on-failure -j $(JOBS)

ptx-update: configure
	cmake --build $(BUILD) --target ptx-update

format:
	scripts/format.sh

format-check:
	scripts/format.sh --check

# .clang-tidy over every source of src/ (four files per clang-tidy, JOBS at once) after a build
# (generated headers); fails on any finding.
tidy: configure
	git ls-files 'src/*.cc' | xargs -P $(JOBS) -n 4 clang-tidy -p $(BUILD) --quiet \
	  --extra-arg=-Wno-unknown-warning-option

# Every build directory the targets above make (fuzz: scripts/fuzz.sh's build-fuzz).
clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD) build-fuzz
