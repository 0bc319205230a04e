"""FLOPs and bytes of a prompt's pass and of a decode step, counted from a model's shape.

What is counted, for every family alike: the matrix products (2 FLOPs per multiply-add: q, k, v, the attention's
output, gate, up, down, and the head for the one position whose logits are taken) and attention's two products
(query x keys and weights x values, over the positions each row sees: all before it, or its sliding window).
Norms, rotary embeddings, biases, soft-caps and activations are left out: together well under 1% here.

Bytes are the least each phase must move: a decode step reads every weight once (the embedding only for its
token's row, unless the head shares it) and the keys and values of every position it attends to, and writes
its own; a prompt's pass reads every weight once, writes its positions' keys and values and reads the cache
once per layer.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass(frozen=True)
class ArithmeticShape:
    """A model as the counts see it; plain numbers, so it travels as a dict (describe(), exports, the window)."""

    layers: int
    width: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    vocab: int
    weight_bytes: int  # every weight as loaded, each tensor once (a tied head counts once)
    embedding_bytes: int = 0  # a token embedding apart from the head: a step reads one row of it, not all
    windows: tuple[int, ...] = field(default=())  # per layer: its sliding window, 0 for full attention
    cache_value_bytes: int = 2  # one cached key or value element (float16)
    prefill_precision: str | None = None  # the GEMM precision a prompt's products run in, if any

    @classmethod
    def from_dict(cls, facts: dict) -> ArithmeticShape:
        known = {name: facts[name] for name in cls.__dataclass_fields__ if name in facts}
        known["windows"] = tuple(known.get("windows") or ())
        return cls(**known)

    def to_dict(self) -> dict:
        return {**asdict(self), "windows": list(self.windows)}

    def layer_parameters(self) -> int:
        """Weights of one layer's products: q, k, v, the attention's output, gate, up and down."""
        q_size, kv_size = self.heads * self.head_dim, self.kv_heads * self.head_dim
        return self.width * (q_size + 2 * kv_size) + q_size * self.width + 3 * self.width * self.ffn

    def head_parameters(self) -> int:
        return self.width * self.vocab

    def step_weight_bytes(self) -> int:
        """What one decode step reads of the weights: all of them but an untied embedding, of which one row."""
        row = self.embedding_bytes // self.vocab if self.embedding_bytes else 0
        return self.weight_bytes - self.embedding_bytes + row

    def window(self, layer: int) -> int:
        return self.windows[layer] if layer < len(self.windows) else 0

    def visible(self, layer: int, position: int) -> int:
        """How many positions a row at `position` attends to in `layer` (itself included)."""
        window = self.window(layer)
        return min(position + 1, window) if window else position + 1

    def cache_bytes_per_position(self) -> int:
        """Keys and values of one position in one layer."""
        return 2 * self.kv_heads * self.head_dim * self.cache_value_bytes


@dataclass(frozen=True)
class PhaseCounts:
    flops: float
    bytes: float

    @property
    def intensity(self) -> float:
        """Arithmetic intensity: FLOPs per byte moved."""
        return self.flops / self.bytes if self.bytes else 0.0

    def to_dict(self) -> dict:
        return {"flops": self.flops, "bytes": self.bytes, "intensity_flop_per_byte": self.intensity}


def _visible_sum(shape: ArithmeticShape, layer: int, first: int, count: int) -> int:
    """Sum over positions first .. first+count-1 of what each sees in `layer`, in closed form."""
    window, last = shape.window(layer), first + count - 1

    def growing(upto: int) -> int:  # sum of (p + 1) for p in 0..upto
        return (upto + 1) * (upto + 2) // 2 if upto >= 0 else 0

    if not window:
        return growing(last) - growing(first - 1)
    # positions below window - 1 see p + 1, the rest see the whole window
    edge = min(last, window - 1)
    partial = growing(edge) - growing(first - 1) if edge >= first else 0
    full = max(0, last - max(first, window) + 1)
    return partial + full * window


def attention_flops(shape: ArithmeticShape, first: int, count: int) -> int:
    """Both attention products for `count` rows at positions first.., every layer: 4 x head_dim per head and pair."""
    return sum(
        4 * shape.heads * shape.head_dim * _visible_sum(shape, layer, first, count) for layer in range(shape.layers)
    )


def prefill_counts(shape: ArithmeticShape, tokens: int, start: int = 0) -> PhaseCounts:
    """A prompt's pass over `tokens` positions after `start` cached ones, with the logits of its last position."""
    flops = (
        2 * shape.layer_parameters() * shape.layers * tokens
        + 2 * shape.head_parameters()
        + attention_flops(shape, start, tokens)
    )
    per_position = shape.cache_bytes_per_position() * shape.layers
    moved = shape.step_weight_bytes() + per_position * tokens + per_position * (start + tokens)
    return PhaseCounts(float(flops), float(moved))


def decode_counts(shape: ArithmeticShape, position: int, batch: int = 1) -> PhaseCounts:
    """One decode step of `batch` sequences, each feeding its token at `position` (that many cached before it)."""
    flops = batch * (
        2 * (shape.layer_parameters() * shape.layers + shape.head_parameters()) + attention_flops(shape, position, 1)
    )
    cache = sum(shape.visible(layer, position) for layer in range(shape.layers)) * shape.cache_bytes_per_position()
    moved = shape.step_weight_bytes() + batch * cache
    return PhaseCounts(float(flops), float(moved))


def reply_decode_counts(shape: ArithmeticShape, prompt_tokens: int, output_tokens: int) -> PhaseCounts:
    """Per step, averaged over a reply's decode steps: step k feeds token k at position prompt_tokens + k - 1.

    In closed form, since the window asks for it as each reply ends: summed step by step it cost a layer's
    worth of Python per token, 5.8 ms at 256 tokens and 35 ms at 2,560 (AMD EPYC, AVX-512).
    """
    steps = max(output_tokens, 2) - 1  # the first token came from the prompt's pass
    pairs = [_visible_sum(shape, layer, prompt_tokens, steps) for layer in range(shape.layers)]
    flops = steps * 2 * (shape.layer_parameters() * shape.layers + shape.head_parameters()) + sum(
        4 * shape.heads * shape.head_dim * seen for seen in pairs
    )
    moved = steps * shape.step_weight_bytes() + sum(pairs) * shape.cache_bytes_per_position()
    return PhaseCounts(flops / steps, moved / steps)
