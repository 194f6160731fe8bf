"""webxnn benchmarks: `python -m bench <suite>` from the repository root. Speed lives here, never in tests."""
