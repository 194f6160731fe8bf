"""ExecuTorch programs (`.pte`): webxnn writes them (XnnpackBackend delegate) and reads their payloads."""
