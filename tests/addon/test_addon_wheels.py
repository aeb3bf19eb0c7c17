"""The release zip of linux-x64, with the numba and llvmlite wheels inside, installed into a
fresh Blender the way a user installs it, then used again after a restart.

The zip is built by tools/build_extension.py (Blender's own ``extension build
--split-platforms``); the wheels come from PyPI once and are kept in build/wheels/. Each
Blender session is a process of its own (tests/addon/fresh_blender.py): the compiler is
decided once per process, and numba must not be imported before the extension's
site-packages is on sys.path.

What Blender does, as measured here (4.2 and 5.2 alike): installing unpacks the wheels into
``extensions/.local/lib/pythonX.Y/site-packages``, shared by all extensions, and *appends* it
to sys.path, so in the install session a numba already importable (this test environment
has one) is the one imported; at the next start-up Blender puts that folder *before* its
own site-packages, so from then on the extension's numba is the one imported. A user's
Blender has no numba of its own, so the bundled one is imported in both sessions.
"""
import json
import os
import subprocess
import sys

import hb_blender as hb
import numpy as np
import pytest

ROOT = hb.ROOT
FRESH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fresh_blender.py")


def _build_linux_zip(out_dir):
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    try:
        import build_extension
    finally:
        sys.path.pop(0)
    return build_extension.build_platforms(["linux-x64"], str(out_dir))["linux-x64"], \
        build_extension


def _session(zip_path, user, out, *extra):
    env = {k: v for k, v in os.environ.items() if k not in ("HB_NO_JIT", "NUMBA_CACHE_DIR")}
    done = subprocess.run([sys.executable, FRESH, zip_path, str(out), "--user", str(user),
                           "--bakes", "1", *extra],
                          capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    with open(out) as f:
        return json.load(f), done.stdout


def _under(path, folder):
    return os.path.realpath(path).startswith(os.path.realpath(folder) + os.sep)


def test_platform_zip_installs_its_numba_and_bakes_compiled(tmp_path):
    if sys.platform != "linux" or os.uname().machine != "x86_64":
        pytest.skip("the linux-x64 zip installs on Linux x86_64 only")
    zip_path, build_extension = _build_linux_zip(tmp_path / "dist")
    wheels = [os.path.basename(w) for w in build_extension.wheels_for("linux-x64")]
    assert sorted(w.split("-")[0] for w in wheels) == ["llvmlite", "llvmlite", "numba", "numba"]
    user = tmp_path / "user"

    # The install session.
    first, log = _session(zip_path, user, tmp_path / "first.json")
    tag = "python{}.{}".format(*sys.version_info[:2])
    site = first["extension_site_packages"]
    assert site.endswith(os.path.join(".local", "lib", tag, "site-packages"))
    assert {"numba", "llvmlite"} <= set(first["site_packages"])
    assert "numba-0.68.1.dist-info" in first["site_packages"]
    assert first["jit_status"] == ["numba", ""]
    assert not first["numba_before_bake"]       # imported at the first bake, not at register
    if not _under(first["numba_file"], site):    # this environment's own numba came first
        home = os.path.dirname(os.path.dirname(first["numba_file"]))
        assert first["sys_path"].index(site) > first["sys_path"].index(home)
    assert "preparing the physics engine" in log
    # Compiled code is cached in the extension's user folder, never in the add-on's.
    assert first["jit_cache"] is True and _under(first["cache_path"], user)
    assert not _under(first["cache_path"], first["addon_dir"])
    assert any(f.endswith(".nbi") for f in first["cache_files"])
    assert first["addon_dir_pycache"] == []
    assert first["uncompiled"] == []

    # Blender restarted: the extension's own numba, and the cache of the first session.
    second, log = _session(zip_path, user, tmp_path / "second.json", "--installed")
    assert _under(second["numba_file"], site), second["numba_file"]
    # Byte-compiled by the add-on (Blender writes no .pyc): the next session imports fast.
    assert second["numba_pyc"] is True and "numba byte-compiled once" in log
    assert second["jit_status"] == ["numba", ""]
    assert second["probe_cache_hits"] >= 1          # loaded, not compiled again
    assert set(first["cache_files"]) <= set(second["cache_files"])
    for name, m in first["final"].items():          # the same bake, bit for bit
        np.testing.assert_array_equal(second["final"][name], m, err_msg=name)
