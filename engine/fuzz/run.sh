#!/usr/bin/env bash
# Builds the wire-decoder fuzz target with clang (libFuzzer + ASan + UBSan)
# and runs it on the seed corpus for a while.
#
#   engine/fuzz/run.sh [BUILD_DIR] [SECONDS] [extra libFuzzer flags...]
#
# BUILD_DIR defaults to engine/build-fuzz, SECONDS to 20. Works from any
# directory. New inputs found go to BUILD_DIR/wire_fuzz_corpus (the seeds in
# engine/fuzz/corpus are only read), crash reproducers to
# BUILD_DIR/wire_fuzz-crash-*. Exits non-zero if the fuzzer finds a crash,
# leak, timeout or failed check. Environment: CXX (default clang++),
# JOBS (parallel build jobs, default 1).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
engine="$(dirname "$here")"

build="${1:-$engine/build-fuzz}"
secs="${2:-20}"
shift $(( $# < 2 ? $# : 2 ))

case "$secs" in
  ''|*[!0-9]*) echo "run.sh: SECONDS must be a whole number, got '$secs'" >&2; exit 2 ;;
esac

mkdir -p "$build"
build="$(cd "$build" && pwd)"  # absolute, relative to the caller's cwd

generator=()
if command -v ninja >/dev/null 2>&1 && [[ ! -f "$build/Makefile" ]]; then
  generator=(-G Ninja)
fi

cmake -S "$engine" -B "$build" "${generator[@]}" \
  -DCMAKE_CXX_COMPILER="${CXX:-clang++}" \
  -DROOFTOP_ENGINE_FUZZ=ON
cmake --build "$build" --target wire_fuzz --parallel "${JOBS:-1}"

work="$build/wire_fuzz_corpus"
mkdir -p "$work"

# UBSan only reports by default; make it abort so libFuzzer counts it.
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:abort_on_error=1:print_stacktrace=1}"
export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1}"

echo "run.sh: fuzzing wire decoder for ${secs}s (seeds: $here/corpus, new inputs: $work)"
rc=0
"$build/wire_fuzz" \
  -max_total_time="$secs" \
  -timeout=10 \
  -print_final_stats=1 \
  -artifact_prefix="$build/wire_fuzz-" \
  "$@" \
  "$work" "$here/corpus" || rc=$?

if [[ $rc -ne 0 ]]; then
  echo "run.sh: wire_fuzz failed (exit $rc); reproducers: $build/wire_fuzz-*" >&2
  exit "$rc"
fi
echo "run.sh: no crash"
