"""Is fg.compile general, or tuned to W1-W6?  Times fusegrad compiled, fusegrad eager and
torch eager on a varied set of workloads the main benchmark does not cover.

    python3 benchmarks/generality.py                     # every case (a few minutes)
    python3 benchmarks/generality.py --only softmax,perm  # cases whose name holds a substring
    python3 benchmarks/generality.py --explain red-sum-ax0   # print compiled.explain() of one case
    python3 benchmarks/generality.py --list
    python3 benchmarks/generality.py --statistic min --torch-threads 1   # on a busy machine

On a shared 2-core machine, any 2-thread runtime (torch's OpenMP, OpenBLAS under
np.matmul, Numba's parallel kernels) waits for the busy core: a 0.1 ms torch call or
a 0.7 ms fusegrad step with small matmuls then takes 15-30 ms.  Repeat suspicious
cases; `--statistic min` and one thread (OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1
--torch-threads 1) give a steadier comparison.

Each case is written once against torch's API (fusegrad's API is torch's) and run by
both libraries.  Value-and-gradient cases compile `fg.value_and_grad(loss, argnums)`
as a whole; torch runs the loss and `torch.autograd.grad`.  Training-step cases compile
the whole step (zero_grad, forward, backward, opt.step()).  "fwd" cases are value only.

Timing: two calls, `fg.wait_for_compiles()`, more warm-up calls (so the executor's
serial-versus-parallel measurement of large kernels is over), then the median of
several samples of back-to-back calls (each at least --sample-ms).  The cache_info
columns are the deltas over the timed samples: a steady state has misses == 0, so a
nonzero count means the program recompiles (or misses its cache) on every call.

Ratios: c/e = compiled / fusegrad eager, c/t = compiled / torch eager (below 1 is
faster); ideal = minimal bytes (read every argument once, write each gradient once) at
np.copyto bandwidth; GB/s = minimal bytes / compiled time.  err = fusegrad compiled's
first result against torch eager's, max |difference| relative to the largest |value|.
"""
import argparse
import math
import os
import statistics
import sys
import time
from dataclasses import dataclass, field
from typing import Callable

os.environ.setdefault("NUMBA_NUM_THREADS", "2")
os.environ.setdefault("OMP_NUM_THREADS", "2")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "2")   # np.matmul, fusegrad's BLAS steps
os.environ.setdefault("MKL_NUM_THREADS", "2")

import numpy as np  # noqa: E402

from harness import _sample  # noqa: E402  (seconds per call, collector paused)

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402
import fusegrad as fg  # noqa: E402

torch.set_num_threads(2)

F32, F64 = np.float32, np.float64


# ----------------------------------------------------------------------------- cases


@dataclass
class Case:
    """One workload.  kind: "vg" (value and gradient of `loss`), "fwd" (value only) or
    "step" (a training step built by `step`).

    loss(lib) returns the loss function for library `lib` (fusegrad or torch); `arrays`
    builds the NumPy inputs; `prep(tensors)` turns the library's tensors into the call's
    arguments (a transpose or slice makes a strided argument); `argnums` are the
    arguments differentiated."""
    name: str
    kind: str
    what: str
    arrays: Callable[[], list] = None
    loss: Callable = None
    argnums: tuple = (0,)
    prep: Callable = None
    step: Callable = None           # step(lib) -> run() for "step" cases
    memory_bound: bool = True
    tags: list = field(default_factory=list)


def _rng(seed=0):
    return np.random.default_rng(seed)


def randn(*shape, dtype=F32, seed=0, scale=1.0):
    return (_rng(seed).standard_normal(shape) * scale).astype(dtype)


def chain(x):
    """W1's elementwise chain (tanh, sigmoid, exp)."""
    return (x.tanh() * x.sigmoid() + (-(x * x)).exp()).sum()


def fn(lib):
    """torch.nn.functional or fusegrad.nn.functional."""
    return lib.nn.functional


def layernorm(x, w, b, eps=1e-5):
    centred = x - x.mean(-1, keepdim=True)
    var = (centred * centred).mean(-1, keepdim=True)
    return centred / (var + eps).sqrt() * w + b


def square_sum(t):
    return (t * t).sum()


def sin_sum(x, dim, **kw):
    """A reduction after an elementwise op: the gradient is dense (cos(x) times a broadcast),
    not a broadcast view of the reduced gradient."""
    return x.sin().sum(dim, **kw)


def _value_and_grad_cases():
    big = (4096, 1024)        # 4M elements, 16 MB in float32
    cube = (64, 64, 1024)     # 4M elements
    c = []
    add = c.append

    # reductions
    add(Case("red-sum-ax1", "vg", "(sin(x).sum(1)^2).sum(), [4096,1024] (last axis: baseline)",
             lambda: [randn(*big)], lambda lib: lambda x: square_sum(sin_sum(x, 1))))
    add(Case("red-sum-ax0", "vg", "(sin(x).sum(0)^2).sum(), [4096,1024]",
             lambda: [randn(*big)], lambda lib: lambda x: square_sum(sin_sum(x, 0))))
    add(Case("red-mean-mid", "vg", "(sin(x).mean(1)^2).sum(), [64,64,1024] middle axis",
             lambda: [randn(*cube)], lambda lib: lambda x: square_sum(x.sin().mean(1))))
    add(Case("red-sum-02-keep", "vg", "(sin(x).sum((0,2),keepdim)^2).sum(), [64,64,1024]",
             lambda: [randn(*cube)], lambda lib: lambda x: square_sum(sin_sum(x, (0, 2), keepdim=True))))
    add(Case("red-var-ax0", "vg", "((x - x.mean(0,keepdim))^2).mean(), [4096,1024]",
             lambda: [randn(*big)], lambda lib: lambda x: square_sum(x - x.mean(0, keepdim=True)) / x.numel()))
    add(Case("red-amax-ax0", "vg", "(x.amax(0)^2).sum(), [4096,1024]",
             lambda: [randn(*big)], lambda lib: lambda x: square_sum(lib.amax(x, 0))))
    add(Case("red-max-ax1", "vg", "x.max(1).values.sum(), [4096,1024]",
             lambda: [randn(*big)], lambda lib: lambda x: x.max(1)[0].sum()))
    add(Case("red-norm-ax0", "vg", "x.norm(dim=0).sum(), [4096,1024]",
             lambda: [randn(*big)], lambda lib: lambda x: x.norm(dim=0).sum()))

    # softmax family and layernorm (weights w are a constant argument: a real gradient)
    add(Case("softmax-last", "vg", "(softmax(x,-1)*w).sum(), [4096,1024] (baseline)",
             lambda: [randn(*big), randn(*big, seed=1)], lambda lib: lambda x, w: (fn(lib).softmax(x, -1) * w).sum()))
    add(Case("softmax-dim0", "vg", "(softmax(x,0)*w).sum(), [4096,1024]",
             lambda: [randn(*big), randn(*big, seed=1)], lambda lib: lambda x, w: (fn(lib).softmax(x, 0) * w).sum()))
    add(Case("logsoftmax-mid", "vg", "(log_softmax(x,1)*w).sum(), [64,64,1024]",
             lambda: [randn(*cube), randn(*cube, seed=1)],
             lambda lib: lambda x, w: (fn(lib).log_softmax(x, 1) * w).sum()))
    add(Case("logsoftmax-dim0", "vg", "(log_softmax(x,0)*w).sum(), [4096,1024]",
             lambda: [randn(*big), randn(*big, seed=1)],
             lambda lib: lambda x, w: (fn(lib).log_softmax(x, 0) * w).sum()))
    add(Case("layernorm-3d", "vg", "layernorm(x,w,b) last dim, (y^2).sum(), [64,64,1024], 3 grads",
             lambda: [randn(*cube), 1 + 0.1 * randn(1024, seed=1), 0.1 * randn(1024, seed=2)],
             lambda lib: lambda x, w, b: square_sum(layernorm(x, w, b)), argnums=(0, 1, 2)))

    # broadcasting
    add(Case("bcast-outer", "vg", "tanh(a[N,1] + b[1,M]).sum(), N=4096 M=1024, grads a,b",
             lambda: [randn(4096, 1), randn(1, 1024, seed=1)],
             lambda lib: lambda a, b: (a + b).tanh().sum(), argnums=(0, 1), memory_bound=False))
    add(Case("bcast-row", "vg", "sin(w[1,M] * x[N,M]).sum(), grads x,w",
             lambda: [randn(*big), randn(1, 1024, seed=1)],
             lambda lib: lambda x, w: (w * x).sin().sum(), argnums=(0, 1)))
    add(Case("bcast-mid-bias", "vg", "relu(x[64,64,1024] + b[64,1]).square.sum(), grads x,b",
             lambda: [randn(*cube), randn(64, 1, seed=1)],
             lambda lib: lambda x, b: square_sum((x + b).relu()), argnums=(0, 1)))
    add(Case("bcast-batch-param", "vg", "tanh(x[16,256,1024] + p[256,1024]).sum(), grads x,p (a positional table)",
             lambda: [randn(16, 256, 1024), randn(256, 1024, seed=1)],
             lambda lib: lambda x, p: (x + p).tanh().sum(), argnums=(0, 1)))
    add(Case("red-stack-mean", "vg", "stack([a, 2b, exp(c)]).mean(0).sigmoid().sum(), [2048,1024] each",
             lambda: [randn(2048, 1024), randn(2048, 1024, seed=1), randn(2048, 1024, seed=2)],
             lambda lib: lambda a, b, c: lib.stack([a, b * 2, c.exp()], 0).mean(0).sigmoid().sum(),
             argnums=(0, 1, 2)))
    add(Case("bcast-scalar", "vg", "(x*s + 2 - s/(x*x+1)).sum(), s 0-d, grads x,s",
             lambda: [randn(*big), np.array(0.5, dtype=F32)],
             lambda lib: lambda x, s: (x * s + 2.0 - s / (x * x + 1.0)).sum(), argnums=(0, 1)))

    # strided arguments and views inside the function
    add(Case("strided-t-chain", "vg", "chain(x.t()), x [1024,4096] (transposed argument)",
             lambda: [randn(1024, 4096)], lambda lib: lambda x: chain(x), prep=lambda ts: [ts[0].t()]))
    add(Case("strided-slice-chain", "vg", "chain(x[:, ::2]), x [4096,2048]",
             lambda: [randn(4096, 2048)], lambda lib: lambda x: chain(x), prep=lambda ts: [ts[0][:, ::2]]))
    add(Case("strided-perm-sum", "vg", "(sin(x.permute(2,0,1)).sum(-1)^2).sum(), x [64,1024,64] arg",
             lambda: [randn(64, 1024, 64)], lambda lib: lambda x: square_sum(sin_sum(x, -1)),
             prep=lambda ts: [ts[0].permute(2, 0, 1)]))
    add(Case("strided-t-softmax", "vg", "(softmax(x.t(),-1)*w).sum(), x [1024,4096] arg",
             lambda: [randn(1024, 4096), randn(*big, seed=1)],
             lambda lib: lambda x, w: (fn(lib).softmax(x, -1) * w).sum(), prep=lambda ts: [ts[0].t(), ts[1]]))
    add(Case("inner-t-mul", "vg", "(x.t() * y).sum(), x [1024,4096], y [4096,1024], grads x,y",
             lambda: [randn(1024, 4096), randn(*big, seed=1)],
             lambda lib: lambda x, y: (x.t() * y).sin().sum(), argnums=(0, 1)))
    add(Case("inner-stencil", "vg", "((x[:,2:] - 2x[:,1:-1] + x[:,:-2])^2).sum(), [4096,1024]",
             lambda: [randn(*big)],
             lambda lib: lambda x: square_sum(x[:, 2:] - 2 * x[:, 1:-1] + x[:, :-2])))
    add(Case("inner-perm-chain", "vg", "chain(x.permute(2,0,1)) inside, x [64,64,1024]",
             lambda: [randn(*cube)], lambda lib: lambda x: chain(x.permute(2, 0, 1))))
    add(Case("inner-step-pairs", "vg", "(x[:, ::2] * x[:, 1::2]).sin().sum(), [4096,1024]",
             lambda: [randn(*big)], lambda lib: lambda x: (x[:, ::2] * x[:, 1::2]).sin().sum()))
    add(Case("inner-cat", "vg", "cat([x, y*2], 1).tanh().sum(), [4096,512] x2",
             lambda: [randn(4096, 512), randn(4096, 512, seed=1)],
             lambda lib: lambda x, y: lib.cat([x, y * 2], 1).tanh().sum(), argnums=(0, 1)))

    # elementwise chains
    add(Case("ew-where-clamp", "vg", "maximum(where(x>0, x^3, clamp(x,-.5,.5)), .1x).abs().sum(), 4M",
             lambda: [randn(1 << 22)],
             lambda lib: lambda x: lib.maximum(lib.where(x > 0, x.pow(3), x.clamp(-0.5, 0.5)), x * 0.1).abs().sum()))
    add(Case("ew-log-sqrt", "vg", "(log(|x|+1) * sqrt(x*x+1)).sum(), 4M",
             lambda: [randn(1 << 22)], lambda lib: lambda x: ((x.abs() + 1).log() * (x * x + 1).sqrt()).sum()))
    add(Case("ew-sincos", "vg", "(sin(x)cos(x) + sin(x)^2).sum(), 4M",
             lambda: [randn(1 << 22)], lambda lib: lambda x: (x.sin() * x.cos() + x.sin().pow(2)).sum()))
    add(Case("ew-pow-tensor", "vg", "(|x|+1)^y .sum(), grads x,y, 4M",
             lambda: [randn(1 << 22), 0.5 * randn(1 << 22, seed=1)],
             lambda lib: lambda x, y: ((x.abs() + 1) ** y).sum(), argnums=(0, 1)))
    add(Case("ew-chain-f64", "vg", "W1 chain, float64, 4M",
             lambda: [randn(1 << 22, dtype=F64)], lambda lib: chain))
    add(Case("ew-where-f64", "vg", "ew-where-clamp in float64, 4M",
             lambda: [randn(1 << 22, dtype=F64)],
             lambda lib: lambda x: lib.maximum(lib.where(x > 0, x.pow(3), x.clamp(-0.5, 0.5)), x * 0.1).abs().sum()))
    add(Case("red-sum-ax0-f64", "vg", "(sin(x).sum(0)^2).sum(), [4096,1024] float64",
             lambda: [randn(*big, dtype=F64)], lambda lib: lambda x: square_sum(sin_sum(x, 0))))
    add(Case("softmax-last-f64", "vg", "(softmax(x,-1)*w).sum(), [4096,1024] float64",
             lambda: [randn(*big, dtype=F64), randn(*big, dtype=F64, seed=1)],
             lambda lib: lambda x, w: (fn(lib).softmax(x, -1) * w).sum()))

    # small sizes: per-call overhead
    for n, label in ((1000, "1e3"), (100_000, "1e5")):
        add(Case(f"small-chain-{label}", "vg", f"W1 chain, {n} elements",
                 lambda n=n: [randn(n)], lambda lib: chain, memory_bound=n > 10_000))
    add(Case("small-layernorm-1e3", "vg", "layernorm [10,100], 3 grads",
             lambda: [randn(10, 100), 1 + 0.1 * randn(100, seed=1), 0.1 * randn(100, seed=2)],
             lambda lib: lambda x, w, b: square_sum(layernorm(x, w, b)), argnums=(0, 1, 2), memory_bound=False))
    add(Case("small-xent-1e5", "vg", "cross_entropy [100,1000] logits",
             lambda: [randn(100, 1000), _rng(3).integers(0, 1000, 100)],
             lambda lib: lambda x, y: fn(lib).cross_entropy(x, y)))
    add(Case("small-softmax0-1e5", "vg", "(softmax(x,0)*w).sum(), [100,1000]",
             lambda: [randn(100, 1000), randn(100, 1000, seed=1)],
             lambda lib: lambda x, w: (fn(lib).softmax(x, 0) * w).sum()))

    # value only
    add(Case("fwd-sum-ax0", "fwd", "x.sum(0), [4096,1024], no grad",
             lambda: [randn(*big)], lambda lib: lambda x: x.sum(0)))
    add(Case("fwd-softmax-dim0", "fwd", "softmax(x,0), [4096,1024], no grad",
             lambda: [randn(*big)], lambda lib: lambda x: fn(lib).softmax(x, 0)))
    add(Case("fwd-t-copy", "fwd", "x.t() * 2 (a transposed copy), [4096,1024]",
             lambda: [randn(*big)], lambda lib: lambda x: x.t() * 2.0))
    return c


# training steps ---------------------------------------------------------------


def _mlp(lib, sizes):
    layers = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        layers += [lib.nn.Linear(n_in, n_out), lib.nn.ReLU()]
    return lib.nn.Sequential(*layers[:-1])


def _classifier_step(lib, sizes, batch, optimizer):
    """A compiled-or-eager training step of an MLP classifier (cross-entropy)."""
    lib.manual_seed(0)
    model = _mlp(lib, sizes)
    opt = optimizer(lib, model.parameters())
    x = lib.from_numpy(randn(batch, sizes[0]))
    y = lib.from_numpy(_rng(1).integers(0, sizes[-1], batch))
    return _train_step(model, opt, fn(lib).cross_entropy), (x, y)


def _mse_momentum_step(lib):
    lib.manual_seed(0)
    model = _mlp(lib, [64, 128, 1])
    opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = lib.from_numpy(randn(4096, 64))
    y = lib.from_numpy(randn(4096, 1, seed=1))
    return _train_step(model, opt, fn(lib).mse_loss), (x, y)


def _train_step(model, opt, loss_fn):
    """One optimizer step on (x, y): zero_grad, loss, backward, step; returns the loss."""
    def step(x, y):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss
    return step


def _step_cases():
    adam = lambda lib, params: lib.optim.Adam(params, lr=1e-3)  # noqa: E731
    sgd = lambda lib, params: lib.optim.SGD(params, lr=0.01)    # noqa: E731
    return [
        Case("step-mlp3-adam", "step", "MLP 784-512-512-512-10, Adam, batch 256",
             step=lambda lib: _classifier_step(lib, [784, 512, 512, 512, 10], 256, adam), memory_bound=False),
        Case("step-wide-mlp-sgd", "step", "MLP 3072-1024-256-10 on [256,3072], SGD",
             step=lambda lib: _classifier_step(lib, [3072, 1024, 256, 10], 256, sgd), memory_bound=False),
        Case("step-mse-momentum", "step", "MLP 64-128-1 MSE regression, SGD momentum 0.9, batch 4096",
             step=_mse_momentum_step, memory_bound=False),
        Case("step-tiny-adam", "step", "MLP 32-64-64-10, Adam, batch 64 (overhead)",
             step=lambda lib: _classifier_step(lib, [32, 64, 64, 10], 64, adam), memory_bound=False),
    ]


CASES = _value_and_grad_cases() + _step_cases()


# ----------------------------------------------------------------------------- runners


def _tensors(lib, case):
    arrays = case.arrays()
    tensors = [lib.from_numpy(a.copy()) for a in arrays]
    return arrays, (case.prep(tensors) if case.prep else tensors)


def build(case, column):
    """A no-argument callable running `case` in `column` ("fg-compiled", "fg-eager", "torch"),
    returning a tuple of NumPy results."""
    lib = torch if column == "torch" else fg
    compiled = column == "fg-compiled"
    if case.kind == "step":
        step, args = case.step(lib)
        if compiled:
            step = fg.compile(step)
        return lambda: (_numpy(step(*args)),), step, args
    _, args = _tensors(lib, case)
    loss = case.loss(lib)
    if case.kind == "fwd":
        f = fg.compile(loss) if compiled else loss
        if lib is torch:
            def run():
                with torch.no_grad():
                    return (_numpy(f(*args)),)
            return run, f, args
        return lambda: (_numpy(f(*args)),), f, args
    if lib is torch:
        def run():
            leaves = list(args)
            for i in case.argnums:
                leaves[i] = args[i].detach().requires_grad_()
            value = loss(*leaves)
            grads = torch.autograd.grad(value, [leaves[i] for i in case.argnums])
            return (_numpy(value), *map(_numpy, grads))
        return run, None, args
    f = fg.value_and_grad(loss, argnums=case.argnums)
    if compiled:
        f = fg.compile(f)

    def run():
        value, grads = f(*args)
        return (_numpy(value), *map(_numpy, grads))
    return run, f, args


def _numpy(t):
    # .numpy() of an fg result may be a lazy view; np.asarray does not copy it
    return t.detach().numpy() if hasattr(t, "detach") else np.asarray(t)


def measure(fn, sample_s, repeats):
    """Median seconds per call after warm-up (background compiles awaited twice)."""
    first_s = _sample(fn, 1)
    fn()
    fg.wait_for_compiles()
    for _ in range(3):
        fn()
    fg.wait_for_compiles()
    # the executor measures serial against parallel variants over a few calls: let it settle
    warm = 8 if first_s < 1.0 else 4
    for _ in range(warm):
        fn()
    one = _sample(fn, 1)
    calls = max(1, math.ceil(sample_s / max(one, 1e-9)))
    if one > 0.3:
        repeats = min(repeats, 3)
    before = fg.cache_info()
    samples = [_sample(fn, calls) for _ in range(repeats)]
    after = fg.cache_info()
    delta = (after.hits - before.hits, after.misses - before.misses,
             after.kernels_compiled - before.kernels_compiled, getattr(after, "reference_calls", 0)
             - getattr(before, "reference_calls", 0))
    per_call = min(samples) if STATISTIC == "min" else statistics.median(samples)
    return first_s, per_call, min(samples), delta, repeats * calls


def min_bytes(case):
    """Read each argument once and write each gradient once (the call's arguments, as seen)."""
    if not case.memory_bound or case.kind == "step":
        return None
    arrays = case.arrays()
    tensors = [torch.from_numpy(a) for a in arrays]
    args = case.prep(tensors) if case.prep else tensors
    read = sum(t.numel() * t.element_size() for t in args)
    if case.kind == "fwd":
        out = case.loss(torch)(*args)
        return read + out.numel() * out.element_size()
    return read + sum(args[i].numel() * args[i].element_size() for i in case.argnums)


def max_rel_error(outs, refs):
    worst = 0.0
    for out, ref in zip(outs, refs):
        out, ref = np.asarray(out, np.float64), np.asarray(ref, np.float64)
        if out.shape != ref.shape:
            return float("inf")
        scale = max(float(np.max(np.abs(ref), initial=0.0)), 1e-30)
        worst = max(worst, float(np.max(np.abs(out - ref), initial=0.0)) / scale)
    return worst


def copy_bandwidth(nbytes=128 << 20):
    src = np.ones(nbytes // 4, dtype=F32)
    dst = np.empty_like(src)
    np.copyto(dst, src)
    return 2 * nbytes / statistics.median(_sample(lambda: np.copyto(dst, src), 1) for _ in range(7)) / 1e9


# ----------------------------------------------------------------------------- report


COLUMNS = ("fg-compiled", "fg-eager", "torch")
STATISTIC = "median"    # or "min" (--statistic): steadier while other processes hold a core


def run_case(case, sample_s, repeats, bandwidth):
    row = {"case": case}
    results = {}
    for column in COLUMNS:
        try:
            run, _, _ = build(case, column)
            start = time.perf_counter()
            results[column] = run()
            first = time.perf_counter() - start
            _, median, fastest, delta, calls = measure(run, sample_s, repeats)
            row[column] = median
            if column == "fg-compiled":
                row["first"], row["cache"], row["fastest"] = first, delta, fastest
        except Exception as exc:  # a failing case is a finding, not a crash
            row[column] = None
            row.setdefault("errors", []).append(f"{column}: {type(exc).__name__}: {str(exc)[:200]}")
    if case.kind != "step" and "fg-compiled" in results and "torch" in results:
        row["err"] = max_rel_error(results["fg-compiled"], results["torch"])
    nbytes = min_bytes(case)
    row["bytes"] = nbytes
    row["ideal"] = nbytes / (bandwidth * 1e9) if nbytes else None
    return row


def _ms(seconds):
    if seconds is None:
        return "-"
    ms = seconds * 1e3
    return f"{ms:.3g}" if ms < 100 else f"{ms:.0f}"


def _ratio(a, b):
    return "-" if a is None or b is None else f"{a / b:.2f}"


HEADER = ("| case | what | ideal | fg compiled | fg eager | torch eager | c/e | c/t | c/ideal | GB/s "
          "| first call s | cache Δ hits/miss/compiled/ref over timed calls | err |")


def format_row(row):
    case, comp = row["case"], row.get("fg-compiled")
    gbps = f"{row['bytes'] / comp / 1e9:.1f}" if row.get("bytes") and comp else "-"
    cache = "/".join(map(str, row["cache"])) if "cache" in row else "-"
    err = f"{row['err']:.1e}" if "err" in row else "-"
    first = f"{row['first']:.2f}" if "first" in row else "-"
    return (f"| {case.name} | {case.what} | {_ms(row['ideal'])} | {_ms(comp)} | {_ms(row.get('fg-eager'))} "
            f"| {_ms(row.get('torch'))} | {_ratio(comp, row.get('fg-eager'))} | {_ratio(comp, row.get('torch'))} "
            f"| {_ratio(comp, row['ideal'])} | {gbps} | {first} | {cache} | {err} |")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="", help="comma-separated substrings of case names")
    parser.add_argument("--explain", default="", help="print compiled.explain() of this case and stop")
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--sample-ms", type=float, default=30.0)
    parser.add_argument("--statistic", choices=("median", "min"), default="median")
    parser.add_argument("--torch-threads", type=int, default=2,
                        help="torch.set_num_threads (2, as the peers; 1 is steadier on a busy machine)")
    opts = parser.parse_args(argv)
    global STATISTIC
    STATISTIC = opts.statistic
    torch.set_num_threads(opts.torch_threads)
    if opts.list:
        for case in CASES:
            print(f"{case.name:22s} {case.kind:5s} {case.what}")
        return
    if opts.explain:
        case = next(c for c in CASES if c.name == opts.explain)
        run, f, args = build(case, "fg-compiled")
        run()
        fg.wait_for_compiles()
        for _ in range(6):
            run()
        print(f.explain(*args))
        print(fg.cache_info())
        return
    wanted = [s for s in opts.only.split(",") if s]
    cases = [c for c in CASES if not wanted or any(s in c.name for s in wanted)]
    bandwidth = copy_bandwidth()
    print(f"# generality: {len(cases)} cases; copy bandwidth {bandwidth:.1f} GB/s; numba threads "
          f"{os.environ.get('NUMBA_NUM_THREADS')}, torch threads {torch.get_num_threads()}; "
          f"{opts.statistic} of {opts.repeats} samples >= {opts.sample_ms:g} ms; times in ms\n")
    print(HEADER)
    print("|" + "---|" * (HEADER.count("|") - 1))
    notes = []
    for case in cases:
        row = run_case(case, opts.sample_ms / 1e3, opts.repeats, bandwidth)
        print(format_row(row), flush=True)
        notes += [f"- {case.name}: {e}" for e in row.get("errors", [])]
    if notes:
        print("\nerrors:\n" + "\n".join(notes))


if __name__ == "__main__":
    main()
