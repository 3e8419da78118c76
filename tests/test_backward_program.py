"""The eager backward program itself: a frozen subgraph gets no instruction
(the seeds' "excluding subgraphs from backward"), checked on the IR that
`backward()` runs (printed by fg.autograd.explain)."""
import fusegrad as fg


def _backward_lines(text: str) -> list:
    backward = text.split("backward (seeds first, then forward values it reads):", 1)[1]
    return [line.strip() for line in backward.splitlines() if " = " in line]


def _model_loss(freeze_body: bool):
    fg.manual_seed(0)
    body, head = fg.nn.Linear(6, 5), fg.nn.Linear(5, 3)
    for p in body.parameters():
        p.requires_grad = not freeze_body
    x = fg.randn(4, 6)
    out = head(fg.relu(body(x)))
    return (out * out).sum(), body, head


def test_frozen_body_has_no_backward_instruction():
    loss, body, head = _model_loss(freeze_body=True)
    text = fg.autograd.explain(loss)
    # The frozen body is not even part of the recorded graph: one linear layer (the head's
    # addmm, torch's AddmmBackward0) forward.
    forward = text.split("backward (", 1)[0]
    assert forward.count("= addmm") == 1 and forward.count("= matmul") == 0
    lines = _backward_lines(text)
    ops = [line.split(" = ", 1)[1].split()[0].split("[")[0] for line in lines]
    # Only the head's weight gradient needs a matmul; nothing flows into relu or the body.
    assert ops.count("matmul") == 1
    assert "threshold_backward" not in ops            # relu's VJP
    loss.backward()
    assert all(p.grad is None for p in body.parameters())
    assert all(p.grad is not None for p in head.parameters())


def test_trainable_body_gets_its_backward_instructions():
    loss, body, head = _model_loss(freeze_body=False)
    ops = [line.split(" = ", 1)[1].split()[0].split("[")[0] for line in _backward_lines(fg.autograd.explain(loss))]
    assert ops.count("matmul") == 3                      # dW_head, d(hidden), dW_body
    assert "threshold_backward" in ops                   # relu's VJP (torch's threshold_backward)
