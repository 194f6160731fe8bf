"""What the CPU offers and which kernel table the runtime picked (re-exported as ``webxnn.cpu_info``)."""

from __future__ import annotations

from typing import Any


def cpu_info() -> dict[str, Any]:
    """Return ``{"isa": str, "int8": str, "avx2": bool, "fma": bool, "f16c": bool, "avx512f": bool,
    "avx512vl": bool, "avx512bw": bool, "avx512vnni": bool, "avxvnni": bool, "cores": int}``.

    ``isa`` is the kernel table the runtime uses, the best this CPU runs: "avx512vnni" (AVX2's table with
    int8 GEMMs on 512-bit vpdpbusd tiles and fp32 GEMMs and convolutions on 512-bit FMA tiles), "avxvnni"
    (AVX2's table with int8 GEMMs on vpdpbusd), "avx2" or "scalar"; ``WEBXNN_ISA=avx2`` (or another of these
    names) forces one the CPU runs. ``int8`` says what runs its int8 kernels (e.g. "avx512vnni (vpdpbusd,
    exact)", "avx2 (exact: ...)" or "scalar").
    """
    # Imported lazily so that `import webxnn` works (for compiling graphs) without the native module built.
    from webxnn import _runtime

    return dict(_runtime.cpu_info())
