"""codegen/layout_copy.py: row-major copies of transposed arrays, in Numba tiles where Numba is
set up in the process and in NumPy blocks before that (a first call on the reference executor
must not wait ~0.4 s for Numba's set-up to copy a gradient)."""
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from fusegrad.codegen import layout_copy


def _arrays():
    rng = np.random.default_rng(0)
    base2 = rng.standard_normal((300, 700)).astype(np.float32)
    base3 = rng.standard_normal((3, 200, 90)).astype(np.float64)
    large = rng.standard_normal((1100, 1000)).astype(np.float32)   # (a copy split over threads)
    return {"transpose": base2.T, "permute 3-d": base3.transpose(2, 0, 1),
            "transposed slice": base2[:, 1:650].T, "batched transpose": base3.transpose(0, 2, 1),
            "large transposed slice": large[3:, 1:].T}


@pytest.mark.parametrize("numba_ready", [False, True], ids=["numpy blocks", "numba tiles"])
@pytest.mark.parametrize("name", list(_arrays()))
def test_contiguous_copy_is_exact(name, numba_ready, monkeypatch):
    monkeypatch.setattr(layout_copy, "numba_set_up", lambda: numba_ready)
    array = _arrays()[name]
    assert array.size >= layout_copy.MIN_COPY_ELEMENTS and layout_copy.reads_across_memory(array)
    copy = layout_copy.contiguous_copy(array)
    assert copy.flags.c_contiguous
    np.testing.assert_array_equal(copy, array)


def test_a_large_copy_runs_in_row_blocks_of_whole_tiles(monkeypatch):
    """A copy of at least threaded.MIN_ELEMENTS runs on the threads, each block of rows a
    whole number of tiles (so each thread writes rows of its own)."""
    blocks = []
    real = layout_copy._tiled_copy
    monkeypatch.setattr(layout_copy, "numba_set_up", lambda: True)
    monkeypatch.setattr(layout_copy.threaded, "thread_count", lambda: 2)
    monkeypatch.setattr(layout_copy, "_tiled_copy", lambda s, d: (blocks.append(d.shape[1]), real(s, d)))
    array = np.random.default_rng(2).standard_normal((1000, 1300)).astype(np.float32).T
    np.testing.assert_array_equal(layout_copy.contiguous_copy(array), array)
    tiles = -(-1300 // layout_copy.TILE_ROWS)
    assert sorted(blocks) == sorted([tiles // 2 * layout_copy.TILE_ROWS, 1300 - tiles // 2 * layout_copy.TILE_ROWS])


@pytest.mark.parametrize("numba_ready", [False, True], ids=["numpy blocks", "numba tiles"])
def test_a_large_permute_of_three_dims_copies_in_blocks_of_its_leading_axis(numba_ready, monkeypatch):
    """A 3-d copy of at least threaded.MIN_ELEMENTS runs on the threads in blocks of its leading
    axis (it ran on one: a [64, 1024, 64] permute's copy 2.8 ms, 2.0 on two threads)."""
    blocks = []
    real = layout_copy._tiled_copy
    monkeypatch.setattr(layout_copy, "numba_set_up", lambda: numba_ready)
    monkeypatch.setattr(layout_copy.threaded, "thread_count", lambda: 2)
    monkeypatch.setattr(layout_copy, "_tiled_copy", lambda s, d: (blocks.append(d.shape[0]), real(s, d)))
    array = np.random.default_rng(3).standard_normal((40, 512, 60)).astype(np.float32).transpose(2, 0, 1)
    assert array.size >= layout_copy.threaded.MIN_ELEMENTS
    copy = layout_copy.contiguous_copy(array)
    assert copy.flags.c_contiguous
    np.testing.assert_array_equal(copy, array)
    assert sorted(blocks) == ([] if not numba_ready else [20, 20])     # (the axis of 40 leads: the pair goes last)


@pytest.mark.parametrize("numba_ready", [False, True], ids=["numpy blocks", "numba tiles"])
def test_copy_into_a_transposed_destination_is_exact(numba_ready, monkeypatch):
    monkeypatch.setattr(layout_copy, "numba_set_up", lambda: numba_ready)
    src = np.random.default_rng(1).standard_normal((513, 257)).astype(np.float32)
    dst = np.empty((257, 513), np.float32).T            # column-major, src's shape
    layout_copy.copy_into(dst, src)
    np.testing.assert_array_equal(dst, src)


def test_a_first_tiled_copy_does_not_set_numba_up():
    """In a fresh process, the first large transposed copy is NumPy's: Numba's typing
    registries stay unset (setting them up is most of the 0.4 s a first Numba call costs)."""
    code = textwrap.dedent("""
        import numpy as np
        from fusegrad.codegen import layout_copy
        from fusegrad.ir.torch_order_jit import numba_set_up
        x = np.arange(512 * 384, dtype=np.float32).reshape(512, 384).T
        y = layout_copy.contiguous_copy(x)
        assert np.array_equal(y, x) and y.flags.c_contiguous
        print("ready" if numba_set_up() else "not set up")
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "not set up"
