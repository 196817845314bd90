"""The layer classes of rustgrad.nn."""

from .activation import (
    CELU,
    ELU,
    GELU,
    GLU,
    SELU,
    Hardshrink,
    Hardsigmoid,
    Hardswish,
    Hardtanh,
    LeakyReLU,
    LogSigmoid,
    LogSoftmax,
    Mish,
    MultiheadAttention,
    ReLU,
    ReLU6,
    RReLU,
    Sigmoid,
    SiLU,
    Softmax,
    Softmax2d,
    Softmin,
    Softplus,
    Softshrink,
    Softsign,
    Tanh,
    Tanhshrink,
    Threshold,
)
from .adaptive import AdaptiveLogSoftmaxWithLoss
from .batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d
from .channelshuffle import ChannelShuffle
from .container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .distance import CosineSimilarity, PairwiseDistance
from .dropout import AlphaDropout, Dropout, Dropout1d, Dropout2d, Dropout3d, FeatureAlphaDropout
from .flatten import Flatten, Unflatten
from .fold import Fold, Unfold
from .instancenorm import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d
from .lazy import (
    LazyBatchNorm1d,
    LazyBatchNorm2d,
    LazyBatchNorm3d,
    LazyConv1d,
    LazyConv2d,
    LazyConv3d,
    LazyConvTranspose1d,
    LazyConvTranspose2d,
    LazyConvTranspose3d,
    LazyInstanceNorm1d,
    LazyInstanceNorm2d,
    LazyInstanceNorm3d,
    LazyLinear,
)
from .linear import Bilinear, Identity, Linear
from .loss import (
    BCELoss,
    BCEWithLogitsLoss,
    CosineEmbeddingLoss,
    CrossEntropyLoss,
    CTCLoss,
    GaussianNLLLoss,
    HingeEmbeddingLoss,
    HuberLoss,
    KLDivLoss,
    L1Loss,
    LinearCrossEntropyLoss,
    MarginRankingLoss,
    MSELoss,
    MultiLabelMarginLoss,
    MultiMarginLoss,
    NLLLoss,
    PoissonNLLLoss,
    SmoothL1Loss,
    SoftMarginLoss,
    TripletMarginLoss,
    TripletMarginWithDistanceLoss,
)
from .module import Module
from .multilabel_loss import MultiLabelSoftMarginLoss
from .normalization import CrossMapLRN2d, GroupNorm, LayerNorm, LocalResponseNorm
from .padding import (
    CircularPad1d,
    CircularPad2d,
    CircularPad3d,
    ConstantPad1d,
    ConstantPad2d,
    ConstantPad3d,
    ReflectionPad1d,
    ReflectionPad2d,
    ReflectionPad3d,
    ReplicationPad1d,
    ReplicationPad2d,
    ReplicationPad3d,
    ZeroPad1d,
    ZeroPad2d,
    ZeroPad3d,
)
from .pixelshuffle import PixelShuffle, PixelUnshuffle
from .pooling import (
    AdaptiveAvgPool1d,
    AdaptiveAvgPool2d,
    AdaptiveAvgPool3d,
    AdaptiveMaxPool1d,
    AdaptiveMaxPool2d,
    AdaptiveMaxPool3d,
    AvgPool1d,
    AvgPool2d,
    AvgPool3d,
    FractionalMaxPool2d,
    FractionalMaxPool3d,
    LPPool1d,
    LPPool2d,
    LPPool3d,
    MaxPool1d,
    MaxPool2d,
    MaxPool3d,
    MaxUnpool1d,
    MaxUnpool2d,
    MaxUnpool3d,
)
from .prelu import PReLU
from .rmsnorm import RMSNorm
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase
from .sparse import Embedding, EmbeddingBag
from .sync_batchnorm import SyncBatchNorm
from .transformer import (
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)
from .upsampling import Upsample, UpsamplingBilinear2d, UpsamplingNearest2d

__all__ = [
    "Module", "Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict",
    "Identity", "Linear", "Bilinear", "Conv1d", "Conv2d", "ConvTranspose1d",
    "ConvTranspose2d", "MaxPool1d", "MaxPool2d",
    "AvgPool1d", "AvgPool2d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "BatchNorm1d",
    "BatchNorm2d", "BatchNorm3d", "LayerNorm", "GroupNorm", "Embedding", "Dropout",
    "Dropout1d", "Dropout2d", "Flatten", "Unflatten", "ReLU", "ReLU6", "LeakyReLU", "ELU",
    "SELU", "CELU", "GELU", "SiLU", "Mish", "Sigmoid", "Tanh", "Softplus", "Softmax", "Softmin",
    "LogSoftmax", "Hardtanh", "Hardsigmoid", "Hardswish", "LogSigmoid", "Softsign",
    "Tanhshrink", "L1Loss", "MSELoss", "CrossEntropyLoss", "NLLLoss", "BCELoss",
    "BCEWithLogitsLoss", "SmoothL1Loss", "HuberLoss", "KLDivLoss", "SoftMarginLoss",
    "MarginRankingLoss", "HingeEmbeddingLoss", "CosineEmbeddingLoss", "PoissonNLLLoss",
    "GaussianNLLLoss", "RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell",
    "GRUCell", "MultiheadAttention",
    "Transformer", "TransformerEncoder", "TransformerDecoder", "TransformerEncoderLayer",
    "TransformerDecoderLayer",
    "Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d",
    "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "MultiLabelSoftMarginLoss", "ConstantPad1d",
    "ConstantPad2d", "ZeroPad1d", "ZeroPad2d", "ReflectionPad1d", "ReflectionPad2d",
    "ReplicationPad1d", "ReplicationPad2d", "CircularPad1d", "CircularPad2d", "ConstantPad3d",
    "ZeroPad3d", "ReflectionPad3d", "ReplicationPad3d", "CircularPad3d", "PixelShuffle",
    "PixelUnshuffle", "PReLU", "RMSNorm", "GLU", "Hardshrink", "Softshrink", "Threshold",
    "RReLU", "Softmax2d", "MultiMarginLoss", "MultiLabelMarginLoss", "TripletMarginLoss",
    "TripletMarginWithDistanceLoss", "EmbeddingBag", "PairwiseDistance", "CosineSimilarity",
    "LocalResponseNorm", "LPPool1d", "LPPool2d", "MaxUnpool1d", "MaxUnpool2d",
    "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "Dropout3d", "AlphaDropout",
    "FeatureAlphaDropout", "ChannelShuffle", "Fold", "Unfold",
    "AdaptiveLogSoftmaxWithLoss", "SyncBatchNorm", "LazyLinear", "LazyConv1d", "LazyConv2d",
    "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyBatchNorm1d", "LazyBatchNorm2d",
    "LazyBatchNorm3d", "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d",
    "CTCLoss",
]
__all__ += ["Conv3d", "ConvTranspose3d", "MaxPool3d", "AvgPool3d", "AdaptiveAvgPool3d",
            "AdaptiveMaxPool3d", "LazyConv3d", "LazyConvTranspose3d"]
__all__ += ["FractionalMaxPool2d", "FractionalMaxPool3d", "LPPool3d", "MaxUnpool3d",
            "CrossMapLRN2d", "LinearCrossEntropyLoss"]
