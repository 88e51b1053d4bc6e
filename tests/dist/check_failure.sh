#!/bin/sh
# Runs a failing two-rank job and checks that it ends non-zero within 30 s and that its output
# names the failed rank and the reason.
#   check_failure.sh <expected text> <command...>
# Each "|"-separated part of <expected text> must appear in the job's stderr or stdout.
set -u
expected=$1
shift
command_line="$*"
limit=30
out=$(mktemp)
err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT

start=$(date +%s)
# The outer timeout only keeps a hung job from outliving the test; a hang is a failure.
timeout -s KILL $((limit * 2)) "$@" >"$out" 2>"$err"
status=$?
elapsed=$(($(date +%s) - start))

fail() {
  echo "FAIL: $1 (exit status $status after ${elapsed} s)"
  echo "--- command: $command_line"
  echo "--- stdout:"; cat "$out"
  echo "--- stderr:"; cat "$err"
  exit 1
}

[ "$status" -ne 0 ] || fail "the job exited 0"
[ "$elapsed" -lt "$limit" ] || fail "the job took ${elapsed} s, the limit is ${limit} s"
old_ifs=$IFS
IFS='|'
for text in $expected; do
  cat "$out" "$err" | grep -F -q -- "$text" || fail "the output does not contain '$text'"
done
IFS=$old_ifs
echo "ok: exit status $status after ${elapsed} s, output names: $expected"
