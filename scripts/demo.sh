#!/usr/bin/env bash
# The main job on a fresh machine: set up Python 3.11 + Blender 4.2 LTS (bpy wheel), bake the
# demo scene headless, save the baked .blend, render a preview strip and print a summary.
#   bash scripts/demo.sh [SCENE.blend] [--out DIR] [more hullabaloo bake options]
set -euo pipefail
cd "$(dirname "$0")/.."
HB_ONLY_311=1 bash scripts/setup.sh
exec .venv/bin/python hullabaloo_cli.py bake --out out/demo "$@"
