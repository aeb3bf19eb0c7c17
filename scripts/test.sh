#!/usr/bin/env bash
# Sets up the environments (scripts/setup.sh), runs the lint and type check (scripts/lint.sh)
# and the whole test suite:
#   engine tests on numpy 1.26 (.venv) and numpy 2.x (.venv313),
#   add-on tests in real Blender 4.2 LTS (.venv) and 5.2 LTS (.venv313).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

status=0
bash scripts/lint.sh || status=1
run() {  # label python pytest-args...
  local label=$1 py=$2; shift 2
  echo "=== $label ==="
  "$py" -m pytest -q "$@" || status=1
}
run "engine, Python 3.11 / numpy 1.26" .venv/bin/python --ignore=tests/addon
if [ -d tests/addon ]; then
  run "add-on, Blender 4.2 LTS" .venv/bin/python tests/addon
fi
if [ -x .venv313/bin/python ]; then
  run "engine, Python 3.13 / numpy 2.x" .venv313/bin/python --ignore=tests/addon
  if [ -d tests/addon ]; then
    run "add-on, Blender 5.2 LTS" .venv313/bin/python tests/addon
  fi
fi
exit $status
