#!/usr/bin/env bash
# Apply both formatters to every tracked source file: ruff format (python/, tests/, bench/) and clang-format
# with .clang-format (csrc/). The same tools and versions as the pre-commit hooks (the pinned test extras), so
# afterwards `pre-commit run --all-files` finds nothing to change. Run from anywhere inside the repository.
set -euo pipefail
cd "$(git -C "$(dirname "$0")" rev-parse --show-toplevel)"
ruff format python tests bench
git ls-files -z -- 'csrc/*.cc' 'csrc/*.h' | xargs -0 clang-format -i
# a string the formatter re-indented can end past the line limit: say so now rather than in CI
ruff check python tests bench
