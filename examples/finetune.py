"""Fine-tuning, as in PyTorch's autograd note, translated from `torch` to `fg`.

    model = torchvision.models.resnet18(pretrained=True)
    for param in model.parameters():
        param.requires_grad = False
    model.fc = nn.Linear(512, 100)
    optimizer = optim.SGD(model.fc.parameters(), lr=1e-2, momentum=0.9)

Here a small MLP stands in for the pretrained network: it is first trained on
one task, then frozen; its classifier is replaced for a new task and only the
new classifier is optimised. Frozen parameters never receive a `.grad`, and
the backward pass stops at the new layer (no work is done for the frozen part).

Run: python examples/finetune.py
"""
import fusegrad as fg
import fusegrad.nn.functional as F
from fusegrad import nn, optim


class TinyNet(nn.Module):
    """A feature extractor followed by a classifier `fc`, shaped like resnet's head."""

    def __init__(self, in_features: int, hidden: int, classes: int) -> None:
        super().__init__()
        self.features = nn.Sequential(nn.Linear(in_features, hidden), nn.ReLU(),
                                      nn.Linear(hidden, hidden), nn.ReLU())
        self.fc = nn.Linear(hidden, classes)

    def forward(self, x):
        return self.fc(self.features(x))


def train(model, optimizer, x, y, steps: int, label: str) -> None:
    for step in range(steps):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        if step % max(1, steps // 5) == 0 or step == steps - 1:
            print(f"  [{label}] step {step:3d}  loss {loss.item():.4f}")


def graph_leaves(loss) -> list:
    """The leaf tensors the backward graph of `loss` reaches, via grad_fn.next_functions."""
    leaves, stack, seen = [], [loss.grad_fn], set()
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if type(node).__name__ == "AccumulateGrad":
            leaves.append(node.variable)
        stack.extend(next_node for next_node, _ in node.next_functions)
    return leaves


def main() -> None:
    fg.manual_seed(0)
    x = fg.randn(64, 10)

    # "Pretraining" on a first task with 4 classes.
    model = TinyNet(10, 32, 4)
    print(model)
    pretrain_targets = (x[:, 0] > 0).long() + 2 * (x[:, 1] > 0).long()
    train(model, optim.Adam(model.parameters(), lr=1e-2), x, pretrain_targets, steps=50, label="pretrain")

    # Freeze everything, then replace the classifier for a new 3-class task:
    # a freshly constructed layer's parameters require grad by default.
    for param in model.parameters():
        param.requires_grad = False
    model.fc = nn.Linear(32, 3)
    model.zero_grad()
    print("\ntrainable after the swap:", [name for name, p in model.named_parameters() if p.requires_grad])

    new_targets = fg.randint(0, 3, (64,))
    optimizer = optim.SGD(model.fc.parameters(), lr=1e-1, momentum=0.9)
    train(model, optimizer, x, new_targets, steps=20, label="fine-tune")

    # The recorded graph stops at the new layer: the frozen features were run
    # without history, so backward has nothing to do for them.
    loss = F.cross_entropy(model(x), new_targets)
    names = {id(p): n for n, p in model.named_parameters()}
    print("\nleaves reached by backward:", sorted(names[id(t)] for t in graph_leaves(loss)))

    print("\nfrozen parameters' .grad:")
    for name, param in model.named_parameters():
        print(f"  {name:20s} requires_grad={param.requires_grad!s:5s}  grad is None: {param.grad is None}")


if __name__ == "__main__":
    main()
