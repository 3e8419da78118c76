"""The persistent kernel cache: other processes, concurrent writers, corruption.

Every test uses its own empty cache folder (FUSEGRAD_CACHE_DIR is read at
each call, so a monkeypatched environment takes effect at once).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from fusegrad.runtime import disk_cache
from fusegrad.runtime.executor import compile_program
from fusegrad.runtime.stats import cache_info, clear_caches
from test_codegen_support import build, check, random_args


@pytest.fixture(autouse=True)
def _synchronous_compiles(monkeypatch):
    """Counters and paths are asserted call by call: compile on first use, not in the background."""
    monkeypatch.setenv("FUSEGRAD_ASYNC_COMPILE", "0")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SCRIPT = textwrap.dedent("""
    import json
    import numpy as np
    from fusegrad.ir import Builder, Emitter, TensorType, float32
    from fusegrad.runtime.executor import compile_program
    from fusegrad.runtime.stats import cache_info

    b = Builder()
    e = Emitter(b)
    x = b.input(TensorType((8, 5), float32))
    w = b.input(TensorType((5,), float32))
    b.program.outputs = [e.op("softmax", e.mul(e.tanh(x), w), axis=1), e.sum(e.exp(x), (0,))]
    args = [np.linspace(-1, 1, 40, dtype=np.float32).reshape(8, 5), np.linspace(0, 1, 5, dtype=np.float32)]
    out = compile_program(b.program)(args)
    info = cache_info()
    print(json.dumps({"compiled": info.kernels_compiled, "disk": info.disk_hits,
                      "out": [o.tolist() for o in out]}))
""")


def _spawn(cache: str) -> subprocess.Popen:
    env = dict(os.environ, FUSEGRAD_CACHE_DIR=cache, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("FUSEGRAD_DISK_CACHE", None)
    return subprocess.Popen([sys.executable, "-c", SCRIPT], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _result(proc: subprocess.Popen) -> dict:
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


def test_processes_share_the_disk_cache(tmp_path):
    """Two processes fill an empty cache at the same time (atomic writes); a third
    loads every kernel from disk and compiles none."""
    cache = str(tmp_path)
    first = [_result(p) for p in [_spawn(cache), _spawn(cache)]]
    third = _result(_spawn(cache))
    assert third["compiled"] == 0 and third["disk"] > 0
    assert first[0]["out"] == first[1]["out"] == third["out"]
    names = os.listdir(os.path.join(cache, disk_cache.SUBDIR))
    assert not [n for n in names if n.startswith(".tmp-")]


def _program():
    return build(lambda e, x, y: [e.sigmoid(e.mul(x, y)), e.sum(e.cos(x), (1,))], (5, 4), (4,))


def _module_files(folder):
    return sorted((folder / disk_cache.SUBDIR).glob("fusegrad_kernel_*.py"))


def test_modules_are_content_addressed(fresh):
    p = _program()
    check(p, random_args(p, np.random.default_rng(0)))
    files = _module_files(fresh)
    assert files
    for path in files:
        text = path.read_text()
        assert "@njit(cache=True" in text and "def kernel(" in text


def test_corrupt_module_file_is_rewritten(fresh):
    p = _program()
    args = random_args(p, np.random.default_rng(1))
    check(p, args)
    for path in _module_files(fresh):
        path.write_text("this is not python (")
    clear_caches()
    with pytest.warns(RuntimeWarning, match="corrupt"):
        check(p, args)


def test_corrupt_numba_cache_is_recompiled(fresh):
    p = _program()
    args = random_args(p, np.random.default_rng(2))
    check(p, args)
    data = list((fresh / disk_cache.SUBDIR / "__pycache__").glob("*.nb*"))
    assert data
    for path in data:
        path.write_bytes(b"garbage")
    clear_caches()
    before = cache_info()
    with pytest.warns(RuntimeWarning, match="unreadable"):
        check(p, args)
    assert cache_info().kernels_compiled > before.kernels_compiled
    clear_caches()
    before = cache_info()
    check(p, args)                      # the rebuilt entry loads again
    assert cache_info().kernels_compiled == before.kernels_compiled


def test_unusable_cache_folder_falls_back_to_memory(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("FUSEGRAD_CACHE_DIR", str(blocker))
    clear_caches()
    p = _program()
    with pytest.warns(RuntimeWarning, match="unusable"):
        compiled = check(p, random_args(p, np.random.default_rng(3)))
    assert "(in memory)" in compiled.explain()
    clear_caches()


def test_cache_dir_defaults_and_switch(monkeypatch, tmp_path):
    monkeypatch.delenv("FUSEGRAD_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert disk_cache.cache_dir() == os.path.join(str(tmp_path), "fusegrad")
    monkeypatch.setenv("FUSEGRAD_DISK_CACHE", "0")
    assert disk_cache.cache_dir() is None
    assert compile_program is not None
