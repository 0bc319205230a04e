"""A sweep over models loaded one at a time: each loaded, measured into a row and let go before the next, a load or
run that fails giving a row with its error instead of numbers."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from core.errors import LatencyLabError
from core.lab.collect import collect_between_models
from core.lab.measure import SweepContext
from core.model.loader import LoadedModel


def rows_per_model(
    sweep: str,
    specs: Sequence[str],
    load: Callable[[str], LoadedModel],
    measure: Callable[[LoadedModel, str], dict],
    context: SweepContext,
    *,
    key: str,
    label: Callable[[str], str] = str,
    steps: int,
    release: bool = False,
) -> Iterator[dict]:
    """One row per spec, {key: its label, **measure(loaded, spec)}. steps: the progress bar's steps for one model
    (its load, then measure's own); on a failure the bar jumps to where the model would have ended, so it never
    stalls or overshoots. release: free each model's weights as soon as it is measured (a loader that may hand back
    a model someone else holds leaves it False)."""
    progress = context.progress
    for spec in specs:
        context.check_cancel()
        name = label(spec)
        progress.announce(f"{sweep}: loading {name}")
        skip_to = progress.done + steps - 1
        try:
            loaded = load(spec)
        except LatencyLabError as error:
            progress.done = skip_to
            progress.advance(f"{sweep}: {name} could not load")
            yield {key: name, "error": str(error)}
            continue
        progress.advance(f"{sweep}: {name} loaded")
        try:
            yield {key: name, **measure(loaded, spec)}
        except LatencyLabError as error:
            progress.done = skip_to
            progress.advance(f"{sweep}: {name} failed")
            yield {key: name, "weight_bytes": loaded.weight_bytes, "error": str(error)}
        finally:
            if release:
                loaded.release()
            del loaded
            collect_between_models()
