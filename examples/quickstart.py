"""fusegrad in one page: the autograd tutorial's examples, fg.grad, the IR of
a backward pass, and fg.compile timings against eager execution.

Run: python examples/quickstart.py
"""
import time

import numpy as np

import fusegrad as fg

# Calls after the first while the kernel's serial and parallel variants are timed (3 + 3) and the
# parallel one compiles.
SETTLE_CALLS = 8
EXPLAIN_LINES = 80      # of the compiled step's explain(): its programs and kernel plan


def tutorial():
    print("== PyTorch's autograd tutorial, in fusegrad ==")
    x = fg.ones(2, 2, requires_grad=True)
    y = x + 2
    z = y * y * 3
    out = z.mean()
    print(y)
    print(out)
    out.backward()
    print("x.grad (all 4.5):")
    print(x.grad)

    fg.manual_seed(0)
    x = fg.randn(3, requires_grad=True)
    y = x * 2
    k = 1
    while y.data.norm() < 1000:
        y = y * 2
        k += 1
    v = fg.tensor([0.1, 1.0, 0.0001], dtype=fg.float32)
    print("\nThe IR of this backward pass (fg.autograd.explain):")
    print(fg.autograd.explain(y, v))
    y.backward(v)
    print(f"while-loop ran {k} doublings; x.grad == v * 2**{k}:", np.allclose(x.grad.numpy(), (v * 2 ** k).numpy()))
    print(x.grad)


def transforms():
    print("\n== fg.grad ==")

    def f(x):
        return (fg.tanh(x) * fg.sigmoid(x) + fg.exp(-x * x)).sum()

    x = fg.tensor([0.5, -1.0, 2.0])
    print("grad f:", fg.grad(f)(x))
    print("d2/dx2 of x**3 at 2.0:", fg.grad(fg.grad(lambda t: t ** 3))(fg.tensor(2.0)))


def compiled():
    print("\n== fg.compile ==")
    if not hasattr(fg, "compile"):
        print("fg.compile is not available in this build")
        return

    def f(x):
        return (fg.tanh(x) * fg.sigmoid(x) + fg.exp(-x * x)).sum()

    step = fg.compile(fg.value_and_grad(f))
    x = fg.randn(1_000_000)
    t0 = time.perf_counter()
    step(x)
    first = time.perf_counter() - t0
    # The first call compiles (or loads from the disk cache) the kernels, and a large
    # kernel's parallel variant; the next calls measure which of the two is faster.
    t0 = time.perf_counter()
    for _ in range(SETTLE_CALLS):
        fg.wait_for_compiles()
        step(x)
    fg.wait_for_compiles()
    settle = time.perf_counter() - t0
    times = []
    for _ in range(10):
        t0 = time.perf_counter()
        step(x)
        times.append(time.perf_counter() - t0)
    eager = []
    vg = fg.value_and_grad(f)
    for _ in range(5):
        t0 = time.perf_counter()
        vg(x)
        eager.append(time.perf_counter() - t0)
    print(f"first call (trace, compile or load kernels, run): {first * 1e3:.1f} ms")
    print(f"next {SETTLE_CALLS} calls (serial vs parallel measured):      {settle * 1e3:.1f} ms")
    print(f"compiled, per call (median): {np.median(times) * 1e3:.2f} ms")
    print(f"eager,    per call (median): {np.median(eager) * 1e3:.2f} ms")
    print(fg.cache_info())
    lines = step.explain(x).splitlines()
    print("\n".join(lines[:EXPLAIN_LINES]))
    if len(lines) > EXPLAIN_LINES:
        print(f"... ({len(lines) - EXPLAIN_LINES} more lines: the kernels and their Numba source; print step.explain(x))")


if __name__ == "__main__":
    tutorial()
    transforms()
    compiled()
