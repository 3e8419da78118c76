"""The layer rule of ARCHITECTURE.md, checked on the source: imports run one way only,
fusegrad -> runtime -> (codegen, tracer) -> ir, and ir imports none of the others (codegen and
tracer not each other). Deferred imports inside functions count too."""
import ast
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LAYERS = ("fusegrad", "runtime", "codegen", "tracer", "ir")
ALLOWED = {"fusegrad": {"runtime", "codegen", "tracer", "ir"}, "runtime": {"codegen", "tracer", "ir"},
           "codegen": {"ir"}, "tracer": {"ir"}, "ir": set()}


def _imported_layers(path: str, package: list):
    """(line, layer) for each import in the file at `path` (of package `package`, as installed:
    ["fusegrad", "tracer", ...]) that names one of the layers."""
    tree = ast.parse(open(path, encoding="utf-8").read())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name.split(".") for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            module = base + (node.module.split(".") if node.module else [])
            # (`from fusegrad import ir`, `from .. import tracer`: the names may be layers)
            targets = [module + [alias.name] for alias in node.names] if module == ["fusegrad"] else [module]
        else:
            continue
        for parts in targets:
            if parts and parts[0] == "fusegrad":
                yield node.lineno, parts[1] if len(parts) > 1 and parts[1] in LAYERS[1:] else "fusegrad"
            elif parts and parts[0] in LAYERS[1:]:
                yield node.lineno, parts[0] + " (imported without the fusegrad. prefix)"


def test_imports_follow_the_layer_rule():
    wrong = []
    for layer in LAYERS:
        for dirpath, _, files in os.walk(os.path.join(ROOT, layer)):
            for name in files:
                if not name.endswith(".py"):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, ROOT)
                parts = rel[:-3].split(os.sep)
                package = (parts[:-1] if layer == "fusegrad" else ["fusegrad"] + parts[:-1])
                for line, target in _imported_layers(path, package):
                    if target != layer and target not in ALLOWED[layer]:
                        wrong.append(f"{rel}:{line} imports {target}")
    assert wrong == []
