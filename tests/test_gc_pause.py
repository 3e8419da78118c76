"""The cyclic garbage collector is paused for the length of a compiled call
(runtime/gc_pause.py): no collection runs inside one, it is back on afterwards
(also after an error, and with calls overlapping on threads), it stays off if it
was off, and a compiled call leaves no reference cycles behind, so pausing the
collector for it holds nothing back."""
from __future__ import annotations

import gc
import threading

import numpy as np
import pytest

import fusegrad as fg
from fusegrad.runtime import gc_pause


@pytest.fixture(autouse=True)
def collector_on():
    was = gc.isenabled()
    gc.enable()
    yield
    assert gc_pause._depth == 0
    (gc.enable if was else gc.disable)()


def _chain(x):
    for _ in range(20):
        x = (x * 0.5 + 0.25).tanh()
    return x


def test_no_collection_inside_a_compiled_call():
    seen = []

    def fn(x):
        seen.append(gc.isenabled())
        return _chain(x)

    inside = []     # for each collection: whether a compiled call was under way

    def callback(phase, info):
        if phase == "start":
            inside.append(gc_pause._depth > 0)

    compiled = fg.compile(fn)
    x = fg.ones(4)
    compiled(x)
    gc.callbacks.append(callback)
    try:
        # Each call allocates well over the young generation's threshold (700 objects):
        # the collections come right after each call instead.
        for _ in range(5):
            compiled(x)
            [object() for _ in range(1000)] and [[] for _ in range(1000)]
    finally:
        gc.callbacks.remove(callback)
    assert inside and not any(inside)
    assert seen == [False] * 6
    assert gc.isenabled()


def test_collector_back_on_after_an_error():
    def fn(x):
        return x + fg.ones(3)

    with pytest.raises(RuntimeError, match="must match the size"):
        fg.compile(fn)(fg.ones(2))
    assert gc.isenabled()


def test_collector_left_off_when_it_was_off():
    compiled = fg.compile(_chain)
    gc.disable()
    compiled(fg.ones(4))
    assert not gc.isenabled()


def test_overlapping_calls_on_threads():
    """While any call runs the collector is off; after the last it is on again."""
    inside, release = threading.Barrier(2), threading.Event()
    states = []

    def fn(x):
        inside.wait(timeout=30)
        release.wait(timeout=30)
        states.append(gc.isenabled())
        return x * 2

    compiled = fg.compile(fn)
    threads = [threading.Thread(target=compiled, args=(fg.ones(3),)) for _ in range(2)]
    for t in threads:
        t.start()
    # Both calls are inside their traces now (the barrier passed for both)...
    while inside.n_waiting:
        pass
    assert not gc.isenabled()
    release.set()
    for t in threads:
        t.join(timeout=30)
    assert states == [False, False]
    assert gc.isenabled()


def test_compiled_calls_leave_no_reference_cycles():
    """Pausing the collector for a call is safe only because a call's objects die by
    reference counting: with the collector off, many calls leave nothing for it."""
    w = fg.tensor(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4), requires_grad=True)

    def step(w, x):
        loss = ((x @ w).tanh() ** 2).mean()
        loss.backward()
        return loss

    chain, compiled_step = fg.compile(_chain), fg.compile(step)
    x = fg.ones(5, 3)

    def calls():
        chain(fg.ones(16))
        compiled_step(w, x)             # (into the .grad the eager backward left, after the first)
        w.grad = None
        compiled_step(w, x)
        (w * 2).exp().sum().backward()  # and eager autograd

    for _ in range(2):                  # compile the kernels first (a compile does make cycles)
        calls()
    fg.wait_for_compiles()
    gc.collect()
    gc.disable()
    for _ in range(20):
        calls()
    assert gc.collect() == 0
