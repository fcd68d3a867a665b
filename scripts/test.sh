#!/usr/bin/env bash
# Sets up and runs every test: the Python checks (ruff, import-linter, mypy),
# the documentation's strict build (MkDocs),
# engine unit tests (ctest; built with warnings as
# errors), the same unit tests built with AddressSanitizer and
# UndefinedBehaviorSanitizer, a short fuzz run of the wire decoder, then the
# end-to-end tests (pytest) with the real engine.
# FUZZ_SECONDS (default 20) sets the fuzz run's length; 0 skips it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --test

say() { printf '\033[1m[test]\033[0m %s\n' "$*"; }

# The Python code's habits (versions pinned in pyproject's test extra; their
# settings are in pyproject.toml): lint, formatting, the import layers, types.
say "python checks: ruff, ruff format, import-linter, mypy"
.venv/bin/ruff check --quiet src tests benchmarks scripts
.venv/bin/ruff format --check --quiet src tests benchmarks scripts
mkdir -p build
PYTHONPATH=src .venv/bin/lint-imports --no-cache > build/lint-imports.log 2>&1 || { cat build/lint-imports.log; exit 1; }
.venv/bin/python -m mypy

# The documentation site: the reference pages generated from this tree's
# code, then a strict build (a broken link or anchor, a missing page or a
# page left out of mkdocs.yml's nav fails). Not --quiet: it would hide the
# warnings that --strict counts; the log is shown on failure.
say "documentation: reference pages from the code, mkdocs build --strict"
.venv/bin/python scripts/gen_reference.py >/dev/null
.venv/bin/mkdocs build --strict --site-dir build/site > build/mkdocs.log 2>&1 || { cat build/mkdocs.log; exit 1; }

# ninja --quiet: no progress lines, but every warning and error is shown.
say "engine unit tests (GoogleTest; warnings are errors)"
cmake -S engine -B build/engine-tests -G Ninja -DROOFTOP_ENGINE_TESTS=ON -DROOFTOP_WERROR=ON >/dev/null
ninja --quiet -C build/engine-tests
ctest --test-dir build/engine-tests --output-on-failure

# The same tests, built unoptimised (Debug: the quickest build; -O0 hides no
# finding) with ASan + UBSan. One process for all of them: a sanitized process
# takes ~0.25 s to start, so ctest's process per test would cost ~35 s more.
say "engine unit tests under AddressSanitizer + UndefinedBehaviorSanitizer"
cmake -S engine -B build/engine-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug \
  -DROOFTOP_ENGINE_TESTS=ON -DROOFTOP_SANITIZE=ON >/dev/null
ninja --quiet -C build/engine-asan
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
ASAN_OPTIONS=detect_leaks=1:detect_stack_use_after_return=1:check_initialization_order=1:strict_init_order=1 \
  build/engine-asan/engine_unit_tests --gtest_brief=1

fuzz_s="${FUZZ_SECONDS:-20}"
if [ "$fuzz_s" != 0 ]; then
  say "fuzzing the wire decoder for ${fuzz_s} s (libFuzzer)"
  bash engine/fuzz/run.sh build/fuzz "$fuzz_s" > build/fuzz.log 2>&1 || { tail -40 build/fuzz.log; exit 1; }
  grep -E "Done [0-9]+ runs" build/fuzz.log || tail -3 build/fuzz.log
fi

say "end-to-end tests (pytest, real engine)"
exec .venv/bin/python -m pytest "$@"
