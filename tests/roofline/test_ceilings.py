"""The ceilings' method on a fake timer and fake work: best of the passes, flagged and not cached under load."""

from __future__ import annotations

import itertools

import pytest

from core.roofline import ceilings as module
from core.roofline.ceilings import Probe, best_rate, cached_ceilings, default_probes, measure_ceilings
from core.roofline.machine_load import LoadProbe


class FakeClock:
    """Each pass of the fake work takes the next of `durations` seconds on this clock."""

    def __init__(self, durations):
        self.now = 0.0
        self.durations = iter(durations)

    def __call__(self) -> float:
        return self.now

    def work(self) -> None:
        self.now += next(self.durations)


def test_the_best_pass_is_the_ceiling_and_the_median_shows_the_spread():
    clock = FakeClock([9.0, 2.0, 1.0, 4.0, 2.0, 1.0])  # the first, unrecorded, pass warms up
    best, median, passes = best_rate(clock.work, 8.0, clock, min_passes=5, budget_s=0.0)
    assert (best, median, passes) == (8.0, 4.0, 5)


def test_passes_continue_until_the_budget_is_spent():
    clock = FakeClock(itertools.repeat(0.25))
    _, _, passes = best_rate(clock.work, 1.0, clock, min_passes=2, budget_s=1.0)
    assert passes == 4


def _quiet(cores=2):
    """A load probe that sees only this process busy: the machine's busy time grows with ours."""
    own = iter([10.0, 12.0])
    machine = iter([100.0, 102.0])
    clock = iter([0.0, 2.0])
    return LoadProbe(
        machine_busy=lambda: next(machine), own_busy=lambda: next(own), clock=lambda: next(clock), cores=cores
    )


def _busy(cores=2):
    """Others took a whole core of two for the 2 s the measurement lasted: half the machine."""
    own = iter([10.0, 12.0])
    machine = iter([100.0, 104.0])
    clock = iter([0.0, 2.0])
    return LoadProbe(
        machine_busy=lambda: next(machine), own_busy=lambda: next(own), clock=lambda: next(clock), cores=cores
    )


def _fake_probes(clock):
    return [
        lambda: Probe("gemm_float32", "float32 GEMM", "flop/s", 2e9, clock.work, "fake GEMM over the best pass"),
        lambda: Probe("dram", "DRAM", "byte/s", 1e9, clock.work, "fake read over the best pass"),
    ]


def test_ceilings_measured_quiet_are_cached_per_cpu(monkeypatch, tmp_path):
    monkeypatch.setenv("LATENCYLAB_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(module, "MIN_PASSES", 2)
    monkeypatch.setattr(module, "BUDGET_S", 0.0)
    clock = FakeClock([1.0, 0.5, 0.25] + [1.0, 0.1, 0.2])
    assert cached_ceilings(2) is None
    result = measure_ceilings(2, probes=_fake_probes(clock), timer=clock, probe_load=_quiet())
    assert result.others_share == 0.0 and not result.loaded
    gemm, dram = result.get("gemm_float32"), result.get("dram")
    assert gemm.value == 2e9 / 0.25 and gemm.median == (2e9 / 0.5 + 2e9 / 0.25) / 2 and gemm.passes == 2
    assert dram.value == pytest.approx(1e10) and "the best of 2 passes" in dram.method
    again = cached_ceilings(2)
    assert again is not None and again.from_cache and again.get("dram").value == dram.value


def test_ceilings_measured_under_load_are_flagged_and_not_cached(monkeypatch, tmp_path):
    monkeypatch.setenv("LATENCYLAB_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(module, "MIN_PASSES", 1)
    monkeypatch.setattr(module, "BUDGET_S", 0.0)
    clock = FakeClock(itertools.repeat(1.0))
    result = measure_ceilings(2, probes=_fake_probes(clock), timer=clock, probe_load=_busy())
    assert result.others_share == pytest.approx(0.5) and result.loaded
    assert "flagged, and not cached" in result.notes[0] and "(measured under load: not cached)" in result.summary()
    assert cached_ceilings(2) is None


def test_the_dram_buffer_is_at_least_four_times_the_last_level_cache(monkeypatch):
    made = []
    monkeypatch.setattr(module, "read_probe", lambda name, label, size, why: made.append((name, size, why)))
    monkeypatch.setattr(module, "gemm_probe", lambda precision: None)
    for probe in default_probes(300 * module.MIB):
        probe()
    assert made == [
        ("dram", 1200 * module.MIB, "4x the 300 MiB last-level cache"),
        ("llc", 75 * module.MIB, "a quarter of the 300 MiB last-level cache"),
    ]
    made.clear()
    for probe in default_probes(None):
        probe()
    assert made == [("dram", module.MIN_DRAM_BUFFER, "the last-level cache's size is unknown here")]


def test_the_int8_ceiling_counts_the_products_the_kernels_prompt_gemm_makes():
    """The int8 loop does rounds x (products per round) products: twice that many operations, and a real rate."""
    from core.kernels.build import fast_here
    from core.roofline.ceilings import best_rate, int8_probe

    probe = int8_probe()
    if not fast_here():
        assert probe is None
        return
    assert probe is not None and probe.name == "gemm_int8" and probe.unit == "flop/s"
    from core.kernels.library import kernels

    per_round = kernels().ll_int8_peak(0, 1)
    assert per_round in (16 * 64, 8 * 4 * 32)  # sixteen vpdpbusd of 64 products, or eight times four maddubs of 32
    best, _, passes = best_rate(probe.run, probe.amount, min_passes=2, budget_s=0.0)
    assert passes == 2 and best > 1e9


def test_the_amx_ceiling_is_measured_where_the_prompts_gemm_runs_on_tiles():
    """Where the kernels' GEMM runs on AMX's tiles, the roofline gains their ceiling, far above vpdpbusd's, and a
    reply on the kernels is placed against it; elsewhere there is none."""
    from core.kernels.build import can_build, fast_here
    from core.roofline.ceilings import amx_probe, best_rate, int8_probe

    probe = amx_probe()
    on = fast_here() and can_build() and _kernels_amx_on()
    if not on:
        assert probe is None
        return
    assert probe is not None and probe.name == "gemm_amx_int8" and probe.unit == "flop/s"
    tiles, _, _ = best_rate(probe.run, probe.amount, min_passes=2, budget_s=0.0)
    vnni_probe = int8_probe()
    assert vnni_probe is not None
    vnni, _, _ = best_rate(vnni_probe.run, vnni_probe.amount, min_passes=2, budget_s=0.0)
    assert tiles > 2 * vnni


def _kernels_amx_on() -> bool:
    from core.kernels.library import kernels

    return bool(kernels().ll_use_amx(-1))
