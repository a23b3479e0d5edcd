"""Layers, activations, losses and the learning phase, written against the standard."""

from . import functional as functional
from ._modules import AvgPool2D as AvgPool2D
from ._modules import Conv2D as Conv2D
from ._modules import Dense as Dense
from ._modules import Flatten as Flatten
from ._modules import LeNet as LeNet
from ._modules import MaxPool2D as MaxPool2D
from ._modules import Module as Module
from ._modules import Sequential as Sequential
from ._modules import glorot_uniform as glorot_uniform
from ._modules import learning_phase as learning_phase
from ._modules import phase as phase
from ._modules import set_learning_phase as set_learning_phase
from ._modules import to_device as to_device
from .functional import relu as relu
from .functional import softmax as softmax
from .functional import softmax_cross_entropy as softmax_cross_entropy

__all__ = [
    "functional", "Module", "Dense", "Conv2D", "AvgPool2D", "MaxPool2D", "Flatten", "Sequential",
    "LeNet", "glorot_uniform", "learning_phase", "set_learning_phase", "phase", "to_device",
    "relu", "softmax", "softmax_cross_entropy",
]  # fmt: skip
