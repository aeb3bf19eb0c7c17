#!/usr/bin/env bash
# Creates the project's environments (idempotent). Nothing else is needed on a fresh machine.
#   .venv     Python 3.11 + numpy 1.26 + bpy 4.2 LTS (Blender as a module) + numba 0.68 (the
#             engine's compiler, engine/core/jit.py) + test oracles
#   .venv313  Python 3.13 + numpy 2.x  + bpy 5.2 LTS + numba  (skipped with HB_ONLY_311=1)
#   .venv-dev Python 3.11 + ruff, mypy, fake-bpy-module        (skipped with HB_ONLY_311=1;
#             kept apart: fake-bpy-module must never share an environment with the real bpy)
set -euo pipefail
cd "$(dirname "$0")/.."

py311=${HB_PY311:-}
py313=${HB_PY313:-}
if [ -z "$py311" ]; then
  for c in python3.11 "$HOME/.pyenv/versions/3.11.7/bin/python" python3; do
    if command -v "$c" >/dev/null 2>&1 && "$c" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
      py311=$c; break
    fi
  done
fi
if [ -z "$py313" ]; then
  for c in python3.13 "$HOME/.pyenv/versions/3.13.0/bin/python"; do
    if command -v "$c" >/dev/null 2>&1 && "$c" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 13))'; then
      py313=$c; break
    fi
  done
fi

make_env() {  # name python requirements-file
  local dir=$1 py=$2 req=$3 stamp
  stamp="$dir/.requirements.$(sha1sum "$req" | cut -c1-12)"
  if [ -f "$stamp" ]; then return 0; fi
  if [ -z "$py" ]; then echo "setup: no Python for $dir found (set HB_PY311/HB_PY313)" >&2; return 1; fi
  echo "setup: creating $dir with $py from $req"
  [ -x "$dir/bin/python" ] || "$py" -m venv "$dir"
  "$dir/bin/python" -m pip install -q --disable-pip-version-check -r "$req"
  rm -f "$dir"/.requirements.*
  touch "$stamp"
}

make_env .venv "$py311" requirements/py311.txt
if [ "${HB_ONLY_311:-0}" != 1 ]; then
  make_env .venv313 "$py313" requirements/py313.txt
  make_env .venv-dev "$py311" requirements/dev.txt
fi
