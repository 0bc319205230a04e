"""transformers' model index kept on disk: the same structure transformers builds, rebuilt when its files change."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from transformers.utils.import_utils import define_import_structure

from core.model.transformers_index import INDEX_FILE, _kept

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("LATENCYLAB_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache" / INDEX_FILE


def fake_models(folder: Path) -> Path:
    """A package's models folder as transformers lays one out: two families, one needing a backend."""
    models = folder / "models"
    (models / "alpha").mkdir(parents=True)
    (models / "beta").mkdir()
    (models / "__init__.py").write_text("")
    (models / "alpha" / "__init__.py").write_text("")
    (models / "alpha" / "configuration_alpha.py").write_text('__all__ = ["AlphaConfig"]\nclass AlphaConfig: pass\n')
    (models / "beta" / "__init__.py").write_text("")
    (models / "beta" / "tokenization_beta_fast.py").write_text('__all__ = ["BetaTokenizerFast"]\n')
    (folder / "__init__.py").write_text("")
    return models


def fresh(models: Path) -> dict:
    """transformers' structure for the folder, built now (its own function is cached, and its __init__ adds to the
    models folder's)."""
    return define_import_structure.__wrapped__(models, prefix="models")


def counted(calls: list):
    def define(module_path, prefix=None):
        calls.append(module_path)
        return define_import_structure.__wrapped__(module_path, prefix=prefix)

    return define


def test_the_kept_index_is_the_structure_transformers_builds_and_is_read_instead_of_the_files(cache, tmp_path):
    models = fake_models(tmp_path / "package")
    calls: list = []
    first = _kept(counted(calls))(models, prefix="models")
    assert first == fresh(models)
    assert "models.alpha.configuration_alpha" in first[frozenset()]
    assert cache.exists()
    again = _kept(counted(calls))(models, prefix="models")  # the next launch
    assert again == first
    assert len(calls) == 1  # it read the cache, not the folder


def test_a_changed_install_or_a_damaged_index_is_built_again_from_the_files(cache, tmp_path):
    models = fake_models(tmp_path / "package")
    calls: list = []
    _kept(counted(calls))(models, prefix="models")
    (models / "__init__.py").write_text("# installed again\n")
    assert _kept(counted(calls))(models, prefix="models") == fresh(models)
    assert len(calls) == 2
    for damage in (b"{not json", b'{"stamp": 1}', json.dumps({"stamp": [], "structure": [[1, 2]]}).encode()):
        cache.write_bytes(damage)
        assert _kept(counted(calls))(models, prefix="models") == fresh(models)
    stamp = json.loads(cache.read_bytes())["stamp"]
    document = {"stamp": stamp, "structure": [[["torch"], {"models.alpha.x": [3]}]]}  # a name that is not text
    cache.write_bytes(json.dumps(document).encode())
    assert _kept(counted(calls))(models, prefix="models") == fresh(models)
    assert json.loads(cache.read_bytes())["stamp"] == stamp  # written whole again


def test_other_folders_go_to_transformers_uncached(cache, tmp_path):
    models = fake_models(tmp_path / "package")
    calls: list = []
    _kept(counted(calls))(models / "alpha", prefix=None)
    _kept(counted(calls))(models / "alpha", prefix=None)
    assert len(calls) == 2 and not cache.exists()


def test_transformers_imports_through_the_index_in_a_fresh_interpreter(tmp_path):
    """Two launches: the first writes the index, the second imports transformers from it; both reach the classes
    a GGUF's load uses."""
    script = (
        "from core.model.transformers_index import keep_transformers_index\n"
        "keep_transformers_index()\n"
        "import transformers.utils.import_utils as utils\n"
        "assert utils.define_import_structure.__qualname__.startswith('_kept')\n"
        "from transformers import GenerationConfig, LlamaConfig, PretrainedConfig, TokenizersBackend\n"
        "print(LlamaConfig().model_type)\n"
    )
    env = {"LATENCYLAB_CACHE_DIR": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1"}
    for _ in range(2):
        run = subprocess.run(
            [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
        )
        assert run.returncode == 0, run.stderr[-2000:]
        assert run.stdout.strip() == "llama"
    document = json.loads((tmp_path / "cache" / INDEX_FILE).read_bytes())
    import transformers

    real = fresh(Path(transformers.__file__).parent / "models")
    kept = {
        frozenset(backends): {module: set(names) for module, names in modules.items()}
        for backends, modules in document["structure"]
    }
    assert kept == real
