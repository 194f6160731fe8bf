"""Post-training int8 quantization: `webxnn quantize` and `webxnn.quantize(...)`. See `api`."""

from __future__ import annotations

import sys
import types
from typing import Any

from .api import DEFAULT_METHOD, Quantized, layer_table, quantize
from .data import CalibrationError
from .observers import METHODS
from .plan import MODES

__all__ = ["quantize", "Quantized", "CalibrationError", "layer_table", "METHODS", "MODES", "DEFAULT_METHOD"]


class _CallableModule(types.ModuleType):
    """`webxnn.quantize` is this package (importing a submodule rebinds the parent's attribute to it), so the
    package itself is callable: `webxnn.quantize(graph, data, ...)` is `webxnn.quantize.quantize(...)`."""

    def __call__(self, *args: Any, **kwargs: Any) -> Quantized:
        return quantize(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
