"""Why a GGUF's vocabulary cannot become a tokenizer, in words: read only after the build failed, whose own message
names a library's internals (a Rust type, a missing key)."""

from __future__ import annotations

from pathlib import Path

# What a tokenizer model needs besides its tokens, where transformers' GGUF reader fails without it.
NEEDS = {"gpt2": ("merges", "a BPE vocabulary")}


def vocabulary_fault(path: Path) -> str | None:
    """The first fault found in the file's tokenizer metadata, or None where none is seen (or the file cannot be
    read again: the build's own message stands then)."""
    try:
        import gguf

        fields = gguf.GGUFReader(str(path)).fields
        model, tokens = _contents(fields, "model"), _contents(fields, "tokens")
    except Exception:  # noqa: BLE001 - a second read that fails adds nothing to the first fault
        return None
    if not isinstance(model, str) or not model:
        return "it names no tokenizer model (tokenizer.ggml.model)"
    if not isinstance(tokens, list) or not tokens:
        return "it has no tokens (tokenizer.ggml.tokens)"
    if model in NEEDS:
        key, kind = NEEDS[model]
        needed = _contents(fields, key)
        if not isinstance(needed, list) or not needed:
            return f"{kind} ({model!r}) needs its {key} (tokenizer.ggml.{key}), and the file has none"
    merges = _contents(fields, "merges")
    if isinstance(merges, list):
        for index, merge in enumerate(merges):
            parts = merge.split(" ") if isinstance(merge, str) else []
            if len(parts) != 2 or not all(parts):
                return f"merge {index:,} ({str(merge)[:60]!r}) is not two tokens separated by one space"
    return None


def _contents(fields, key: str):
    field = fields.get(f"tokenizer.ggml.{key}")
    return None if field is None else field.contents()
