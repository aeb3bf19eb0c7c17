#!/usr/bin/env bash
# Lint (ruff) and type check (mypy), configured in pyproject.toml; exits non-zero on findings.
# Uses .venv-dev (requirements/dev.txt), created by scripts/setup.sh.
set -uo pipefail
cd "$(dirname "$0")/.."
status=0
echo "=== lint: ruff check ==="
.venv-dev/bin/ruff check . || status=1
echo "=== type check: mypy (engine/ and the Blender-free add-on modules) ==="
.venv-dev/bin/mypy || status=1
exit $status
