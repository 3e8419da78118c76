"""fusegrad.nn: torch.nn's Module system, layers, losses and functional API.

    import fusegrad as fg
    model = fg.nn.Sequential(fg.nn.Linear(4, 8), fg.nn.ReLU(), fg.nn.Linear(8, 3))
    loss = fg.nn.functional.cross_entropy(model(x), targets)
"""
from . import functional, init, utils
from .containers import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .layers import (ELU, GELU, BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, Dropout, Embedding, Flatten, Identity, L1Loss, LayerNorm, LeakyReLU, Linear,
                     LogSoftmax, MSELoss, NLLLoss, ReLU, Sigmoid, SiLU, Softmax, Softplus, Tanh)
from .module import Module, Parameter

__all__ = ["Module", "Parameter", "ParameterList", "ParameterDict", "Identity", "Linear", "Dropout", "ReLU", "ELU", "GELU", "SiLU", "LeakyReLU", "Softplus", "Embedding",
           "LayerNorm", "L1Loss", "Tanh", "Sigmoid", "Softmax", "LogSoftmax",
           "Flatten", "Sequential", "ModuleList", "ModuleDict", "MSELoss", "CrossEntropyLoss", "NLLLoss",
           "BCELoss", "BCEWithLogitsLoss", "functional", "init", "utils"]
