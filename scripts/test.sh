#!/usr/bin/env bash
# Sets up the environments (scripts/setup.sh), runs the lint and type check (scripts/lint.sh)
# and the whole test suite:
#   engine tests on numpy 1.26 (.venv) and numpy 2.x (.venv313),
#   add-on tests in real Blender 4.2 LTS (.venv) and 5.2 LTS (.venv313).
# The two Pythons' suites run side by side (each is one process at a time, and compiling the
# engine's kernels cold, about a minute, happens in each of them several times); each one's
# output is printed when both are done, and kept in build/test-logs/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

status=0
bash scripts/lint.sh || status=1
logs=build/test-logs
mkdir -p "$logs"
run() {  # tag label python pytest-args...  (a pytest temp folder of its own: suites run at once)
  local tag=$1 label=$2 py=$3; shift 3
  echo "=== $label ==="
  "$py" -m pytest -q -p no:cacheprovider --basetemp="build/pytest-$tag" "$@"
}
suite() {  # python version-tag engine-label addon-label
  local py=$1 tag=$2 rc=0
  run "engine$tag" "$3" "$py" --ignore=tests/addon || rc=1
  if [ -d tests/addon ]; then
    run "addon$tag" "$4" "$py" tests/addon || rc=1
  fi
  return $rc
}
suite .venv/bin/python 311 "engine, Python 3.11 / numpy 1.26" "add-on, Blender 4.2 LTS" \
  > "$logs/py311.log" 2>&1 &
first=$!
second=
if [ -x .venv313/bin/python ]; then
  suite .venv313/bin/python 313 "engine, Python 3.13 / numpy 2.x" "add-on, Blender 5.2 LTS" \
    > "$logs/py313.log" 2>&1 &
  second=$!
fi
wait "$first" || status=1
if [ -n "$second" ]; then
  wait "$second" || status=1
fi
cat "$logs/py311.log"
if [ -n "$second" ]; then
  cat "$logs/py313.log"
fi
exit $status
