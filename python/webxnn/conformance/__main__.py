"""`python -m webxnn.conformance DIR... [--op OP] [--json OUT]`: per-op pass/unsupported/fail table."""

from __future__ import annotations

from .cli import main

raise SystemExit(main())
