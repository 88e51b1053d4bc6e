#!/usr/bin/env bash
# Runs libFuzzer targets built by `make fuzz-build` (make fuzz, make fuzz-smoke; docs/fuzzing.md):
#
#   fuzz/run.sh BUILD_DIR SECONDS JOBS TARGET...
#
# Each target fuzz_<target> runs for SECONDS, JOBS targets at a time, on its committed seeds
# (fuzz/corpus/<target>), which it only reads: the new inputs it finds go to
# BUILD_DIR/fuzz-corpus/<target>/ and what it finds wrong (a crash, a sanitizer report, an input
# running over the time limit, over 2 GB of memory) to BUILD_DIR/fuzz-artifacts/<target>/. Its
# output is BUILD_DIR/fuzz-logs/<target>.log. Prints one line per target and exits 1 when any
# target found something. The inputs of earlier findings, fuzz/regressions/<target>, are not read
# here: the ctest tests fuzz_replay.<target> replay them.
#
# The time limit per input is 10 s for the text and YAML readers. The HDF5 readers parse a file
# first in a child process that they stop after 30 s (core/util/isolated.h): that is how the
# program handles a file that makes HDF5 loop. Their limit is 75 s, so that only a hang the
# program does not stop itself is a finding.
set -euo pipefail

if (($# < 4)); then
  echo "usage: $0 BUILD_DIR SECONDS JOBS TARGET..." >&2
  exit 2
fi
build_dir=$1
seconds=$2
jobs=$3
shift 3
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
logs=$build_dir/fuzz-logs
mkdir -p "$logs"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$root/tests/lsan.supp}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
# The targets only read files; one thread each keeps the JOBS targets on JOBS cores.
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
# The targets write their input files under $TMPDIR (fuzz/fuzz_common.cpp): here a directory of
# this run, in memory when /dev/shm exists, removed at the end (a target stopped by a finding
# cannot remove its own).
tmp_root=${TMPDIR:-/tmp}
if [[ -z ${TMPDIR:-} && -d /dev/shm && -w /dev/shm ]]; then
  tmp_root=/dev/shm
fi
TMPDIR=$(mktemp -d "$tmp_root/attnlab-fuzz-run.XXXXXX")
export TMPDIR
trap 'rm -rf "$TMPDIR"' EXIT

time_limit() {
  case $1 in
    corpus | bleu | config | cluster) echo 10 ;;
    *) echo 75 ;;
  esac
}

run_target() {
  local target=$1
  local binary=$build_dir/fuzz/fuzz_$target
  local scratch=$build_dir/fuzz-corpus/$target
  local artifacts=$build_dir/fuzz-artifacts/$target
  mkdir -p "$scratch" "$artifacts"
  local dict=()
  if [[ -f $root/fuzz/dicts/$target.dict ]]; then
    dict=("-dict=$root/fuzz/dicts/$target.dict")
  fi
  "$binary" -max_total_time="$seconds" -timeout="$(time_limit "$target")" -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$artifacts/" "${dict[@]}" \
    "$scratch" "$root/fuzz/corpus/$target" >"$logs/$target.log" 2>&1
}

# Files in a target's artifact directory. Two kinds are written while the fuzzer goes on: inputs
# slower than 10 s (slow-unit-*), and, for the readers that parse a file first in a child process
# and go on only when it succeeded, the input of a sanitizer report in that child (a damaged file
# that makes HDF5 read out of bounds; the program treats the file as damaged, an Error). Both are
# listed, not failures; anything the fuzzer's own process meets stops it and fails the target.
artifact_count() {
  mkdir -p "$build_dir/fuzz-artifacts/$1"
  find "$build_dir/fuzz-artifacts/$1" -type f | wc -l
}

# stat::average_exec_per_sec and friends from a log's final statistics.
final_stat() {
  sed -n "s/^stat::$2: *//p" "$1" | tail -n 1
}

for target in "$@"; do
  if [[ ! -x $build_dir/fuzz/fuzz_$target ]]; then
    echo "fuzz: $build_dir/fuzz/fuzz_$target is not built (make fuzz-build)" >&2
    exit 2
  fi
done

echo "fuzz: $# target(s), ${seconds} s each, $jobs at a time; logs in $logs"
declare -A pids=() artifacts_before=()
failed=()
finish() {
  local target=$1 status=$2 log=$logs/$1.log
  if ((status == 0)); then
    printf 'fuzz: %-10s ok      %8s runs, %6s exec/s, %4s new inputs, coverage %s\n' "$target" \
      "$(final_stat "$log" number_of_executed_units)" "$(final_stat "$log" average_exec_per_sec)" \
      "$(final_stat "$log" new_units_added)" \
      "$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2)"
    local listed=$(($(artifact_count "$target") - ${artifacts_before[$target]}))
    if ((listed > 0)); then
      printf 'fuzz: %-10s %d slow input(s) or report(s) of a child process, in %s\n' "$target" \
        "$listed" "$build_dir/fuzz-artifacts/$target/"
    fi
  else
    failed+=("$target")
    printf 'fuzz: %-10s FAILED (exit %d); the end of %s:\n' "$target" "$status" "$log"
    tail -n 60 "$log"
  fi
}
for target in "$@"; do
  while ((${#pids[@]} >= jobs)); do
    status=0
    wait -n -p done_pid "${pids[@]}" || status=$?
    for name in "${!pids[@]}"; do
      if [[ ${pids[$name]} == "$done_pid" ]]; then
        unset "pids[$name]"
        finish "$name" "$status"
      fi
    done
  done
  artifacts_before[$target]=$(artifact_count "$target")
  run_target "$target" &
  pids[$target]=$!
done
for name in "${!pids[@]}"; do
  status=0
  wait "${pids[$name]}" || status=$?
  finish "$name" "$status"
done

if ((${#failed[@]})); then
  echo "fuzz: findings in ${failed[*]}; inputs in $build_dir/fuzz-artifacts/<target>/" >&2
  exit 1
fi
echo "fuzz: no findings"
