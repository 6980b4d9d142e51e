"""Keras layers: ``from xlapy.keras import layers; layers.Dense(10, activation='relu')``.

- :mod:`.base`: ``Layer``, ``Input`` / ``InputLayer`` and ``KerasTensor`` (functional API);
- :mod:`.core`: ``Dense``, ``Activation``, ``Flatten``, ``Reshape``, ``Dropout``,
  ``Embedding``, ``Lambda``, ``Add``, ``Concatenate``;
- :mod:`.conv`: ``Conv1D/2D/3D``, ``MaxPooling1D/2D``, ``AveragePooling1D/2D``,
  ``GlobalAveragePooling1D/2D``, ``GlobalMaxPooling2D``;
- :mod:`.normalization`: ``BatchNormalization``, ``LayerNormalization``.
"""
from __future__ import annotations

from .base import Input, InputLayer, KerasTensor, Layer
from .conv import (AveragePooling1D, AveragePooling2D, AvgPool2D, Conv1D, Conv2D, Conv3D,
                   GlobalAveragePooling1D, GlobalAveragePooling2D, GlobalMaxPooling2D,
                   MaxPool2D, MaxPooling1D, MaxPooling2D)
from .core import (Activation, Add, Concatenate, Dense, Dropout, Embedding, Flatten, Lambda,
                   Reshape)
from .normalization import BatchNormalization, LayerNormalization

__all__ = ["Layer", "Input", "InputLayer", "KerasTensor", "Dense", "Activation", "Flatten",
           "Reshape", "Dropout", "Embedding", "Lambda", "Add", "Concatenate", "Conv1D",
           "Conv2D", "Conv3D", "MaxPooling1D", "MaxPooling2D", "MaxPool2D",
           "AveragePooling1D", "AveragePooling2D", "AvgPool2D", "GlobalAveragePooling1D",
           "GlobalAveragePooling2D", "GlobalMaxPooling2D", "BatchNormalization",
           "LayerNormalization"]
