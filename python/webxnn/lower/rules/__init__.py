"""Lowering rules, one module per op family. Importing this package registers them all."""

from __future__ import annotations

from . import conv, elementwise, matmul, normalization, pool, shape  # noqa: F401  (registration side effects)
