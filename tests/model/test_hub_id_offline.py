"""A hub id that is not in the local Hugging Face cache fails at once, offline, with a did-you-mean."""

from pathlib import Path

import pytest
from no_network import latencylab_offline

from core.errors import ModelLoadError
from core.model.source import resolve_model_source

pytestmark = pytest.mark.subprocess  # each test runs latencylab (or Python) in a child process

ROOT = Path(__file__).resolve().parents[2]
NOT_FOUND = (
    "was not found locally: a hub id must already be in the Hugging Face cache, since Latency Lab does not download"
)


@pytest.fixture
def hub_cache(tmp_path, monkeypatch):
    """A Hugging Face cache holding one downloaded model and one folder whose download never finished."""
    cache = tmp_path / "hf-hub"
    (cache / "models--HuggingFaceTB--SmolLM2-135M-Instruct" / "snapshots" / "0123abcd").mkdir(parents=True)
    (cache / "models--someone--half-downloaded" / "blobs").mkdir(parents=True)
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    return cache


@pytest.mark.parametrize(
    "spec, suggestion",
    [
        ("embeded", "'embedded'"),
        ("Embedded", "'embedded'"),
        ("HuggingFaceTB/SmolLM2-135M-Instrct", "'HuggingFaceTB/SmolLM2-135M-Instruct'"),
        ("huggingfacetb/smollm2-135m-instruct", "'HuggingFaceTB/SmolLM2-135M-Instruct'"),
        ("someone/half-downloaded", None),
        ("gpt2", None),
    ],
)
def test_an_id_not_in_the_cache_is_refused_with_close_names(hub_cache, spec, suggestion):
    with pytest.raises(ModelLoadError) as refused:
        resolve_model_source(spec)
    message = str(refused.value)
    assert NOT_FOUND in message and repr(spec) in message
    if suggestion is None:
        assert "Did you mean" not in message
    else:
        assert f"Did you mean {suggestion}" in message


def test_a_cached_id_resolves_to_the_hub_cache(hub_cache):
    source = resolve_model_source("HuggingFaceTB/SmolLM2-135M-Instruct")
    assert source.kind == "hub" and source.location == "HuggingFaceTB/SmolLM2-135M-Instruct"


def test_a_typo_fails_at_once_with_every_socket_refused(tmp_path):
    """The typo from the issue spent 64 s on 21 DNS look-ups; now no connection is even attempted."""
    result = latencylab_offline(
        ["ask", "hi", "--model", "embeded", "--json"],
        ROOT,
        {"HF_HUB_CACHE": str(tmp_path / "empty-cache")},
        timeout=120,
    )
    assert result.returncode == 1 and result.stdout == ""
    lines = result.stderr.splitlines()
    assert lines[-1].startswith("ATTEMPTS 0 ")
    assert len(lines) == 2 and lines[0].startswith("latencylab: error: 'embeded' " + NOT_FOUND)
    assert lines[0].endswith("Did you mean 'embedded'?")
