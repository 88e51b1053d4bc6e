# attnlab: one entry point for setup, build, tests, lint, benchmarks and a first run.
#   make deps   make (build)   make test   make test-sanitize   make lint   make format   make bench
#   make bench-scaling   make run    make fuzz   make fuzz-smoke   make install   make clean
SHELL := bash
.SHELLFLAGS := -eo pipefail -c
.DEFAULT_GOAL := all

BUILD_DIR ?= build
ASAN_DIR ?= build-asan
FUZZ_DIR ?= build-fuzz
JOBS ?= $(shell nproc)
BUILD_TYPE ?= Release
# CI=true turns warnings into errors; WERROR=ON|OFF overrides either way.
WERROR ?= $(if $(filter true,$(CI)),ON,OFF)
CTEST_TIMEOUT ?= 300
# Debian's python3 is the one apt installs h5py, pandas and pytest for (a pyenv python3 earlier on
# PATH would not see them).
PYTHON ?= $(firstword $(wildcard /usr/bin/python3) python3)
BENCH_ARGS ?=
# make install: attnlab in $(PREFIX)/bin, its Python and scripts in $(PREFIX)/share/attnlab.
PREFIX ?= /usr/local

# Every Debian package the project needs: toolchain, numerics, MPI, HDF5, config and CLI libraries,
# tests and benchmarks, tokenizer, ICU (BLEU's intl tokenizer and -lc), Python analysis and
# tests (python3-regex: the reference intl tokenizer; python3-torch: the PyTorch parity test and
# make bench's reference; python3-plotly: report.html; chromium: the test that loads report.html
# in a real browser), lint, clang with OpenMP and libFuzzer (make fuzz), Bible texts for the
# small parallel corpus, and Slurm with iproute2 for the one- and two-node clusters of the sweep
# tests. ocl-icd-opencl-dev is only a Recommends of libdnnl-dev, but Debian's dnnl-config.cmake
# (built with the OpenCL GPU runtime) calls find_package(OpenCL REQUIRED), so it must be named here.
DEPS := build-essential cmake pkg-config git \
  libopenblas-dev libdnnl-dev ocl-icd-opencl-dev libopenmpi-dev openmpi-bin libhdf5-dev hdf5-tools \
  libboost-program-options-dev libyaml-cpp-dev \
  libgtest-dev libgmock-dev libbenchmark-dev \
  libsentencepiece-dev sentencepiece libicu-dev \
  python3 python3-h5py python3-numpy python3-pandas python3-matplotlib python3-scipy python3-pytest \
  python3-statsmodels python3-yaml python3-sentencepiece python3-regex python3-torch python3-plotly \
  chromium \
  clang-format clang-tidy shellcheck \
  clang libomp-14-dev libclang-rt-14-dev \
  libsword-utils sword-text-web sword-text-sparv \
  slurmctld slurmd slurm-client munge iproute2

SUDO := $(if $(filter 0,$(shell id -u)),,sudo)

# OpenBLAS kernel for this CPU (see cluster/env.sh and the README); a value the user set wins.
ifeq ($(origin OPENBLAS_CORETYPE),undefined)
OPENBLAS_CORETYPE := $(shell bash $(CURDIR)/cluster/env.sh)
endif
ifneq ($(OPENBLAS_CORETYPE),)
export OPENBLAS_CORETYPE
endif

# Sources that clang-format checks (C++ under core/, tests/, bench/, fuzz/) and clang-tidy checks
# (core/).
FORMAT_DIRS := $(wildcard core tests bench fuzz)
FORMAT_FILES = $(shell find $(FORMAT_DIRS) -type f \( -name '*.h' -o -name '*.cpp' \) | sort)
TIDY_FILES = $(shell find core -type f -name '*.cpp' | sort)

.PHONY: all deps configure build install test test-fast test-sanitize fuzz-build fuzz fuzz-smoke lint \
  format bench bench-scaling run clean

all: build

deps:
	@missing=""; \
	for pkg in $(DEPS); do \
	  status=$$(dpkg-query -W -f='$${Status}' "$$pkg" 2>/dev/null || true); \
	  [[ $$status == "install ok installed" ]] || missing="$$missing $$pkg"; \
	done; \
	if [[ -z $$missing ]]; then \
	  echo "deps: all $(words $(DEPS)) packages are installed"; \
	else \
	  echo "deps: installing$$missing"; \
	  $(SUDO) apt-get update -q; \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
	    --no-install-recommends -o DPkg::Lock::Timeout=600 $$missing; \
	fi

# Every target that builds starts with deps (a quick dpkg query when all are installed), so each of
# them, `make test` included, works as the first command on a fresh Debian 12 machine.
configure: deps
	cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) -DATTNLAB_WERROR=$(WERROR)

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

# Puts attnlab on PATH ($(PREFIX)/bin) with what it runs besides itself ($(PREFIX)/share/attnlab:
# the analysis package, the corpus scripts, cluster/env.sh, experiments and profiles); DESTDIR is
# honoured for staged installs. Only the program is built, not the tests.
install: configure
	cmake --build $(BUILD_DIR) --target attnlab -j $(JOBS)
	cmake --install $(BUILD_DIR) --prefix $(PREFIX)

# ctest runs two tests at once on two cores, so each gets one OpenMP and one OpenBLAS thread (tests
# of threading set their counts themselves): idle OpenBLAS threads spin in sched_yield and made a
# 70 s test take 230 s when the cores were shared.
TEST_THREADS := OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1

# ctest, then pytest over tests/python when it holds tests (pytest's exit code 5, "no tests
# collected", is not a failure).
test: build
	@echo "OpenBLAS kernel: $${OPENBLAS_CORETYPE:-chosen by OpenBLAS}"
	@ctest_status=0; \
	$(TEST_THREADS) ctest --test-dir $(BUILD_DIR) --output-on-failure -j 2 \
	  --timeout $(CTEST_TIMEOUT) || ctest_status=$$?; \
	pytest_result="none"; pytest_status=0; \
	if [[ -n $$(find tests/python -name 'test_*.py' -o -name '*_test.py' 2>/dev/null) ]]; then \
	  $(PYTHON) -m pytest -q tests/python || pytest_status=$$?; \
	  case $$pytest_status in \
	    0) pytest_result=ok ;; \
	    5) pytest_result="collected nothing"; pytest_status=0 ;; \
	    *) pytest_result=FAILED ;; \
	  esac; \
	fi; \
	if [[ $$ctest_status == 0 ]]; then ctest_result=ok; else ctest_result=FAILED; fi; \
	echo "make test: ctest $$ctest_result, pytest $$pytest_result"; \
	[[ $$ctest_status == 0 && $$pytest_status == 0 ]]

# The inner loop: ctest without the slow-train tests, pytest without the tests marked slow (sweeps,
# Slurm clusters, recomputed reports). Under 3 minutes on 2 cores after a build; `make test` runs
# everything.
test-fast: build
	$(TEST_THREADS) ctest --test-dir $(BUILD_DIR) --output-on-failure -j 2 -LE slow \
	  --timeout $(CTEST_TIMEOUT)
	$(PYTHON) -m pytest -q -m "not slow" tests/python

# Unit tests (not MPI) under AddressSanitizer and UndefinedBehaviorSanitizer, with libstdc++'s
# bounds checks on operator[]. RelWithDebInfo keeps the gradient checks fast enough for CI.
# Warnings stay warnings here: GCC's -Wmaybe-uninitialized and -Wstringop-* misfire on instrumented
# code, and the plain build already holds the warning bar.
# LeakSanitizer stays on; the MPI tests are left out because Open MPI keeps its allocations until
# exit by design, which LeakSanitizer would report as leaks of ours.
test-sanitize: deps
	cmake -S . -B $(ASAN_DIR) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DATTNLAB_WERROR=OFF \
	  -DATTNLAB_SANITIZE=address,undefined -DCMAKE_CXX_FLAGS=-D_GLIBCXX_ASSERTIONS
	cmake --build $(ASAN_DIR) -j $(JOBS)
	ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp \
	  UBSAN_OPTIONS=print_stacktrace=1 \
	  $(TEST_THREADS) ctest --test-dir $(ASAN_DIR) -L unit -LE mpi --output-on-failure -j 2 \
	  --timeout $$(( 3 * $(CTEST_TIMEOUT) ))

# Fuzzing (docs/fuzzing.md): the libFuzzer targets of fuzz/, built with clang, AddressSanitizer
# and UndefinedBehaviorSanitizer in $(FUZZ_DIR)/ (only the targets and the layers they link), then
# each run for FUZZ_SECONDS, JOBS at a time, on its committed seeds and regressions with a 10 s
# limit per input and 2 GB of memory. New inputs go to $(FUZZ_DIR)/fuzz-corpus/<target>/, what
# fails to $(FUZZ_DIR)/fuzz-artifacts/<target>/. make fuzz-smoke is the short run of CI.
FUZZ_TARGETS ?= config cluster run_log checkpoint corpus bleu
FUZZ_SECONDS ?= 600
FUZZ_SMOKE_SECONDS ?= 20
fuzz-build: deps
	cmake -S . -B $(FUZZ_DIR) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DATTNLAB_FUZZ=ON \
	  -DATTNLAB_WERROR=OFF -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++
	cmake --build $(FUZZ_DIR) -j $(JOBS) --target $(addprefix fuzz_,$(FUZZ_TARGETS))

fuzz: fuzz-build
	fuzz/run.sh $(FUZZ_DIR) $(FUZZ_SECONDS) $(JOBS) $(FUZZ_TARGETS)

fuzz-smoke: FUZZ_SECONDS = $(FUZZ_SMOKE_SECONDS)
fuzz-smoke: fuzz

# clang-format and clang-tidy both run, so one report shows every finding.
lint: configure
	@format_result=ok; tidy_result=ok; \
	echo "clang-format over $(words $(FORMAT_FILES)) files in $(FORMAT_DIRS)"; \
	clang-format --dry-run --Werror $(FORMAT_FILES) || format_result=FAILED; \
	echo "clang-tidy over $(words $(TIDY_FILES)) files in core/"; \
	printf '%s\n' $(TIDY_FILES) | xargs -P $(JOBS) -n 4 clang-tidy -p $(BUILD_DIR) --quiet 2>&1 \
	  | { grep -v -E '^[0-9]+ warnings? generated\.$$' || true; } || tidy_result=FAILED; \
	echo "make lint: clang-format $$format_result, clang-tidy $$tidy_result"; \
	[[ $$format_result == ok && $$tidy_result == ok ]]

format:
	clang-format -i $(FORMAT_FILES)

# Builds the benchmark binaries and runs bench/run_bench.py: attnlab against PyTorch (Debian's
# python3-torch) alternately on the same CPU, results in docs/results/bench.md (about 15 minutes
# on an idle 2-core machine). BENCH_ARGS=--quick for a short run.
bench: configure
	cmake --build $(BUILD_DIR) -j $(JOBS) --target attnlab_kernels attnlab_train_bench
	$(PYTHON) bench/run_bench.py --build-dir $(BUILD_DIR) $(BENCH_ARGS)
	$(PYTHON) bench/attention_scaling.py --build-dir $(BUILD_DIR)

# Data-parallel scaling against `attnlab plan`'s cost model: builds the program and runs
# bench/scaling.py, which trains two widths for 1 rank, 2 ranks on one node (mpirun) and 2 nodes of
# cluster/local-slurm.sh's two-node Slurm, probes the link between the nodes and writes
# docs/results/scaling.md (about 45 minutes; needs root for the nodes' namespaces).
# SCALING_PAUSE=PATTERN[:PATTERN...] stops the processes whose command line holds a PATTERN during
# each timing window and continues them after it (not libFuzzer targets: they time inputs on the
# wall clock and would report a false timeout); SCALING_ARGS passes more options.
SCALING_PAUSE ?=
SCALING_ARGS ?=
bench-scaling: configure
	cmake --build $(BUILD_DIR) --target attnlab -j $(JOBS)
	SCALING_PAUSE='$(SCALING_PAUSE)' $(PYTHON) bench/scaling.py --binary $(BUILD_DIR)/attnlab \
	  $(SCALING_ARGS)

# The default study (experiments/small/study.yaml): prepares the Bible en->es data, trains its four
# rows (base and three changes) x 2 seeds through the local launcher (one rank per run, two at a
# time; completed runs are skipped and unfinished ones resume on a re-run) and writes the report
# (about 25 minutes on 2 cores). Only the program is built, not the tests.
STUDY ?= experiments/small/study.yaml
STUDY_DIR ?= runs/study
run: configure
	cmake --build $(BUILD_DIR) --target attnlab -j $(JOBS)
	./$(BUILD_DIR)/attnlab data bible --out data/bible
	./$(BUILD_DIR)/attnlab sweep $(STUDY) --launcher local --out $(dir $(STUDY_DIR))
	$(PYTHON) -m analysis.report $(STUDY_DIR)
	@echo "report: $(STUDY_DIR)/report/report.md"

clean:
	rm -rf $(BUILD_DIR) $(ASAN_DIR) $(FUZZ_DIR)
