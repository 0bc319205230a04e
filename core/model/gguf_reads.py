"""One parse of a GGUF for all of transformers' reads of it while a model is converted."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def shared_gguf_reads() -> Iterator[None]:
    """Within this block, each GGUF file is parsed once and each tensor-name table built once.

    transformers parses the whole file for the config, again for the tokenizer and again for the weights, and gguf's
    reader turns each of a vocabulary's 49,152 strings into numpy views (2.6 s a parse for the embedded model). It
    also builds llama.cpp's tensor-name table once per module of the model (397 times for the embedded one). Both
    are read-only once built, so they are shared: the first launch's conversion took 29 s, most of it these.
    """
    import gguf

    reader_class, name_table = gguf.GGUFReader, gguf.get_tensor_name_map
    readers: dict = {}
    tables: dict = {}

    def shared_reader(path, mode="r"):
        key = (os.path.realpath(path), mode)
        if key not in readers:
            readers[key] = reader_class(path, mode)
        return readers[key]

    def shared_table(arch, n_blocks):
        if (arch, n_blocks) not in tables:
            tables[arch, n_blocks] = name_table(arch, n_blocks)
        return tables[arch, n_blocks]

    # transformers imports both from gguf inside each call, so replacing the module's names reaches it.
    shared = {"GGUFReader": shared_reader, "get_tensor_name_map": shared_table}
    originals = {name: getattr(gguf, name) for name in shared}
    for name, replacement in shared.items():
        setattr(gguf, name, replacement)
    try:
        yield
    finally:
        for name, original in originals.items():
            setattr(gguf, name, original)
