"""Lowering rules, one module per op family. Importing this package registers them all."""

from __future__ import annotations

from . import (  # noqa: F401  (registration side effects)
    conv,
    dynquant,
    elementwise,
    gather,
    logic,
    matmul,
    normalization,
    pool,
    quantize,
    recurrent,
    reduce,
    resample,
    shape,
)
