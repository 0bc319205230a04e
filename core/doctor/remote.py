"""A server's URL as the model: from here only whether it answers can be checked; its memory, page cache, kernels
and ceilings are the server machine's."""

from __future__ import annotations

import time

from core.doctor.check import FAIL, INFO, OK, Check
from core.errors import LatencyLabError

REACH_TIMEOUT_S = 5.0
NOT_CHECKED = (
    "the model runs on the server: its memory, page cache, kernels and ceilings are that machine's and are not "
    "checked from here (run `latencylab doctor` there for a local model)"
)


def remote_check(url: str, timeout_s: float = REACH_TIMEOUT_S) -> Check:
    """Reach the server (its models list, the way a load does), within timeout_s a request."""
    from core.remote.connect import connect

    started = time.perf_counter()
    try:
        model = connect(url, timeout_s=timeout_s)
    except LatencyLabError as error:
        seconds = time.perf_counter() - started
        return Check(
            "server",
            f"not reachable after {seconds:.1f} s: {error}",
            {"url": url, "reachable": False, "seconds": round(seconds, 3), "error": str(error)},
            FAIL,  # as a model file that cannot be read: what was named cannot be used
            "start the server, or check the URL (an OpenAI-compatible one usually ends in /v1)",
        )
    seconds = time.perf_counter() - started
    with model:
        value = {
            "url": model.base_url,
            "reachable": True,
            "seconds": round(seconds, 3),
            "server_kind": model.server_kind,
            "served_models": list(model.served_models),
            "model": model.model,
        }
        figure = f"{model.server_kind} at {model.base_url} answered in {seconds * 1000:,.0f} ms, serving {model.model}"
    return Check("server", figure, value, OK)


def not_checked() -> Check:
    return Check("model", NOT_CHECKED, {"remote": True}, INFO)
