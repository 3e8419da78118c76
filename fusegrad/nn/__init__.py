"""fusegrad.nn: torch.nn's Module system, layers, losses and functional API.

    import fusegrad as fg
    model = fg.nn.Sequential(fg.nn.Linear(4, 8), fg.nn.ReLU(), fg.nn.Linear(8, 3))
    loss = fg.nn.functional.cross_entropy(model(x), targets)
"""
from . import functional, init, utils
from .containers import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .layers import (ELU, GELU, BCELoss, BCEWithLogitsLoss, Bilinear, CrossEntropyLoss, Dropout, Embedding, EmbeddingBag, Flatten, Identity, Unflatten, L1Loss, LayerNorm, LeakyReLU, Linear,
                     LogSoftmax, MSELoss, NLLLoss, ReLU, Sigmoid, SiLU, Softmax, Softmax2d, Softplus, Tanh)
from .module import Buffer, Module, Parameter
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase  # noqa: E402
from .normalization import (BatchNorm1d, BatchNorm2d, BatchNorm3d, GroupNorm, InstanceNorm1d,  # noqa: E402
                            InstanceNorm2d, InstanceNorm3d, LocalResponseNorm, RMSNorm)
from .dropout import AlphaDropout, Dropout1d, Dropout2d, Dropout3d, FeatureAlphaDropout  # noqa: E402
from .attention import (MultiheadAttention, Transformer, TransformerDecoder, TransformerDecoderLayer,  # noqa: E402
                        TransformerEncoder, TransformerEncoderLayer)
from .activations import (CELU, GLU, SELU, Hardshrink, Hardsigmoid, Hardswish, Hardtanh, LogSigmoid, Mish,  # noqa: E402
                          PReLU, ReLU6, RReLU, Softmin, Softshrink, Softsign, Tanhshrink, Threshold)
from .losses import (CosineEmbeddingLoss, CosineSimilarity, GaussianNLLLoss, HingeEmbeddingLoss, HuberLoss,  # noqa: E402
                     KLDivLoss, MarginRankingLoss, MultiLabelSoftMarginLoss, MultiMarginLoss, PairwiseDistance,
                     PoissonNLLLoss, SmoothL1Loss, SoftMarginLoss, TripletMarginLoss)
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d  # noqa: E402
from .pooling import (AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveAvgPool3d, AdaptiveMaxPool1d,  # noqa: E402
                      AdaptiveMaxPool2d, AdaptiveMaxPool3d, AvgPool1d, AvgPool2d, AvgPool3d, LPPool1d, LPPool2d,
                      LPPool3d, MaxPool1d, MaxPool2d, MaxPool3d, MaxUnpool1d, MaxUnpool2d, MaxUnpool3d)
from .padding import (CircularPad1d, CircularPad2d, CircularPad3d, ConstantPad1d, ConstantPad2d,  # noqa: E402
                      ConstantPad3d, Fold, PixelShuffle, PixelUnshuffle, ReflectionPad1d, ReflectionPad2d,
                      ReflectionPad3d, ReplicationPad1d, ReplicationPad2d, ReplicationPad3d, Unfold, Upsample,
                      ZeroPad1d, ZeroPad2d, ZeroPad3d)

__all__ = ["Module", "Parameter", "Buffer", "ParameterList", "ParameterDict", "Identity", "Linear", "Bilinear", "Softmax2d", "Dropout", "ReLU", "ELU", "GELU", "SiLU", "LeakyReLU", "Softplus", "Embedding",
           "LayerNorm", "L1Loss", "Tanh", "Sigmoid", "Softmax", "LogSoftmax",
           "Flatten", "Unflatten", "Sequential", "ModuleList", "ModuleDict", "MSELoss", "CrossEntropyLoss", "NLLLoss",
           "BCELoss", "BCEWithLogitsLoss", "functional", "init", "utils"]
__all__ += ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]
__all__ += ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "GroupNorm", "InstanceNorm1d", "InstanceNorm2d",
            "InstanceNorm3d", "LocalResponseNorm", "RMSNorm", "AlphaDropout", "Dropout1d", "Dropout2d", "Dropout3d",
            "FeatureAlphaDropout", "MultiheadAttention", "TransformerEncoder", "TransformerEncoderLayer", "Transformer",
            "TransformerDecoder", "TransformerDecoderLayer"]
__all__ += ["ReLU6", "Hardtanh", "Hardsigmoid", "Hardswish", "SELU", "CELU", "Mish", "Softsign", "Softmin", "LogSigmoid",
            "Tanhshrink", "Threshold", "GLU", "PReLU", "Hardshrink", "Softshrink", "RReLU", "SmoothL1Loss", "HuberLoss",
            "KLDivLoss", "CosineSimilarity", "PairwiseDistance", "CosineEmbeddingLoss", "MarginRankingLoss",
            "HingeEmbeddingLoss", "SoftMarginLoss", "PoissonNLLLoss", "GaussianNLLLoss", "TripletMarginLoss",
            "MultiLabelSoftMarginLoss", "MultiMarginLoss"]
__all__ += ["Conv1d", "Conv2d", "ConvTranspose1d", "ConvTranspose2d", "MaxPool1d", "MaxPool2d", "AvgPool1d", "AvgPool2d",
            "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "LPPool1d", "LPPool2d",
            "ZeroPad1d", "ZeroPad2d", "ConstantPad1d", "ConstantPad2d", "ReflectionPad1d", "ReflectionPad2d",
            "ReplicationPad1d", "ReplicationPad2d", "CircularPad1d", "CircularPad2d", "Upsample", "PixelShuffle",
            "PixelUnshuffle", "Unfold", "Fold"]
from . import lazy  # noqa: E402
from .lazy import (LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d, LazyConv1d, LazyConv2d,  # noqa: E402
                   LazyConv3d, LazyConvTranspose1d, LazyConvTranspose2d, LazyConvTranspose3d, LazyInstanceNorm1d,
                   LazyInstanceNorm2d, LazyInstanceNorm3d, LazyLinear, UninitializedBuffer, UninitializedParameter)

__all__ += ["LazyLinear", "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d",
            "LazyConvTranspose3d", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyInstanceNorm1d",
            "LazyInstanceNorm2d", "LazyInstanceNorm3d", "UninitializedParameter", "UninitializedBuffer"]
__all__ += ["MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d", "EmbeddingBag"]
__all__ += ["Conv3d", "ConvTranspose3d", "MaxPool3d", "AvgPool3d", "AdaptiveAvgPool3d", "AdaptiveMaxPool3d", "LPPool3d",
            "ZeroPad3d", "ConstantPad3d", "ReflectionPad3d", "ReplicationPad3d", "CircularPad3d"]
from .padding import ChannelShuffle, UpsamplingBilinear2d, UpsamplingNearest2d  # noqa: E402
from .losses import MultiLabelMarginLoss, TripletMarginWithDistanceLoss  # noqa: E402

__all__ += ["ChannelShuffle", "UpsamplingBilinear2d", "UpsamplingNearest2d", "MultiLabelMarginLoss",
            "TripletMarginWithDistanceLoss"]
from .pooling import FractionalMaxPool2d, FractionalMaxPool3d  # noqa: E402
from .adaptive import AdaptiveLogSoftmaxWithLoss  # noqa: E402

__all__ += ["FractionalMaxPool2d", "FractionalMaxPool3d", "AdaptiveLogSoftmaxWithLoss"]
from .losses import CTCLoss  # noqa: E402

__all__ += ["CTCLoss"]
from .parallel import Container, DataParallel, NLLLoss2d, SyncBatchNorm  # noqa: E402

__all__ += ["Container", "DataParallel", "NLLLoss2d", "SyncBatchNorm"]
