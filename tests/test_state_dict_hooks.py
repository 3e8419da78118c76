"""Module.state_dict / load_state_dict as torch's protocol: _save_to_state_dict and
_load_from_state_dict per module (a subclass may override them), the state-dict pre- and
post-hooks, the load pre- and post-hooks, the `_metadata` versions. Each scenario runs in
torch and fusegrad and logs what the hooks see, the results and the errors."""
import warnings

import pytest

torch = pytest.importorskip("torch", reason="torch is the oracle")

import fusegrad as fg  # noqa: E402


def _both(scenario):
    logs = []
    for T in (torch, fg):
        log = []
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                scenario(T, log)
            log.extend(("warned", w.category.__name__, str(w.message)) for w in caught)
        except Exception as error:       # noqa: BLE001  (compared with torch's)
            log.append(("raised", type(error).__name__, str(error)))
        logs.append(log)
    assert logs[1] == logs[0]
    return logs[0]


def _net(T):
    T.manual_seed(0)
    return T.nn.Sequential(T.nn.Linear(2, 3), T.nn.ReLU(), T.nn.Sequential(T.nn.Linear(3, 1)))


def _keys(sd):
    return list(sd.keys())


def test_metadata_and_versions():
    def scenario(T, log):
        sd = _net(T).state_dict()
        log.append(_keys(sd))
        log.append(dict(sd._metadata))
        bn = T.nn.BatchNorm1d(2)
        log.append(dict(bn.state_dict()._metadata))
    _both(scenario)


def test_state_dict_hooks_order_and_arguments():
    def scenario(T, log):
        net = _net(T)
        for name, m in [("root", net), ("first", net[0]), ("inner", net[2])]:
            m.register_state_dict_pre_hook(lambda mod, prefix, keep, name=name: log.append(("pre", name, prefix, keep)))
            m.register_state_dict_post_hook(
                lambda mod, sd, prefix, meta, name=name: log.append(("post", name, prefix, _keys(sd), dict(meta))))
        net.state_dict(keep_vars=True)
    assert len(_both(scenario)) == 6


def test_post_hook_edits_in_place_and_may_not_return():
    def scenario(T, log):
        net = _net(T)
        net[0].register_state_dict_post_hook(lambda mod, sd, prefix, meta: sd.pop(prefix + "bias"))
        log.append(_keys(net.state_dict()))
        other = _net(T)
        other.register_state_dict_post_hook(lambda mod, sd, prefix, meta: {})
        other.state_dict()
    assert _both(scenario)[-1] == ("raised", "RuntimeError", "state_dict post-hook must return None")


def test_private_state_dict_hook_replaces_the_root_dict():
    def scenario(T, log):
        net = _net(T)
        net._register_state_dict_hook(lambda mod, sd, prefix, meta: {"only": 1})
        log.append(net.state_dict())
        net[0]._register_state_dict_hook(lambda mod, sd, prefix, meta: {"ignored": 1})
        log.append(_keys(T.nn.Sequential(net[0]).state_dict()))

        def hook(mod, sd, prefix, meta):
            return None
        net.register_state_dict_post_hook(hook)
        net._register_state_dict_hook(hook)
    assert _both(scenario)[-1][0] == "raised"


def test_positional_arguments_warn():
    def scenario(T, log):
        net = _net(T)
        dest = {}
        out = net.state_dict(dest, "p.")
        log.append((out is dest, _keys(dest)))
    _both(scenario)


def test_load_pre_hook_migrates_old_keys():
    def scenario(T, log):
        net = _net(T)
        sd = {k.replace("weight", "w_old"): v for k, v in _net(T).state_dict().items()}

        def migrate(module, state_dict, prefix, local_metadata, strict, missing, unexpected, errors):
            log.append(("pre", prefix, sorted(k for k in state_dict if k.startswith(prefix)), dict(local_metadata)))
            old = prefix + "w_old"
            if old in state_dict:
                state_dict[prefix + "weight"] = state_dict.pop(old)
        for m in (net[0], net[2][0]):
            m.register_load_state_dict_pre_hook(migrate)
        log.append(net.load_state_dict(sd))
        log.append([p.tolist() for p in net.parameters()])
    _both(scenario)


def test_private_load_pre_hook_without_module():
    def scenario(T, log):
        net = _net(T)
        net._register_load_state_dict_pre_hook(lambda sd, prefix, *rest: log.append(("pre", prefix, len(rest))))
        net.load_state_dict(_net(T).state_dict())
        net._register_load_state_dict_pre_hook(lambda m, sd, prefix, *rest: log.append(("with", m is net, prefix)),
                                               with_module=True)
        net.load_state_dict(_net(T).state_dict())
    _both(scenario)


def test_post_hooks_see_the_keys_so_far():
    def scenario(T, log):
        net = _net(T)
        sd = _net(T).state_dict()
        del sd["0.bias"], sd["2.0.weight"]
        sd["extra"] = T.zeros(1)
        for name, m in [("root", net), ("first", net[0]), ("inner", net[2][0])]:
            m.register_load_state_dict_post_hook(
                lambda mod, keys, name=name: log.append((name, list(keys.missing_keys), list(keys.unexpected_keys))))
        log.append(net.load_state_dict(sd, strict=False))

        def forgive(mod, keys):
            keys.missing_keys.clear()
            keys.unexpected_keys.clear()
        other = _net(T)
        other.register_load_state_dict_post_hook(forgive)
        log.append(other.load_state_dict(sd))
        net.load_state_dict(sd)
    _both(scenario)


class _Renamed:
    """A module whose checkpoint layout changed: it saves `scale` as `gain` and loads either."""

    @staticmethod
    def make(T):
        class Scaled(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.scale = T.nn.Parameter(T.ones(2))

            def forward(self, x):
                return x * self.scale

            def _save_to_state_dict(self, destination, prefix, keep_vars):
                destination[prefix + "gain"] = self.scale if keep_vars else self.scale.detach()

            def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing, unexpected, errors):
                if prefix + "gain" in state_dict:
                    state_dict[prefix + "scale"] = state_dict.pop(prefix + "gain")
                super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing, unexpected, errors)
        return Scaled


def test_overridden_save_and_load():
    def scenario(T, log):
        Scaled = _Renamed.make(T)
        outer = T.nn.Sequential(Scaled(), Scaled())
        with T.no_grad():
            outer[1].scale.mul_(3)
        sd = outer.state_dict()
        log.append({k: v.tolist() for k, v in sd.items()})
        fresh = T.nn.Sequential(Scaled(), Scaled())
        log.append(fresh.load_state_dict(sd))
        log.append(fresh[1].scale.tolist())
        log.append(fresh.load_state_dict({"0.scale": T.zeros(2), "1.gain": T.ones(2) * 7}))
        log.append([m.scale.tolist() for m in fresh])
    _both(scenario)


def test_one_element_checkpoint_entry_into_a_0d_parameter_and_errors():
    def scenario(T, log):
        class Holder(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.t = T.nn.Parameter(T.tensor(1.0))
        h = Holder()
        log.append(h.load_state_dict({"t": T.tensor([5.0])}))
        log.append(h.t.tolist())
        try:
            h.load_state_dict({"t": T.tensor([5.0, 6.0])})
        except RuntimeError as error:
            log.append(str(error))
        try:
            h.load_state_dict({"t": 3.0})
        except RuntimeError as error:
            log.append(str(error))
        h.load_state_dict([("t", T.tensor(1.0))])
    assert _both(scenario)[-1] == ("raised", "TypeError", "Expected state_dict to be dict-like, got <class 'list'>.")


def test_assign_through_the_protocol():
    def scenario(T, log):
        net = _net(T)
        new = {k: v * 2 for k, v in _net(T).state_dict().items()}
        net.load_state_dict(new, assign=True)
        log.append([(type(p).__name__, p.requires_grad, p.tolist()) for p in net.parameters()])
        log.append(net[0].weight is not new["0.weight"])
    _both(scenario)


def test_norm_layers_versions_and_old_checkpoints():
    def scenario(T, log):
        bn = T.nn.BatchNorm1d(2)
        with T.no_grad():
            bn.num_batches_tracked.fill_(4)
        log.append(dict(bn.state_dict()._metadata))
        # a dict built by hand (no metadata: an old checkpoint) may lack num_batches_tracked
        plain = {k: v for k, v in T.nn.BatchNorm1d(2).state_dict().items() if k != "num_batches_tracked"}
        log.append(bn.load_state_dict(plain))
        log.append(bn.num_batches_tracked.tolist())
        current = T.nn.BatchNorm1d(2).state_dict()
        del current["num_batches_tracked"]
        try:
            bn.load_state_dict(current)
        except RuntimeError as error:
            log.append(str(error))
        inorm = T.nn.InstanceNorm1d(2)
        log.append(dict(inorm.state_dict()._metadata))
        inorm.load_state_dict({"running_mean": T.zeros(2), "running_var": T.ones(2)})
    assert "Unexpected running stats buffer(s)" in _both(scenario)[-1][2]


def test_weight_norm_loads_the_hook_forms_checkpoint():
    def scenario(T, log):
        T.manual_seed(0)
        old = T.nn.utils.weight_norm(T.nn.Linear(3, 2))         # the deprecated hook form: weight_g, weight_v
        checkpoint = old.state_dict()
        log.append(sorted(checkpoint))
        new = T.nn.utils.parametrizations.weight_norm(T.nn.Linear(3, 2))
        log.append(new.load_state_dict(checkpoint))
        log.append(T.allclose(new.weight, old.weight))
    log = _both(scenario)
    assert log[2] is True and log[-1][:2] == ("warned", "FutureWarning")
