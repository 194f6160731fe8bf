"""A one-line progress bar with the ETA on stderr, shown only when stderr is a terminal and not quieted."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    def __init__(self, total: int, label: str, quiet: bool = False, stream: TextIO | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = not quiet and bool(getattr(self.stream, "isatty", lambda: False)())
        self.total, self.label, self.done = total, label, 0
        self.t0 = time.perf_counter()

    def step(self, n: int = 1) -> None:
        self.done += n
        if self.enabled:
            elapsed = time.perf_counter() - self.t0
            eta = elapsed / self.done * (self.total - self.done) if self.done else 0.0
            width = 24
            full = int(width * self.done / max(self.total, 1))
            bar = "#" * full + "." * (width - full)
            self.stream.write(
                f"\r{self.label} [{bar}] {self.done}/{self.total}  {elapsed:5.1f} s, ETA {eta:5.1f} s "
            )
            self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\n")
            self.stream.flush()
