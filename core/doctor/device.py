"""The device asked for (--device cuda): whether a model could load there at all, before a user waits for a load."""

from __future__ import annotations

from core.doctor.check import FAIL, OK, Check


def device_check(device: str, dtype: str, kind: str | None) -> Check:
    """device: "cuda" (the CPU needs no line); kind: the model source's ("gguf", a folder's), None when unreadable."""
    from core.model.loader import device_problem

    problem = device_problem(device, dtype, kind or "")
    if problem:
        why, instead = problem
        return Check("device", f"a model cannot load on {device}: {why}", {"device": device}, FAIL, instead)
    import torch

    name = torch.cuda.get_device_name(0)
    return Check("device", f"{device}: {name}", {"device": device, "name": name}, OK)
