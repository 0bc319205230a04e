"""A model in the C kernels: its shape, borrowed weight buffers, KV cache, and the passes as numpy calls."""

from __future__ import annotations

import ctypes
import mmap
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from core.kernels.library import Config, KernelLibrary
from core.kernels.pauses import PACKING_CALLBACKS

# Tokens per chunk of a prompt's pass: keeps the scratch buffers small for long prompts, and a chunk's
# activations in cache while the weights pass over them.
PROMPT_CHUNK = 256
# A pass of at most this many tokens is bound by reading the weights, which the packed layout speeds up (a 7B's decode
# step 272-289 ms in the file's layout against 176-194 packed); a prompt's pass is bound by arithmetic and runs as
# fast on the file's layout. So matrices a load left unpacked are packed before the first such pass, or the first
# pass of several sequences (the lab's batch sweep).
PACKED_PASS_ROWS = 8
# Rows a packed group holds (csrc/quants.h): a matrix is packed where its rows are whole groups.
PACK_ROWS = 16
# The role read a row at a time, never multiplied: never packed, never widened (csrc/model.c).
EMBEDDING = "token_embd"


@dataclass(frozen=True)
class ModelShape:
    """What the C pass needs to know of a model besides its weights; read from a GGUF's metadata."""

    layers: int
    width: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    vocab: int
    norm_eps: float
    rope_dims: int
    rope_style: str = "adjacent"  # llama.cpp's "normal" pairs; "halves" is NeoX's
    activation: str = "silu"
    embed_scale: float = 1.0
    attention_scale: float = 0.0  # 0: 1 / sqrt(head_dim)
    attention_softcap: float = 0.0
    final_softcap: float = 0.0
    scale_queries: bool = False  # scale (and round) the queries, not the scores, as llama.cpp's Gemma and Phi-3 do
    windows: tuple[int, ...] = field(default=())  # per layer, 0 for full attention

    def config(self, library: KernelLibrary) -> Config:
        """The C configuration, its enums numbered as the library numbers them."""
        return Config(
            layers=self.layers,
            width=self.width,
            heads=self.heads,
            kv_heads=self.kv_heads,
            head_dim=self.head_dim,
            ffn=self.ffn,
            vocab=self.vocab,
            rope_dims=self.rope_dims,
            rope_style=library.rope_styles[self.rope_style],
            activation=library.activations[self.activation],
            scale_queries=int(self.scale_queries),
            norm_eps=self.norm_eps,
            embed_scale=self.embed_scale,
            attention_scale=self.attention_scale or self.head_dim**-0.5,
            attention_softcap=self.attention_softcap,
            final_softcap=self.final_softcap,
        )


class KernelModel:
    """The C model. Weight buffers are borrowed: this object keeps every array it was given alive.

    Calls share the model's scratch and KV cache: the compute thread makes them all, and the model's lock keeps a
    background packing, or a close on another thread, out of a call in progress. A closed model raises RuntimeError.
    """

    def __init__(self, library: KernelLibrary, shape: ModelShape):
        # Set first: close() (and __del__) must work on a model whose shape the kernels refused.
        self._handle: int | None = None
        self._kept: list[object] = []
        self._lock = threading.RLock()  # held around every call into the kernels (_call) and by pack_pending
        self.library = library
        self.shape = shape
        self._config = shape.config(library)
        self._handle = library.ll_model_new(ctypes.byref(self._config))
        if not self._handle:
            raise ValueError(f"the kernels refused the model's shape: {library.ll_last_error().decode()}")
        # (layer, role) -> (data, type id, rows, columns) of every matrix: what the roofline and the lab count.
        self.matrices: dict[tuple[int, str], tuple[np.ndarray, int, int, int]] = {}
        self.packed: set[tuple[int, str]] = set()  # the matrices the products read in a packed copy (pack)
        self.pending: list[tuple[int, str]] = []  # set, left in the file's layout for now (defer_pack)
        self.sequences = 0
        self.capacity = 0
        self.completed = 0  # positions the last pass_over took through every layer (all, or up to a stop)
        # Set by the decoder that keeps a chat's prompt cache here: called before other work (the lab's batch,
        # teacher-forced logits) overwrites the KV cache, so the chat's keys are set aside first.
        self.before_other_use: Callable[[], None] | None = None
        for index, window in enumerate(shape.windows):
            library.check(library.ll_set_window(self._handle, index, window), "setting a sliding window")

    @property
    def config(self) -> Config:
        """The C configuration, with defaults resolved (the attention scale)."""
        return self._config

    def _call(self, what: str, entry, *args) -> int:
        """A C entry point on this model, under its lock: a pass, a packing or a close on another thread waits, and a
        closed model raises instead of handing the kernels a null model (which they would read: a crash)."""
        with self._lock:
            if not self._handle:
                raise RuntimeError(f"{what}: the model is closed")
            return entry(self._handle, *args)

    def _checked(self, what: str, entry, *args) -> None:
        self.library.check(self._call(what, entry, *args), what)

    def set_tensor(self, layer: int, role: str, data: np.ndarray, type_id: int, rows: int, columns: int) -> None:
        """data: the tensor's bytes or values, C-contiguous; memory-mapped file bytes are not copied, but for a type
        the kernels widen (library.widened), which they copy into the wide type and read again only to pack."""
        if not data.flags.c_contiguous:
            raise ValueError(f"{role} of layer {layer} is not contiguous")
        self._kept.append(data)
        if rows > 1:
            self.matrices[layer, role] = (data, type_id, rows, columns)
        self._checked(
            f"setting {role} of layer {layer}",
            self.library.ll_set_tensor,
            layer,
            self.library.roles[role],
            data.ctypes.data,
            data.nbytes,
            type_id,
            rows,
            columns,
        )
        if self.library.by_id[type_id].runs_as != type_id and role != EMBEDDING:
            release_file_pages(data)  # copied into the wide type: read again only to pack

    def held_bytes(self, layer: int, role: str) -> int:
        """Bytes of a set matrix as the kernels hold it: its type's, or for a widened type the wide type's until it is
        packed in its own layout (the embedding, read a row at a time, is never widened)."""
        _, type_id, rows, columns = self.matrices[layer, role]
        kind = self.library.by_id[type_id]
        own = (layer, role) in self.packed or role == EMBEDDING
        return rows * (kind if own else self.library.by_id[kind.runs_as]).row_bytes(columns)

    def pack(self, layer: int, role: str, threads: int) -> bool:
        """A set matrix copied into its type's packed layout where this build has one (csrc/quants.h): the products
        then read the copy alone, so a memory-mapped file's pages for it are given back (they stay in the page
        cache), and the process holds the weights once. False: the matrix stays as the file lays it out."""
        with self._lock:
            what = f"packing {role} of layer {layer}"
            packed = self._call(what, self.library.ll_pack, layer, self.library.roles[role], threads)
            self.library.check(-1 if packed < 0 else 0, what)
            if packed:
                self.packed.add((layer, role))
                release_file_pages(self.matrices[layer, role][0])
            return bool(packed)

    def defer_pack(self, layer: int, role: str) -> None:
        """Leave a set matrix in the file's layout until pack_pending, or the first pass of PACKED_PASS_ROWS tokens
        or fewer: the products give the same bits on either layout, so a load can end before its packing does."""
        self.pending.append((layer, role))

    def pack_pending(self, threads: int, limit: int | None = None) -> int:
        """Pack the deferred matrices (at most limit of them, in the order they were set); returns how many are
        left."""
        with self._lock:
            started = time.perf_counter_ns()
            packed = 0
            while self.pending and self._handle and (limit is None or limit != packed):
                self.pack(*self.pending.pop(0), threads)
                packed += 1
            if packed:
                took = time.perf_counter_ns() - started
                for callback in list(PACKING_CALLBACKS):
                    callback(started, took)
            return len(self.pending) if self._handle else 0

    def set_rope(self, layer: int, base: float, freq_scale: float = 1.0) -> None:
        """A layer's rotary base and linear scaling (1 / factor); per-dimension factors are a tensor role."""
        self._checked(f"setting layer {layer}'s rope", self.library.ll_set_rope, layer, base, freq_scale)

    def reserve(self, sequences: int, positions: int, keep: bool = True) -> None:
        """KV cache room. With keep, a large enough cache stays and a growing one keeps what it holds; without,
        the cache is made anew at exactly this size."""
        if keep and sequences == self.sequences and positions <= self.capacity:
            return
        self._checked("reserving the KV cache", self.library.ll_reserve, sequences, positions, int(keep))
        self.sequences, self.capacity = sequences, positions

    @property
    def position_bytes(self) -> int:
        """Bytes of keys and values one position takes in the cache (float16, every layer and KV head)."""
        return 2 * 2 * self.shape.layers * self.shape.kv_heads * self.shape.head_dim

    def copy_cache_out(self, positions: int) -> tuple[np.ndarray, np.ndarray]:
        """Sequence 0's keys and values at positions [0, positions), packed [layer, kv head, position, dim]."""
        shape = (self.shape.layers, self.shape.kv_heads, positions, self.shape.head_dim)
        keys, values = np.empty(shape, dtype=np.float16), np.empty(shape, dtype=np.float16)
        self._checked(
            "copying the KV cache out",
            self.library.ll_kv_copy,
            positions,
            keys.ctypes.data,
            values.ctypes.data,
            keys.size,
            0,
        )
        return keys, values

    def copy_cache_in(self, keys: np.ndarray, values: np.ndarray) -> None:
        """Put what copy_cache_out gave back at positions [0, n) of sequence 0 (the cache must hold n)."""
        keys, values = np.ascontiguousarray(keys, np.float16), np.ascontiguousarray(values, np.float16)
        if keys.shape != values.shape:
            raise ValueError("keys and values of a saved cache differ in shape")
        self._checked(
            "copying a saved KV cache in",
            self.library.ll_kv_copy,
            keys.shape[2],
            keys.ctypes.data,
            values.ctypes.data,
            keys.size,
            1,
        )

    def claim_cache(self) -> None:
        """Other work is about to overwrite the KV cache: let its keeper set aside what it holds."""
        if self.before_other_use is not None:
            self.before_other_use()

    def embed(self, tokens: np.ndarray) -> np.ndarray:
        tokens = np.ascontiguousarray(tokens, dtype=np.int32)
        hidden = np.empty((tokens.size, self.shape.width), dtype=np.float32)
        self._checked(
            "embedding the tokens",
            self.library.ll_embed,
            tokens.ctypes.data,
            tokens.size,
            hidden.ctypes.data,
            hidden.size,
        )
        return hidden

    def layers(
        self, hidden: np.ndarray, sequences: np.ndarray, positions: np.ndarray, first: int, end: int, threads: int
    ) -> None:
        """Run layers [first, end) over hidden's rows in place; a pass of few rows first packs what is pending."""
        sequences = np.ascontiguousarray(sequences, dtype=np.int32).reshape(-1)
        positions = np.ascontiguousarray(positions, dtype=np.int32).reshape(-1)
        if hidden.dtype != np.float32 or not hidden.flags.c_contiguous or hidden.ndim != 2:
            raise ValueError("hidden must be a C-contiguous float32 [rows, width] array (it is updated in place)")
        if not sequences.size == positions.size == hidden.shape[0]:
            raise ValueError(
                f"{hidden.shape[0]} rows need as many sequences and positions "
                f"({sequences.size} and {positions.size} given)"
            )
        if self.pending and (hidden.shape[0] <= PACKED_PASS_ROWS or sequences.min() != sequences.max()):
            self.pack_pending(threads)  # a decode step, a speculative check or a batch of sequences
        self._checked(  # under the lock: a background packing may not swap a matrix's layout under a pass
            "running the decoder layers",
            self.library.ll_layers,
            hidden.ctypes.data,
            hidden.size,
            hidden.shape[0],
            sequences.ctypes.data,
            positions.ctypes.data,
            first,
            end,
            threads,
        )

    def logits(self, hidden: np.ndarray, threads: int, out: np.ndarray | None = None) -> np.ndarray:
        hidden = np.ascontiguousarray(hidden, dtype=np.float32)
        if out is None:
            out = np.empty((hidden.shape[0], self.shape.vocab), dtype=np.float32)
        if out.dtype != np.float32 or not out.flags.c_contiguous:
            raise ValueError("out must be a C-contiguous float32 array")
        self._checked(
            "computing the logits",
            self.library.ll_logits,
            hidden.ctypes.data,
            hidden.size,
            hidden.shape[0],
            out.ctypes.data,
            out.size,
            threads,
        )
        return out

    def pass_over(
        self, tokens: np.ndarray, start: int, threads: int, *, before_layer=None, every_position: bool = False
    ) -> np.ndarray:
        """Run tokens (at positions start, start+1, ...) through every layer in chunks of PROMPT_CHUNK, a layer
        at a time; returns the logits of the last position, or of every position with every_position.

        before_layer(done, total) is called before each layer of each chunk and once at the end, where done
        counts layers over all chunks; it may raise to abandon the pass (the cache then holds part of it).
        Every position's logits are the bits a pass of any other size gives it (the kernels' canonical dots).
        """
        tokens = np.ascontiguousarray(tokens, dtype=np.int32).reshape(-1)
        self.completed = start
        chunks = range(0, tokens.size, PROMPT_CHUNK)
        total = len(chunks) * self.shape.layers
        chunk_logits = []
        for chunk_index, chunk_start in enumerate(chunks):
            chunk = tokens[chunk_start : chunk_start + PROMPT_CHUNK]
            hidden = self.embed(chunk)
            positions = np.arange(start + chunk_start, start + chunk_start + chunk.size)
            sequences = np.zeros(chunk.size)
            for layer in range(self.shape.layers):
                if before_layer is not None:
                    before_layer(chunk_index * self.shape.layers + layer, total)
                self.layers(hidden, sequences, positions, layer, layer + 1, threads)
            self.completed = start + chunk_start + chunk.size
            if every_position:
                chunk_logits.append(self.logits(hidden, threads))
        if before_layer is not None:
            before_layer(total, total)
        return np.concatenate(chunk_logits) if every_position else self.logits(hidden[-1:], threads)

    def close(self) -> None:
        with self._lock:
            if self._handle:
                self.library.ll_model_free(self._handle)
                self._handle = None
                self._kept.clear()
                self.matrices.clear()
                self.packed.clear()

    def __del__(self):
        self.close()


def release_file_pages(data: np.ndarray) -> None:
    """Tells the OS this process no longer needs the whole pages of a memory-mapped array: they leave its resident
    set but stay in the page cache, and a later read brings them back. An array not backed by a file is left
    alone: for anonymous memory the same advice would zero it."""
    mapping = getattr(data, "_mmap", None)
    if not isinstance(mapping, mmap.mmap) or not hasattr(mmap, "MADV_DONTNEED") or data.nbytes == 0:
        return
    start = data.ctypes.data - np.frombuffer(mapping, dtype=np.uint8, count=1).ctypes.data
    page = mmap.PAGESIZE
    first, end = -(-start // page) * page, (start + data.nbytes) // page * page
    if end > first:
        mapping.madvise(mmap.MADV_DONTNEED, first, end - first)
