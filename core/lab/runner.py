"""Run the selected sweeps in order, reporting progress and each finished row, stoppable between measurements."""

from __future__ import annotations

import datetime
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from core.backend.choice import load_any
from core.backend.served_model import ServedModel
from core.errors import LatencyLabError
from core.lab.bandwidth import BandwidthMeasurement, ceiling_row, measure_read_bandwidth
from core.lab.batch_sweep import sweep_batch_sizes
from core.lab.cancellation import LabCancelled, MeasurementError, check_cancel
from core.lab.config import LabConfig
from core.lab.history_sweep import sweep_history
from core.lab.machine import describe_machine, load_average
from core.lab.measure import MeasurementProgress, SweepContext
from core.lab.precision_sweep import REFERENCE_DTYPE, measure_precision, measurements_per_dtype, sweep_precisions
from core.lab.prompt_sweep import sweep_prompt_lengths
from core.lab.results import LabResults
from core.lab.verdicts import judge
from core.model.loader import LoadedModel
from core.progress import ProgressCallback, no_progress
from core.remote.connect import RemoteModel
from core.remote.spec import is_remote_spec

RowCallback = Callable[[str, dict], None]
Loader = Callable[..., ServedModel]  # load_any: a server URL connects, anything else loads


def no_rows(sweep: str, row: dict) -> None:
    """A row callback for callers that only want the final results."""


@dataclass
class LabObserver:
    """progress(fraction, message) before and after every measurement; row_measured(sweep, row) per finished row.

    Both are called one at a time, from the thread that runs the lab or (while a model loads) its compute thread.
    """

    progress: ProgressCallback = no_progress
    row_measured: RowCallback = no_rows


class LabRun:
    """One run of run_lab's steps; holds the model for the prompt and batch sweeps so it loads once."""

    def __init__(
        self,
        config: LabConfig,
        loaded: ServedModel | None,
        observer: LabObserver,
        cancel: threading.Event | None,
        loader: Loader,
    ):
        self.config = config
        self.observer = observer
        self.cancel = cancel
        self.loader = loader
        self.main_model = loaded
        self.dtypes = config.resolved_dtypes()
        self.results = LabResults(config=config.to_dict())
        self.progress = MeasurementProgress(self._count_measurements(), observer.progress)
        self.context = SweepContext(self.progress, cancel, decode_loop=config.decode_loop)
        self.bandwidth: BandwidthMeasurement | None = None

    def run(self) -> LabResults:
        started = time.perf_counter()
        cpu_started = time.process_time()
        self.results.started_at = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
        self.results.machine = {**describe_machine(), "load_average_start": load_average()}
        try:
            self._run_sweeps()
        except LabCancelled:
            self.results.cancelled = True
        except LatencyLabError as error:
            self.results.error = str(error)
        self.results.verdicts = judge(self.results)
        self.results.duration_s = time.perf_counter() - started
        self._record_cpu_share(time.process_time() - cpu_started)
        if self.results.cancelled:
            self.observer.progress(self.progress.fraction(), f"cancelled; kept {self.results.row_count()} rows")
        elif self.results.error is None:
            self.observer.progress(1.0, "done")
        return self.results

    def _record_cpu_share(self, cpu_s: float) -> None:
        """How much of its threads' time the run really got: well below 1 means other programs competed."""
        machine = self.results.machine
        threads = machine.get("torch_threads") or 1
        machine["load_average_end"] = load_average()
        machine["cpu_s"] = cpu_s
        # A run that measured nothing (every model failed to load) says nothing about competition for the CPU.
        measured = self.results.row_count() > sum(
            len(self.results.rows(sweep)) for sweep in self.results.failed_sweeps()
        )
        duration = self.results.duration_s
        machine["cpu_share"] = cpu_s / (duration * threads) if duration and measured else None

    def _run_sweeps(self) -> None:
        if is_remote_spec(self.config.model):
            self._run_remote_sweeps()
            return
        sweeps = self.config.sweeps
        config = self.config
        if "bandwidth" in sweeps:
            check_cancel(self.cancel)
            if config.device == "cpu":
                bandwidth = self._measure_ceilings()
            else:
                self.progress.announce("measuring memory read bandwidth")
                bandwidth = self.context.run(lambda: measure_read_bandwidth(cancel=self.cancel, device=config.device))
            self.bandwidth = bandwidth
            self.results.bandwidth_measurement = bandwidth.to_dict()
            self.progress.advance(f"memory read bandwidth: {bandwidth.bytes_per_s / 1e9:.1f} GB/s")
        if "prompt" in sweeps:
            for row in sweep_prompt_lengths(
                self._local_model(), config.prompt_words, config.new_tokens, config.repeats, self.context
            ):
                self._add("prompt", row)
        if "batch" in sweeps:
            for row in sweep_batch_sizes(
                self._local_model(), config.batch_sizes, config.new_tokens, config.repeats, self.context
            ):
                self._add("batch", row)
        if "precision" in sweeps:
            for row in sweep_precisions(self._model_at, self.dtypes, config.new_tokens, config.repeats, self.context):
                self._add("precision", row)
                if self.bandwidth and row.get("weight_bytes") and not row.get("error"):
                    self._add(
                        "bandwidth",
                        ceiling_row(row["dtype"], row["weight_bytes"], row["decode_tok_s"], self.bandwidth.bytes_per_s),
                    )
        elif "bandwidth" in sweeps:
            self._add_main_model_ceiling()
        if "history" in sweeps:
            for row in sweep_history(
                self._local_model(), config.history_turns, config.new_tokens, config.repeats, self.context
            ):
                self._add("history", row)
        if "speculation" in sweeps:
            from core.lab.speculation_sweep import DEFAULT_DRAFT_LENGTHS, sweep_draft_lengths

            for row in sweep_draft_lengths(
                self._local_model(), DEFAULT_DRAFT_LENGTHS, config.new_tokens, config.repeats, self.context
            ):
                self._add("speculation", row)
        if "size" in sweeps:
            from core.lab.size_sweep import sweep_model_sizes

            for row in sweep_model_sizes(
                self._model_of, config.size_models, config.new_tokens, config.repeats, self.context
            ):
                self._add("size", row)

    def _run_remote_sweeps(self) -> None:
        """Against a server: the prompt sweep, and the batch sweep as N simultaneous streams."""
        from core.lab.remote_sweeps import NOT_APPLICABLE, sweep_concurrency, sweep_remote_prompt_lengths

        config = self.config
        self.results.notes = [
            NOT_APPLICABLE[name]
            for name in ("precision", "bandwidth", "history", "speculation", "size")
            if name in config.sweeps
        ]
        for note in self.results.notes:
            self.observer.progress(self.progress.fraction(), note)
        if "prompt" in config.sweeps:
            for row in sweep_remote_prompt_lengths(
                self._remote_model(), config.prompt_words, config.new_tokens, config.repeats, self.context
            ):
                self._add("prompt", row)
        if "batch" in config.sweeps:
            for row in sweep_concurrency(
                self._remote_model(), config.batch_sizes, config.new_tokens, config.repeats, self.context
            ):
                self._add("batch", row)

    def _measure_ceilings(self) -> BandwidthMeasurement:
        """This CPU's ceilings, from the cache of a quiet measurement, or measured now (and cached if quiet); returns
        the DRAM read bandwidth among them."""
        from core.roofline.ceilings import cached_ceilings, measure_ceilings

        self.progress.announce("this machine's ceilings: GEMM FLOP/s, DRAM and last-level cache bandwidth")
        say = lambda message: self.observer.progress(self.progress.fraction(), message)  # noqa: E731
        ceilings = self.context.run(lambda: cached_ceilings() or measure_ceilings(cancel=self.cancel, progress=say))
        check_cancel(self.cancel)
        from core.cache_file import take_notices

        for notice in take_notices():  # a damaged ceilings file, set aside: measured again just now
            self.results.notes.append(notice)
            say(notice)
        self.results.ceilings = ceilings.to_dict()
        self._announce_ceilings()
        for note in ceilings.notes:
            say(note)
        dram = ceilings.get("dram")
        if dram is None:  # measure_ceilings always measures it; a cached file could lack it
            raise MeasurementError("this machine's ceilings hold no DRAM read bandwidth")
        return BandwidthMeasurement(
            bytes_per_s=dram.value,
            median_bytes_per_s=dram.median,
            buffer_bytes=int(dram.amount),
            passes=dram.passes,
            last_level_cache_bytes=ceilings.last_level_cache_bytes,
            threads=ceilings.threads,
            method=dram.method,
        )

    def _announce_ceilings(self) -> None:
        """The ceilings, and the model's shape once loaded, to the observer: the roofline's roof before its points."""
        if self.results.ceilings:
            self.observer.row_measured(
                "ceilings",
                {"ceilings": self.results.ceilings, "arithmetic": getattr(self.main_model, "arithmetic", None)},
            )

    def _add(self, sweep: str, row: dict) -> None:
        from core.lab.roofline_rows import batch_row_fields, precision_row_fields, prompt_row_fields

        arithmetic = getattr(self.main_model, "arithmetic", None)
        if sweep == "prompt":
            row = {**row, **prompt_row_fields(row, arithmetic)}
        elif sweep == "batch":
            row = {**row, **batch_row_fields(row, arithmetic)}
        elif sweep == "precision":
            row = {**row, **precision_row_fields(row)}
        self.results.rows(sweep).append(row)
        self.observer.row_measured(sweep, row)

    def _main_model(self) -> ServedModel:
        if self.main_model is None:
            check_cancel(self.cancel)
            model = self.config.model or "the embedded model"
            self.progress.announce(
                f"connecting to {model}" if is_remote_spec(model) else f"loading {model} ({self.config.dtype})"
            )
            self.main_model = self._load(self.config.dtype)
            self.progress.advance("model loaded")
            self._announce_ceilings()
        self.results.model = self.main_model.describe().to_dict()
        return self.main_model

    def _local_model(self) -> LoadedModel:
        model = self._main_model()
        assert isinstance(model, LoadedModel)  # a server URL runs _run_remote_sweeps instead
        return model

    def _remote_model(self) -> RemoteModel:
        model = self._main_model()
        assert isinstance(model, RemoteModel)  # _run_remote_sweeps runs for a server URL only
        return model

    def _model_at(self, dtype: str) -> LoadedModel:
        """The precision sweep's loader: the main model when it already has this dtype, otherwise a fresh load."""
        if isinstance(self.main_model, LoadedModel) and self.main_model.dtype == dtype:
            return self.main_model
        loaded = self._load(dtype)
        assert isinstance(loaded, LoadedModel)  # the precision sweep runs on local models only
        return loaded

    def _model_of(self, spec: str) -> LoadedModel:
        """The size sweep's loader: each model at the run's precision; the main model is set aside meanwhile."""
        loaded = self.context.run(
            lambda: self.loader(spec, device=self.config.device, dtype=self.config.dtype, progress=self._load_progress)
        )
        if not isinstance(loaded, LoadedModel):
            raise MeasurementError(f"{spec} is a server: the size sweep measures models on this machine.")
        return loaded

    def _load(self, dtype: str) -> ServedModel:
        # On the compute thread, so that any torch work the loader does uses the same OpenMP pool.
        return self.context.run(
            lambda: self.loader(self.config.model, device=self.config.device, dtype=dtype, progress=self._load_progress)
        )

    def _load_progress(self, fraction: float, message: str) -> None:
        self.observer.progress(self.progress.fraction(), message)

    def _add_main_model_ceiling(self) -> None:
        """Without the precision sweep, the ceiling is shown for the main model alone."""
        loaded, bandwidth = self._local_model(), self.bandwidth
        assert bandwidth is not None  # measured first: "bandwidth" is among the sweeps
        decode = next((r["decode_tok_s"] for r in sorted(self.results.prompt, key=lambda r: r["prompt_tokens"])), None)
        if decode is None:
            row, _ = measure_precision(loaded, self.config.new_tokens, self.config.repeats, self.context)
            decode = row["decode_tok_s"]
        self._add("bandwidth", ceiling_row(loaded.dtype, loaded.weight_bytes, decode, bandwidth.bytes_per_s))

    def _count_measurements(self) -> int:
        config, sweeps = self.config, self.config.sweeps
        total = 0
        if is_remote_spec(config.model):
            return (
                (self.main_model is None)
                + ("prompt" in sweeps) * (1 + len(config.prompt_words) * config.repeats)
                + ("batch" in sweeps) * (1 + len(config.batch_sizes) * config.repeats)
            )
        needs_main = (
            "prompt" in sweeps
            or "batch" in sweeps
            or "history" in sweeps
            or "speculation" in sweeps
            or ("bandwidth" in sweeps and "precision" not in sweeps)
        )
        if needs_main and self.main_model is None:
            total += 1
        if "bandwidth" in sweeps:
            total += 1
            if "precision" not in sweeps and "prompt" not in sweeps:
                total += measurements_per_dtype(config.repeats) - 1
        if "prompt" in sweeps:
            total += 1 + len(config.prompt_words) * config.repeats
        if "batch" in sweeps:
            total += 1 + len(config.batch_sizes) * config.repeats
        if "history" in sweeps:
            total += 1 + 2 * config.history_turns * config.repeats
        if "speculation" in sweeps:
            from core.lab.speculation_sweep import DEFAULT_DRAFT_LENGTHS, PROMPTS

            total += len(PROMPTS) * len(DEFAULT_DRAFT_LENGTHS)
        if "size" in sweeps:
            total += len(config.size_models) * (2 + config.repeats)
        if "precision" in sweeps:
            total += len(self.dtypes) * measurements_per_dtype(config.repeats)
            if REFERENCE_DTYPE not in self.dtypes:
                total += 2
        return total


def run_lab(
    config: LabConfig,
    *,
    loaded: ServedModel | None = None,
    observer: LabObserver | None = None,
    cancel: threading.Event | None = None,
    loader: Loader = load_any,
) -> LabResults:
    """Run config's sweeps. Cancelling keeps every finished row; a failure keeps them too and sets results.error.

    loaded, when given, is used for the prompt and batch sweeps (and for its own dtype in the precision
    sweep) instead of loading config.model.
    """
    return LabRun(config, loaded, observer or LabObserver(), cancel, loader).run()
