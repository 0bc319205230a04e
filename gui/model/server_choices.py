"""What the window offers and warns about for a server: its other models as picker entries, plain-http warnings."""

from __future__ import annotations

from core.errors import LatencyLabError
from core.model.facts import ModelFacts
from core.remote.spec import RemoteSpec, is_remote_spec


def served_model_specs(facts: ModelFacts) -> list[str]:
    """A picker entry per model the server serves, so switching is a pick and Load."""
    if facts.spec is None:  # a local model: nothing to pick among
        return []
    spec = RemoteSpec.parse(facts.spec)
    return [spec.with_choice(model=name).text() for name in facts.served_models]


def plain_http_warning(spec_text: str) -> tuple[str | None, str]:
    """(the warning, or None; the host it is about)."""
    if not is_remote_spec(spec_text):
        return None, ""
    try:
        spec = RemoteSpec.parse(spec_text)
    except LatencyLabError:
        return None, ""  # the load reports the bad URL itself
    return spec.plain_http_warning(), spec.host
