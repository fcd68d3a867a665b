#!/usr/bin/env bash
# Sets up and runs every test: engine unit tests (ctest), a short fuzz run of
# the wire decoder, then the end-to-end tests (pytest) with the real engine.
# FUZZ_SECONDS (default 20) sets the fuzz run's length; 0 skips it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --test

say() { printf '\033[1m[test]\033[0m %s\n' "$*"; }

say "engine unit tests (GoogleTest)"
cmake -S engine -B build/engine-tests -G Ninja -DROOFTOP_ENGINE_TESTS=ON >/dev/null
ninja -C build/engine-tests >/dev/null
ctest --test-dir build/engine-tests --output-on-failure

fuzz_s="${FUZZ_SECONDS:-20}"
if [ "$fuzz_s" != 0 ]; then
  say "fuzzing the wire decoder for ${fuzz_s} s (libFuzzer)"
  bash engine/fuzz/run.sh build/fuzz "$fuzz_s" > build/fuzz.log 2>&1 || { tail -40 build/fuzz.log; exit 1; }
  grep -E "Done [0-9]+ runs" build/fuzz.log || tail -3 build/fuzz.log
fi

say "end-to-end tests (pytest, real engine)"
exec .venv/bin/python -m pytest "$@"
