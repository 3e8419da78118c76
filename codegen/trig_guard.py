"""Guarded fast sin/cos: the cheap range reduction where it is exact, the reference elsewhere.

vmath's float32 `fg_sin`/`fg_cos` reduce any argument exactly (Payne-Hanek), which
costs 2.7x the polynomial's time; `fg_sin_near`/`fg_cos_near` reduce with three
pieces of pi/2 (Cody-Waite) and agree with them bit for bit while |x| < NEAR_LIMIT
(2**20), but not beyond. Arguments that large are rare (a phase of 2**20 radians),
so kernels use the near forms and the program says, per argument, whether any
element reached the limit:

    y = sin x                    y = sin_near x
                         ->      f = abs x;  c = ge f 2**20;  w = cast c
                                 guard = amax[all axes] w          (an extra output)

(for all arguments of one shape one running flag: c = bitwise_or(c of the argument before,
ge(abs x, 2**20)), folded in right after each sin; one cast and one reduction per shape).

The guard is an ordinary reduction, so the scheduler fuses it into the kernel that
computes x (a pass over values already in registers). The executor reads the
guard outputs after the run and, if any is 1, runs the call again on the
reference executor (NumPy's sin, exact everywhere) and counts it
(`CompiledProgram.far_trig_calls`, shown by explain()). An infinite argument
reaches the limit too: it reruns by reference, where sin(inf) is nan as always.

Float32 and float64 instructions with an `extra["near_form"]` in the op table
change (float64's near forms: fdlibm's medium-range reduction and kernels, branch-free,
under 1 ulp; the full float64 forms are libm's, which do not vectorise: a float64
sin(x).sum(0) with its gradient on 4M elements took 38 ms, torch 8.8).
"""
from __future__ import annotations

from fusegrad.ir import Builder, Emitter, Instr, Program
from fusegrad.ir.ops import OPS
from fusegrad.ir.types import float32, float64

from .vmath import NEAR_LIMIT


def guard_near_forms(program: Program) -> tuple[Program, int]:
    """`program` with float32 and float64 sin/cos as their near forms and one guard output per
    shape of their arguments appended to its outputs (1 where an element of an argument of
    that shape has |x| >= NEAR_LIMIT, else 0; 0-d, of the argument's dtype). Returns the
    program and the number of guard outputs."""
    if not any(_near_form(ins) for ins in program.instrs):
        return program, 0
    out = Program(program.inputs, [], list(program.outputs))
    e = Emitter(Builder(out), "trig guard")
    # One guard per shape: each argument's test is folded into a running flag of that
    # shape right after its sin (a bool: no NaN can hide a flag), and one reduction ends it.
    # A guard per argument made a chain of n sines a kernel with n reductions, n partial-sum
    # arrays and n combining loops: compile time grew faster than n (50 sines: 6 s, against
    # 1.4 s for 50 tanh; ~300 failed with a RecursionError). The flags are or-ed bit by bit:
    # where(|x| >= limit, 1, flag so far) made each sine a branch in the kernel's source, and
    # Numba's compile time grew faster than the number of branches (a chain of 100
    # x * 0.99 + 0.01 * sin(x) steps: its backward compiled in 13 s).
    # Folded where the sine is, the tests stay in the kernels that compute the arguments;
    # a kernel boundary passes on one running array.
    guarded, running, dtypes = [], {}, {}
    for ins in program.instrs:
        near = _near_form(ins)
        if near is None:
            out.instrs.append(ins)
            continue
        out.instrs.append(Instr(near, ins.inputs, ins.outputs, ins.attrs, ins.loc))
        x = ins.inputs[0]
        if any(x is v for v in guarded):
            continue
        guarded.append(x)
        shape = tuple(x.shape)
        far = e.ge(e.op("abs", x), NEAR_LIMIT)
        running[shape] = e.op("bitwise_or", running[shape], far) if shape in running else far
        dtypes.setdefault(shape, x.dtype)
    for shape, far in running.items():
        flag = e.cast(far, dtypes[shape])
        out.outputs.append(e.amax(flag, tuple(range(len(shape)))) if shape else flag)
    return out, len(running)


def _near_form(ins) -> str | None:
    """The near form to run `ins` as, or None (not a float32 or float64 op that has one, or an
    empty operand: the scheduler runs those by reference, where a reduction of nothing fails)."""
    near = OPS[ins.op].extra.get("near_form")
    if near is None or ins.outputs[0].dtype not in (float32, float64) or ins.outputs[0].type.numel == 0:
        return None
    return near
