"""WPT-style WebNN conformance: run ../shared/conformance/wpt*/<op>.json cases end to end (text → compile →
load → run) and compare exactly as WPT does.

    from webxnn.conformance import run_dir, summarize, format_table
    results = run_dir(["../shared/conformance/wpt"], ops=["conv2d"])
    print(format_table(summarize(results)))

Command line: `python -m webxnn.conformance DIR... [--op OP] [--json OUT]`.
"""

from __future__ import annotations

from .compare import Comparison, int_distance, to_half_bits, ulp_distance_f16, ulp_distance_f32
from .runner import CaseResult, OpSummary, format_table, run_case, run_dir, run_file, summarize

__all__ = [
    "CaseResult",
    "OpSummary",
    "run_case",
    "run_file",
    "run_dir",
    "summarize",
    "format_table",
    "Comparison",
    "ulp_distance_f32",
    "ulp_distance_f16",
    "to_half_bits",
    "int_distance",
]
