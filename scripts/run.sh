#!/usr/bin/env bash
# The main job on this machine: set up, then measure (rooftop probe).
# Extra arguments go to 'rooftop probe' (see .venv/bin/rooftop probe --help).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/rooftop probe "$@"
