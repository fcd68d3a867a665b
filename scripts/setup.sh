#!/usr/bin/env bash
# Sets up rooftop on this machine; safe to re-run.
#   bash scripts/setup.sh          build + runtime dependencies, venv, package
#   bash scripts/setup.sh --learn  also scikit-learn (rooftop learn, predict, tune)
#   bash scripts/setup.sh --test   also what the tests need (scikit-learn included)
#   bash scripts/setup.sh --bench  also the reference tools of benchmarks/
# System packages come from Debian (apt) when running as root; otherwise the
# missing ones are listed. Python packages go into ./.venv. On a cluster use
# your site's libfabric instead (see README: "With your site's libfabric", and docs/install.md).
set -euo pipefail
cd "$(dirname "$0")/.."

want_test=0 want_bench=0 want_learn=0
for a in "$@"; do
  case "$a" in
    --learn) want_learn=1 ;;
    --test) want_test=1 ;;
    --bench) want_bench=1 ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) echo "setup.sh: unknown option $a" >&2; exit 2 ;;
  esac
done

say() { printf '\033[1m[setup]\033[0m %s\n' "$*"; }

# libhwloc-dev: NIC locality (packages, NUMA nodes, PCI devices) for the NIC policies.
pkgs=(g++ cmake ninja-build pkg-config libfabric-dev libfabric-bin libhwloc-dev python3-venv)
# Open MPI: the mpiexec launcher is tested for real on localhost.
# Chromium (headless): the HTML report is rendered to a screenshot.
if [ "$want_test" = 1 ]; then pkgs+=(libgtest-dev clang openmpi-bin chromium); fi
# iproute2 and iperf3: the emulated cluster's tests (namespaces and tc; iperf3
# measures the ground truth across an emulated link).
if [ "$want_test" = 1 ]; then pkgs+=(iproute2 iperf3); fi
# Slurm and munge: 'rooftop cluster up --slurm' runs a real slurmctld and one
# slurmd per emulated node (tests/cluster run collect under salloc + srun).
if [ "$want_test" = 1 ]; then pkgs+=(slurm-wlm munge); fi
# fio: benchmarks/storage_vs_fio.py (rooftop's local storage mode against fio;
# e2fsprogs makes its loop-mounted ext4 image, strace counts both sides' syscalls;
# perf: benchmarks/progress_syscalls.py).
if [ "$want_bench" = 1 ]; then pkgs+=(iperf3 ucx-utils fio e2fsprogs strace linux-perf); fi
# redis and memcached with their clients: rooftop service's presets are tested
# with the real programs (tests/service; the packages' own daemons are not used).
if [ "$want_test" = 1 ]; then pkgs+=(redis-server redis-tools memcached libmemcached-tools); fi
# strace: the progress test counts a spinning server's polling calls;
# e2fsprogs: the storage tests make loop-mounted ext4 images.
if [ "$want_test" = 1 ]; then pkgs+=(strace e2fsprogs); fi

missing=()
if command -v dpkg-query >/dev/null 2>&1; then
  for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  # libFuzzer's runtime ships in the versioned libclang-rt-N-dev package.
  if [ "$want_test" = 1 ] && command -v clang >/dev/null 2>&1; then
    v=$(clang --version | sed -n 's/.*clang version \([0-9]*\).*/\1/p' | head -1)
    rt="libclang-rt-${v}-dev"
    if [ -n "$v" ] && ! dpkg-query -W -f='${Status}' "$rt" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$rt")
    fi
  fi
fi

if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "installing Debian packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "${missing[@]}" >/dev/null
    if [ "$want_test" = 1 ]; then
      v=$(clang --version | sed -n 's/.*clang version \([0-9]*\).*/\1/p' | head -1)
      dpkg-query -W -f='${Status}' "libclang-rt-${v}-dev" 2>/dev/null | grep -q "install ok installed" \
        || apt-get install -y -qq "libclang-rt-${v}-dev" >/dev/null
    fi
  else
    echo "setup.sh: missing system packages: ${missing[*]}" >&2
    echo "  install them (sudo apt-get install ${missing[*]}) or load your site's modules" >&2
    echo "  (see README: \"With your site's libfabric\"), then re-run." >&2
    exit 1
  fi
fi

if [ ! -x .venv/bin/python ]; then
  say "creating .venv"
  python3 -m venv .venv
fi
extras=""
[ "$want_learn" = 1 ] && extras="[learn]"
[ "$want_test" = 1 ] && extras="[test]"  # the test extra includes learn
say "building the engine and installing rooftop into .venv (first time: ~1 min)"
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
.venv/bin/python -m pip install -q ".${extras}"
say "ready: $(.venv/bin/rooftop --version)"
