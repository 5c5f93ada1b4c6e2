# The commands people type.  CMake does the building, into $(BUILD).
#
#   make deps       install every Debian package the project needs (idempotent)
#   make build      configure and build everything (programs, libraries, modules)
#   make test       deps + build + every test suite, the kernel tests included
#   make test-kmod  the kernel tests alone (qemu)
#   make demo       the main job, end to end
#   make bench      the benchmarks; BENCH_QUICK=1 for a short run
#   make fuzz       both fuzzers, side by side, for FUZZ_SECONDS (default 600)
#   make fuzz-op    the operator source fuzzer for FUZZ_OP_SECONDS (default 40; FUZZ_SEED to replay)
#   make fuzz-kmod  cad.ko's stateful fuzzer in qemu for FUZZ_SECONDS (FUZZ_SEED to replay)
#   make test-kmod-sanitised  the kernel tests and that fuzzer under KASAN, KFENCE and lockdep (slow)
#   make install    build, then install into PREFIX (default /usr/local; README, "Install")
#   make dkms-install / dkms-uninstall   cad.ko under DKMS, rebuilt for each new kernel (docs/kernel.md)

BUILD ?= build
JOBS ?= 2
PYTHON := /usr/bin/python3
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
FUZZ_SECONDS ?= 600
FUZZ_OP_SECONDS ?= 40
PREFIX ?= /usr/local

# Everything the project needs on Debian 12.  linux-image-amd64 and
# linux-headers-amd64 bring a kernel and its matching headers: the modules
# are built against the headers and tested by booting that kernel in qemu.
# linux-source-6.1: the kernel's checkpatch.pl, for tests/kmod/test_checkpatch.py.
DEBIAN_PACKAGES := \
	build-essential cmake ninja-build pkg-config \
	clang libclang-rt-14-dev libclang-dev llvm-dev \
	googletest libgtest-dev \
	nlohmann-json3-dev libcli11-dev libhwloc-dev hwloc \
	linux-image-amd64 linux-headers-amd64 kmod \
	qemu-system-x86 busybox-static \
	openmpi-bin libopenmpi-dev gfortran scalapack-mpi-test mumps-test \
	python3 python3-pytest python3-jsonschema python3-matplotlib \
	groff-base man-db graphviz dkms \
	linux-source-6.1 flex bison bc libelf-dev libssl-dev

.PHONY: all deps build install dkms-install dkms-uninstall test test-unit test-fuzz test-py test-kmod test-kmod-sanitised demo bench fuzz fuzz-verifier fuzz-cadc \
	fuzz-op fuzz-kmod clean

all: build

deps:
	$(SUDO) apt-get update
	$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y $(DEBIAN_PACKAGES)

# In a git checkout, the commit-msg hook of .githooks (docs/contributing.md).
build:
	@if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then git config core.hooksPath .githooks; fi
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
	cmake --build $(BUILD) -j $(JOBS)

# cadc, cadrun, the libraries with the standard library, the headers,
# pkg-config files and cad.ko (tests/install/test_install.py installs
# the same way, into a temporary folder).
install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

# cad.ko's sources in /usr/src/cad-VERSION, built and installed by DKMS for
# the running kernel and every kernel installed later (kmod/dkms.sh).
CAD_VERSION := $(shell grep -o 'CAD VERSION [0-9.]*' CMakeLists.txt | cut -d' ' -f3)
dkms-install:
	$(SUDO) kmod/dkms.sh $(CURDIR) /usr/src/cad-$(CAD_VERSION) $(CAD_VERSION)
	$(SUDO) dkms install -m cad -v $(CAD_VERSION)

dkms-uninstall:
	-$(SUDO) dkms remove -m cad -v $(CAD_VERSION) --all
	$(SUDO) rm -rf /usr/src/cad-$(CAD_VERSION)

# In this order, also under make -j.
test:
	@$(MAKE) --no-print-directory deps
	@$(MAKE) --no-print-directory build
	@$(MAKE) --no-print-directory test-unit
	@$(MAKE) --no-print-directory test-fuzz
	@$(MAKE) --no-print-directory test-py

# GoogleTest (sanitised) and the C suites, one ctest entry per case.
test-unit:
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# Both fuzzers for a bounded 45 s, at once; then the operator source
# fuzzer for 40 s (it runs cadc and gcc, a core each, so not beside them).
test-fuzz:
	@$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=45
	@$(MAKE) --no-print-directory fuzz-op FUZZ_OP_SECONDS=40

# pytest: the kernel tests in qemu, the benchmark report format, the demo.
# (--durations: the slowest tests in the log, for keeping the run short.)
test-py:
	$(PYTHON) -m pytest -q --durations=40

test-kmod: build
	$(PYTHON) -m pytest -q tests/kmod

# The kernel's tests under a kernel built here with KASAN, KFENCE, lockdep
# and DEBUG_ATOMIC_SLEEP (tests/kmod/sanitised/build-kernel.sh: once, then
# cached in $(BUILD)/sanitised): the suites of tests/kmod and of
# tests/ops/test_kernel_ops.py that boot qemu, then the stateful fuzzer for
# SANITISED_FUZZ_SECONDS; any report in the kernel log fails them.  Both
# run even if the first fails.  Not part of `make test`: far too slow for
# CI (docs/testing.md).
SANITISED_FUZZ_SECONDS ?= 240
test-kmod-sanitised: build
	mkdir -p $(BUILD)/sanitised
	tests/kmod/sanitised/build-kernel.sh $(BUILD)/sanitised > $(BUILD)/sanitised/env
	@env=$$(cat $(BUILD)/sanitised/env); status=0; \
	env $$env $(PYTHON) -m pytest -q --durations=20 tests/kmod tests/ops/test_kernel_ops.py \
		--ignore=tests/kmod/test_dkms.py --ignore=tests/kmod/test_checkpatch.py || status=1; \
	env $$env $(PYTHON) tests/kmod/fuzz_kmod.py $(BUILD) $(SANITISED_FUZZ_SECONDS) $(FUZZ_SEED) || status=1; \
	exit $$status

# Each fuzzer for FUZZ_SECONDS: the program verifier from the verifier
# table's programs; the front end (algorithm files, .cadlib) from the
# standard library in both forms, the CLI cases and the built library.
# Corpora stay in $(BUILD)/fuzz*/corpus, crashes in .../crashes.  The two
# run side by side (one core each; each log printed whole when it ends);
# fuzz-verifier and fuzz-cadc are the halves, which expect a build.
fuzz: build
	@$(MAKE) --no-print-directory -j2 --output-sync=target fuzz-verifier fuzz-cadc

fuzz-verifier:
	mkdir -p $(BUILD)/fuzz/seeds $(BUILD)/fuzz/corpus $(BUILD)/fuzz/crashes
	$(BUILD)/bin/cad_fuzz_seeds $(BUILD)/fuzz/seeds
	$(BUILD)/bin/fuzz_verifier -max_total_time=$(FUZZ_SECONDS) -max_len=8192 -timeout=10 \
		-print_final_stats=1 -artifact_prefix=$(BUILD)/fuzz/crashes/ \
		$(BUILD)/fuzz/corpus $(BUILD)/fuzz/seeds

fuzz-cadc:
	rm -rf $(BUILD)/fuzz_cadc/seeds
	mkdir -p $(BUILD)/fuzz_cadc/seeds $(BUILD)/fuzz_cadc/corpus $(BUILD)/fuzz_cadc/crashes
	cp algorithms/*.cad algorithms/topologies/*.json tests/cli/cases/* $(BUILD)/lib/cad-std.cadlib $(BUILD)/fuzz_cadc/seeds/
	for f in algorithms/*.cad; do \
		$(BUILD)/bin/cadc fmt --to json $$f -o $(BUILD)/fuzz_cadc/seeds/$$(basename $$f .cad).json || exit 1; \
	done
	for f in algorithms/ops/*.c; do \
		$(BUILD)/bin/cadc op compile $$f -o $(BUILD)/fuzz_cadc/seeds/$$(basename $$f .c).cadop || exit 1; \
	done
	$(BUILD)/bin/fuzz_cadc -max_total_time=$(FUZZ_SECONDS) -max_len=16384 -timeout=10 -rss_limit_mb=4096 \
		-dict=tests/fuzz/cadc.dict -print_final_stats=1 -artifact_prefix=$(BUILD)/fuzz_cadc/crashes/ \
		$(BUILD)/fuzz_cadc/corpus $(BUILD)/fuzz_cadc/seeds

# Mutated operator sources (tests/ops/fuzz_op_source.py) through `cadc op
# check`: no signal, no timeout, JSON, located errors; an accepted one
# compiles, runs and agrees with gcc.  Findings in $(BUILD)/fuzz_op/crashes.
fuzz-op:
	$(PYTHON) tests/ops/fuzz_op_source.py $(BUILD) $(FUZZ_OP_SECONDS) --seed $(or $(FUZZ_SEED),1) --gcc

# The kernel module's fuzzer (tests/kmod/fuzz_kmod.py): FUZZ_SECONDS
# split between the settings of defer, the UBSAN build of cad.ko.
fuzz-kmod: build
	$(PYTHON) tests/kmod/fuzz_kmod.py $(BUILD) $(FUZZ_SECONDS) $(FUZZ_SEED)

# Like test, it installs what it needs first.
demo:
	@$(MAKE) --no-print-directory deps
	@$(MAKE) --no-print-directory build
	demo/demo.sh $(BUILD)

# The whole suite in one run; BENCH_QUICK=1 for a short one. Each program
# writes bench/results/<name>.json; report.py validates them, writes
# bench/report.md with its tables and plots (the README only links to it).
MPIRUN_BENCH = mpirun --allow-run-as-root --oversubscribe -n 2 --bind-to core \
	-x LD_PRELOAD=$(abspath $(BUILD))/lib/libcadmpi.so $(if $(BENCH_QUICK),-x BENCH_QUICK=$(BENCH_QUICK))
# rt_bench with CADRT_VERBOSE=1, its stderr kept in bench/results/rt-<name>.log:
# what each run's cadrt_init measured and decided (lanes, pushes), which
# holds for the whole run, and the counts of its transfers at the end.
# (CADRT_VERBOSE prints at init and finalize only.)  $(1): mpirun's
# options, $(2): the name.
rt_bench = $(MPIRUN_BENCH) -x CADRT_VERBOSE=1 $(1) $(BUILD)/bin/rt_bench --json bench/results/rt-$(2).json \
	2>bench/results/rt-$(2).log || { cat bench/results/rt-$(2).log >&2; exit 1; }
bench: build
	mkdir -p bench/results
	$(BUILD)/bin/core_bench --json bench/results/core.json
	$(BUILD)/bin/cadc_bench --json bench/results/cadc.json
	$(BUILD)/bin/op_bench --json bench/results/ops.json
	$(BUILD)/bin/irq_bench --json bench/results/interrupts.json
	for e in poll thread signal; do \
	  $(call rt_bench,-x CADRT_ENGINE=$$e,$$e); \
	  $(MPIRUN_BENCH) -x CADRT_ENGINE=$$e $(BUILD)/bin/rt_codelets --json bench/results/codelets-$$e.json || exit 1; \
	done
	$(call rt_bench,-x CADRT_ENGINE=thread -x CADRT_PUSH=0 -x BENCH_LABEL=thread-nopush,thread-nopush)
	$(call rt_bench,-x CADRT_ENGINE=thread -x CADRT_PUSH=0 -x CADRT_SPLIT=0 -x BENCH_LABEL=thread-nosplit,thread-nosplit)
	$(call rt_bench,--mca btl_vader_single_copy_mechanism none -x CADRT_ENGINE=poll -x CADRT_CMA=0 \
	  -x BENCH_LABEL=poll-nocma,poll-nocma)
	$(BUILD)/bin/cadrun -n 3 --bind core $(BUILD)/bin/seg_bench --json bench/results/segments.json
	$(PYTHON) bench/sim_check.py $(BUILD) --json bench/results/simulate.json
	$(PYTHON) bench/kernel_vm.py $(BUILD) --json bench/results/kernel-vm.json
	$(PYTHON) bench/report.py

clean:
	rm -rf $(BUILD)
