"""Bad calls of the overloaded functions and methods raise torch's argument-parser TypeErrors
(tracer/parser_errors.py): every call of a value pool's combinations that torch or fusegrad
refuses with a TypeError must raise the same text in both (torch 2.13 is the oracle)."""
from __future__ import annotations

import itertools
import warnings

import pytest

import fusegrad as fg
from fusegrad.tracer import parser_errors

torch = pytest.importorskip("torch", reason="torch is the oracle of these texts")

# arguments in source form, evaluated with t = ones(2, 2) of the library under test
POOL = ["'a'", "None", "1.5", "1", "True", "t", "[1, 2]", "(1, 'a')", "(0, 1)", "(1, 1.5)", "L.float64", "t > 0"]
KEYWORDS = ["other", "foo", "dim", "alpha", "exponent", "min", "max", "value", "condition", "dtype", "input",
            "rounding_mode", "keepdim"]


# Differences left: {call: why}. Each must still differ (a fix shows here, to be removed).
KNOWN = {
    **{f"L.{name}(t, {other}, L.float64)": "torch's CPU build has no mm/bmm with an out_dtype (NotImplementedError); "
                                           "fusegrad takes no out_dtype (TypeError)"
       for name in ("mm", "bmm") for other in ("t", "t > 0")},
}


def _outcome(lib, code: str):
    """('OK',) or (exception class name, text) of `code` run on `lib`."""
    env = {"L": lib, "t": lib.ones(2, 2)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            eval(code, env)
            return ("OK",)
        except Exception as exc:        # noqa: BLE001  (the class is part of what is compared)
            return (type(exc).__name__, str(exc))


def _differences(calls) -> list:
    """The calls where torch or fusegrad raises a TypeError and the two outcomes differ."""
    found = []
    for code in calls:
        theirs, ours = _outcome(torch, code), _outcome(fg, code)
        if "TypeError" in (theirs[0], ours[0]) and theirs != ours:
            found.append(f"{code}\n  torch: {theirs}\n  fusegrad: {ours}")
    return found


def _argument_lists(max_count: int):
    for count in range(max_count + 1):
        yield from itertools.product(POOL, repeat=count)


@pytest.mark.parametrize("name", sorted(parser_errors.FUNCTIONS))
def test_function_forms_raise_torchs_parser_texts(name):
    calls = [f"L.{name}({', '.join(args)})" for args in _argument_lists(2)]
    calls += [f"L.{name}(t, {', '.join(args)})" for args in itertools.product(POOL, repeat=2)]
    calls += [f"L.{name}(t, {key}={value})" for key in KEYWORDS for value in ("'a'", "1", "t", "None")]
    _assert_torchs(calls)


def _assert_torchs(calls) -> None:
    """Every call but the KNOWN ones as torch; each KNOWN one still different."""
    known = [code for code in calls if code in KNOWN]
    assert len(_differences(known)) == len(known)
    assert _differences([code for code in calls if code not in KNOWN]) == []




@pytest.mark.parametrize("name", sorted(parser_errors.METHODS))
def test_method_forms_raise_torchs_parser_texts(name):
    calls = [f"t.{name}({', '.join(args)})" for args in _argument_lists(2)]
    calls += [f"t.{name}({key}={value})" for key in KEYWORDS for value in ("'a'", "1", "t", "None")]
    _assert_torchs(calls)


@pytest.mark.parametrize("name", parser_errors.NO_ARGUMENT_METHODS)
def test_methods_that_take_nothing_raise_cpythons_text(name):
    calls = [f"t.{name}({args})" for args in ("1", "'a', 2", "x=1", "t")]
    assert _differences(calls) == []
    with pytest.raises(TypeError) as caught:
        getattr(fg.ones(2, 2), name)(1)
    assert str(caught.value) == f"TensorBase.{name}() takes no arguments (1 given)"


@pytest.mark.parametrize("code", ["L.add(t, 2, t)", "t.add(2.5, t)", "L.sub(t, 3, t * 2)", "t.sub(1.5, t)",
                                  "L.add(t, t, alpha=2)"])
def test_the_deprecated_alpha_first_overload_computes_as_torch_with_its_warning(code, monkeypatch):
    """Values as torch's; the warning in torch's words for the method or function form, once
    a process (torch's TORCH_WARN_ONCE: a second deprecated call is silent)."""
    from fusegrad.tracer import functional
    monkeypatch.setattr(functional, "_WARNED_ALPHA_FIRST", [])      # (as in a fresh process)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")         # (torch warns once a process, from C++)
        theirs = eval(code, {"L": torch, "t": torch.ones(2, 2) * 3}).tolist()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ours = eval(code, {"L": fg, "t": fg.ones(2, 2) * 3}).tolist()
        eval(code, {"L": fg, "t": fg.ones(2, 2) * 3})
    assert ours == theirs
    deprecated = [str(w.message) for w in caught if "deprecated" in str(w.message)]
    assert len(deprecated) == (0 if "alpha=" in code else 1)
    if deprecated:
        name = code.split("(")[0][2:]
        signature = "Number alpha, Tensor other)" if code.startswith("t.") else \
            "Tensor input, Number alpha, Tensor other, *, Tensor out = None)"
        assert deprecated[0].startswith(f"This overload of {name} is deprecated:\n\t{name}({signature}")


def test_alpha_is_keyword_only_as_in_torch():
    """fg.add(t, t, 2) took 2 as alpha; torch refuses a third positional argument."""
    t = fg.ones(2)
    with pytest.raises(TypeError) as caught:
        fg.add(t, t, 2)
    assert str(caught.value) == "add() takes 2 positional arguments but 3 were given"
    with pytest.raises(TypeError) as caught:
        fg.div(t, 2, "floor")
    assert str(caught.value).startswith("div() received an invalid combination of arguments - got (Tensor, int, str)")


def test_a_value_check_after_the_parse_keeps_its_own_error():
    """Only what torch's parser refuses is reworded: a parsed call's RuntimeError stands."""
    with pytest.raises(RuntimeError, match="div expected rounding_mode to be one of None, 'trunc', or 'floor' "
                                           "but found 'round'"):
        fg.div(fg.ones(2), 2, rounding_mode="round")
    with pytest.raises(RuntimeError, match="At least one of 'min' or 'max' must not be None"):
        fg.ones(2).clamp()


def test_bad_calls_inside_a_compiled_function_raise_the_same_text():
    @fg.compile
    def f(x):
        return x.pow("a")

    with pytest.raises(TypeError) as caught:
        f(fg.ones(3))
    with pytest.raises(TypeError) as expected:
        torch.ones(3).pow("a")
    assert str(caught.value) == str(expected.value)


@pytest.mark.parametrize("code", [
    "t.unsqueeze(1, 2)", "t.mm(t, t)", "t.flatten(0, 1, 2)", "t.softmax(0, None, 1)", "t.transpose(0, 1, 1)",
    "t.logical_and(t, t)", "t.outer(t, t)", "t.size(L.float64)", "t.unsqueeze(L.float64)", "t.mm(L.float64)",
    "t.expand(1, L.float64)", "t.flatten(1, L.float64)", "L.tensor([1.0]).dim(1)", "t.numel(2)", "L.norm('a')",
    "L.norm(None)", "t.squeeze(1, 'a')", "t.squeeze([1, 2], 1)", "t.subtract(1.5, t)", "t.movedim((1, 'a'), (1, 'a'))",
    "t.pow_(other=1)", "t.bitwise_and(other=1)", "t.is_floating_point(1)", "t.storage_offset(1)"])
def test_method_counts_and_type_names_are_torchs(code):
    """A method's argument count leaves self out; dtypes are `torch.dtype`; torch.norm of a
    non-tensor fails on `.layout` (AttributeError)."""
    theirs, ours = _outcome(torch, code), _outcome(fg, code)
    assert theirs[0] != "OK" and ours == theirs
