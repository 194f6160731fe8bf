"""What the CPU offers and which kernel table the runtime picked (re-exported as ``webxnn.cpu_info``)."""

from __future__ import annotations

from typing import Any


def cpu_info() -> dict[str, Any]:
    """Return ``{"isa": str, "int8": str, "avx2": bool, "fma": bool, "f16c": bool, "avx512f": bool,
    "cores": int}``.

    ``isa`` is the kernel table the runtime uses ("scalar" or "avx2"; ``WEBXNN_ISA=scalar`` forces scalar);
    ``int8`` says what runs its int8 kernels (e.g. "avx2 (exact: ...)" or "scalar").
    """
    # Imported lazily so that `import webxnn` works (for compiling graphs) without the native module built.
    from webxnn import _runtime

    return dict(_runtime.cpu_info())
