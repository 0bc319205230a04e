"""transformers' index of its model files, kept on disk: its import otherwise reads all 1,667 of them at each launch."""

from __future__ import annotations

import functools
import importlib.abc
import importlib.machinery
import json
import os
import sys
from pathlib import Path

from core.atomic_file import atomic_write_bytes, ensure_private_dir
from core.cache_paths import cache_root

MODULE = "transformers.utils.import_utils"
INDEX_FILE = "transformers-index.json"
FORMAT = 1


def keep_transformers_index() -> None:
    """From now on, transformers' import takes its model index from the cache when the installed files are the ones
    it was made from (0.30-0.42 s against 0.68-1.02 s for `import transformers` after torch, alternated, on the
    development machine). Does nothing once transformers is imported."""
    if MODULE in sys.modules or any(isinstance(finder, _IndexFinder) for finder in sys.meta_path):
        return
    sys.meta_path.insert(0, _IndexFinder())


class _IndexFinder(importlib.abc.MetaPathFinder):
    """Finds transformers' import_utils as the path finder does, and wraps its define_import_structure as it loads."""

    def find_spec(self, fullname, path, target=None):
        if fullname != MODULE:
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        loader = spec.loader if spec is not None else None
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        execute = loader.exec_module

        def exec_module(module):
            execute(module)
            module.define_import_structure = _kept(module.define_import_structure)

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def _kept(define):
    """define_import_structure, answered from the cache for transformers' own models folder (the one its __init__
    reads); every other call, and any cache that cannot be read, goes to transformers. Cached in memory as
    transformers' own is (lru_cache): its __init__ adds to the structure it gets, and a later call gets that one."""

    @functools.lru_cache
    def define_import_structure(module_path, prefix=None):
        folder = Path(module_path)
        if prefix != "models" or folder.name != "models":
            return define(module_path, prefix=prefix)
        stamp = _stamp(folder)
        cache = cache_root() / INDEX_FILE
        kept = _read(cache, stamp)
        if kept is not None:
            return kept
        structure = define(module_path, prefix=prefix)
        _write(cache, stamp, structure)
        return structure

    return define_import_structure


def _stamp(models: Path) -> list:
    """What changes when transformers is installed again: the folder, and the package's and the models' __init__."""
    facts: list = [FORMAT, str(models)]
    for path in (models, models / "__init__.py", models.parent / "__init__.py"):
        try:
            status = os.stat(path)
        except OSError:
            return facts + [None]
        facts += [status.st_mtime_ns, status.st_size]
    return facts


def _read(cache: Path, stamp: list):
    """The cached structure ({backends: {module: names}}) when its stamp is this install's, else None."""
    try:
        document = json.loads(cache.read_bytes())
        if document["stamp"] != stamp or None in stamp:
            return None
        return {
            frozenset(_strings(backends)): {str(module): set(_strings(names)) for module, names in modules.items()}
            for backends, modules in document["structure"]
        }
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None  # no cache yet, or one that is damaged: transformers reads its files again


def _strings(values) -> list[str]:
    if not isinstance(values, list) or not all(isinstance(value, str) for value in values):
        raise TypeError("not a list of names")
    return values


def _write(cache: Path, stamp: list, structure) -> None:
    if None in stamp:
        return
    try:
        document = {
            "stamp": stamp,
            "structure": [
                [sorted(backends), {module: sorted(names) for module, names in modules.items()}]
                for backends, modules in structure.items()
            ],
        }
        ensure_private_dir(cache.parent)
        atomic_write_bytes(cache, json.dumps(document).encode())
    except (OSError, TypeError, ValueError):
        pass  # a read-only cache: each launch reads transformers' files, as without it
