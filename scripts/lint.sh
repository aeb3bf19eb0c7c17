#!/usr/bin/env bash
# Lint (ruff) and type check (mypy), configured in pyproject.toml; exits non-zero on findings.
# Uses .venv-dev (requirements/dev.txt), created by scripts/setup.sh.
set -uo pipefail
cd "$(dirname "$0")/.."
status=0
echo "=== lint: ruff check ==="
.venv-dev/bin/ruff check . || status=1
echo "=== type check: mypy (engine/ and the Blender-free add-on modules) ==="
# The repository root is the extension's package (__init__.py; addon/ imports ..engine), so
# mypy names modules after the folder the repository is in, and refuses to start when that
# name is not a Python identifier (a clone in /tmp/ci-clone). Then it runs on links to the
# sources from a folder named hullabaloo.
root=$(pwd)
if [[ $(basename "$root") =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]]; then
  .venv-dev/bin/mypy || status=1
else
  stage=$(mktemp -d)
  mkdir "$stage/hullabaloo"
  for f in __init__.py pyproject.toml engine addon; do ln -s "$root/$f" "$stage/hullabaloo/$f"; done
  (cd "$stage/hullabaloo" && "$root/.venv-dev/bin/mypy") || status=1
  rm -rf "$stage"
fi
exit $status
