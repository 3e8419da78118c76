"""nn.DataParallel, SyncBatchNorm (+ convert_sync_batchnorm), NLLLoss2d, Container and
nn.utils.stateless.functional_call (fusegrad/nn/parallel.py) against torch in one CPU process:
results, reprs, state-dict keys, errors and warnings."""
import importlib
import warnings

import pytest

torch = pytest.importorskip("torch", reason="torch is the oracle")

import fusegrad as fg  # noqa: E402


def _linear(T):
    m = T.nn.Linear(2, 1)
    with T.no_grad():
        m.weight.copy_(T.tensor([[0.5, -1.0]]))
        m.bias.fill_(0.25)
    return m


CASES = {
    "data-parallel": lambda T: (lambda dp: (dp.device_ids, list(dp.state_dict()), dp(T.ones(3, 2)).tolist(),
                                            repr(dp)))(T.nn.DataParallel(_linear(T))),
    "sync-batch-norm": lambda T: (lambda s: (repr(s), s(T.tensor([[1., 2., 3.], [2., 0., 1.]])).tolist(),
                                             s.running_mean.tolist()))(T.nn.SyncBatchNorm(3)),
    "sync-batch-norm-5d": lambda T: tuple(T.nn.SyncBatchNorm(3)(T.ones(2, 3, 2, 2, 2)).shape),
    "sync-batch-norm-1d-input": lambda T: T.nn.SyncBatchNorm(3)(T.ones(3)),
    "sync-batch-norm-no-channels": lambda T: T.nn.SyncBatchNorm(0)(T.ones(2, 0)),
    "convert": lambda T: (lambda seq: (lambda out: (repr(out), out[0].weight is seq[0].weight,
                                                    out[1][0].running_var is seq[1][0].running_var))(
        T.nn.SyncBatchNorm.convert_sync_batchnorm(seq)))(
        T.nn.Sequential(T.nn.BatchNorm1d(3), T.nn.Sequential(T.nn.BatchNorm2d(3)))),
    "nll-loss-2d": lambda T: (repr(T.nn.NLLLoss2d()), T.nn.NLLLoss2d()(T.tensor([[-1., -2.]]), T.tensor([1])).item()),
    "container": lambda T: repr(T.nn.Container(a=T.nn.ReLU())),
    "stateless": lambda T: importlib.import_module(T.__name__ + ".nn.utils.stateless").functional_call(
        _linear(T), {"weight": T.zeros(1, 2), "bias": T.ones(1)}, (T.ones(1, 2),)).tolist(),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_as_torch(case):
    def outcome(T):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                result = CASES[case](T)
            except Exception as error:       # noqa: BLE001
                result = (type(error).__name__, str(error))
        return result, [(w.category.__name__, str(w.message).replace("torch.", "fg.")) for w in caught]
    assert outcome(fg) == outcome(torch)
