"""Running a race: A then B, each alone on the machine (the default), or both at once (live), on one prompt.

Each side starts from a prompt cache holding nothing of the other's: the cache is set aside before it runs, and a
side with the cache on and a shared history is first warmed with that history, as a chat that had reached this
turn would be. A stop (the cancel event) ends the running reply at its next layer or token; what ran is kept.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from core.backend.served_model import ServedModel
from core.chats.session import Message
from core.errors import LatencyLabError
from core.generation.request import ReplyRequest
from core.model.facts import ModelFacts
from core.race.config import RaceConfig
from core.race.sides import RaceSide, labels, side_summary
from core.race.verdict import Verdict, make_verdict, side_facts
from core.timing.events import PrefillProgress, ReplyEventKind
from core.timing.trace import ReplyTrace


@dataclass
class SideRun:
    """One side's run: its trace (None when it never started), the model it ran on, and what went wrong."""

    side: RaceSide
    trace: ReplyTrace | None = None
    model_facts: ModelFacts | None = None
    decode_loop: str | None = None
    error: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def state(self) -> str:
        """In words: 'finished', 'stopped after 12 tokens', 'not run', 'failed: ...'."""
        if self.error and self.trace is None:
            return f"failed: {self.error}"
        if self.trace is None:
            return "not run"
        reason = self.trace.stop_reason
        if reason in ("eos", "max_tokens"):
            return "finished"
        count = self.trace.output_tokens
        tokens = f"{count} token{'' if count == 1 else 's'}"
        if reason == "stopped":
            return f"stopped after {tokens}"
        return f"failed after {tokens}: {self.trace.error or self.error}"


@dataclass
class RaceResult:
    config: RaceConfig
    a: SideRun
    b: SideRun
    stopped: bool = False
    stopped_during: str | None = None  # "A", "B", "loading B", "A and B" ...

    @property
    def sides(self) -> tuple[SideRun, SideRun]:
        return self.a, self.b

    @property
    def labels(self) -> tuple[str, str]:
        return labels(self.config.a, self.config.b)

    def verdict(self) -> Verdict | None:
        """Only when both replies ran to their end: a stopped or failed side has no finish to compare."""
        trace_a, trace_b = self.a.trace, self.b.trace
        if (
            trace_a is None
            or trace_b is None
            or not all(trace.stop_reason in ("eos", "max_tokens") for trace in (trace_a, trace_b))
        ):
            return None
        label_a, label_b = self.labels
        budget = self.config.budget
        return make_verdict(
            side_facts("A", label_a, trace_a, self.a.side.streaming, budget),
            side_facts("B", label_b, trace_b, self.b.side.streaming, budget),
        )

    @property
    def status_line(self) -> str:
        """What happened, in one line: the verdict's absence explained when there is none."""
        if self.verdict() is not None:
            return f"finished ({self.config.mode})"
        states = f"A {self.a.state}; B {self.b.state}"
        if self.stopped:
            return f"stopped during {self.stopped_during or 'the race'}: what ran is kept ({states}); no verdict"
        return f"no verdict: {states}"


@dataclass
class RaceObserver:
    """Callbacks, called on the race's threads: progress in words, and each reply event of each side."""

    progress: Callable[[str], None] = lambda message: None
    event: Callable[[str, ReplyEventKind], None] = lambda side, event: None
    started: Callable[[str, int], None] = lambda sides, request_start_ns: None  # "A", "B" or "AB", and when


Loader = Callable[[RaceSide], ServedModel]
_race_numbers = itertools.count(1)


def run_race(
    config: RaceConfig, load: Loader, *, cancel: threading.Event | None = None, observer: RaceObserver | None = None
) -> RaceResult:
    """Run both sides; never raises for a side that cannot load or be asked (its SideRun says why)."""
    cancel = cancel if cancel is not None else threading.Event()
    observer = observer or RaceObserver()
    result = RaceResult(config, SideRun(config.a), SideRun(config.b))
    race = next(_race_numbers)
    if config.live:
        _run_live(config, load, cancel, observer, result, race)
    else:
        _run_each_alone(config, load, cancel, observer, result, race)
    if cancel.is_set() and not result.stopped:
        result.stopped = True
    return result


def _run_each_alone(config, load, cancel, observer, result, race) -> None:
    for run in result.sides:
        name = run.side.name
        if cancel.is_set():
            result.stopped, result.stopped_during = True, result.stopped_during or f"before {name}"
            return
        prepared = _prepare(config, run, load, cancel, observer, race)
        if prepared is None:
            if cancel.is_set():
                result.stopped, result.stopped_during = True, f"loading {name}"
                return
            continue
        observer.progress(f"{name}: running alone ({side_summary(run.side)})")
        reply = prepared
        reply.start()
        observer.started(name, reply.trace.request_start_ns)
        _consume(name, reply, run, observer)
        if cancel.is_set():
            result.stopped, result.stopped_during = True, name
            return


def _run_live(config, load, cancel, observer, result, race) -> None:
    replies = []
    for run in result.sides:
        prepared = _prepare(config, run, load, cancel, observer, race)
        if prepared is None:
            if cancel.is_set():
                result.stopped, result.stopped_during = True, f"loading {run.side.name}"
            return  # live needs both: a side that cannot start leaves nothing to race
        replies.append((run, prepared))
    observer.progress("A and B: running at the same time (they share the CPU)")
    start_ns = time.perf_counter_ns()  # one Send for both
    for _, reply in replies:
        reply.start(start_ns)
    observer.started("AB", start_ns)
    threads = [
        threading.Thread(
            target=_consume,
            args=(run.side.name, reply, run, observer),
            name=f"latencylab-race-{run.side.name}",
            daemon=True,
        )
        for run, reply in replies
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if cancel.is_set():
        result.stopped, result.stopped_during = True, "A and B"


def _prepare(
    config: RaceConfig, run: SideRun, load: Loader, cancel: threading.Event, observer: RaceObserver, race: int
):
    """Load the side's model and build its reply (not started); None, with run.error set, when it cannot be."""
    side, name = run.side, run.side.name
    observer.progress(f"{name}: loading {side.setting_words()['model']}…")
    try:
        loaded = load(side)
    except LatencyLabError as error:
        run.error = f"could not load: {error}"
        observer.progress(f"{name}: {run.error}")
        return None
    if cancel.is_set():
        return None
    run.model_facts = loaded.describe()
    chat = f"race-{race}-{name}"
    try:
        # The live prompt cache set aside, so this side reuses nothing another reply (the other side, the chat) left
        # there: a new chat would otherwise reuse the start it shares with the cached one, here the whole prompt.
        loaded.set_cache_aside()
        messages = tuple(Message(role, text) for role, text in config.history) + (Message("user", config.prompt),)
        request = ReplyRequest(config.system_prompt, messages, side.settings, stop=cancel, chat_id=chat)
        if side.settings.prompt_cache and config.history:
            observer.progress(f"{name}: warming the prompt cache with the shared history")
            progress = _warming_progress(name, observer)
            run.notes.append(loaded.warm(request, streaming=side.streaming, progress=progress))
        reply, prompt = loaded.prepare(request, streaming=side.streaming)
    except LatencyLabError as error:
        run.error = f"could not be asked: {error}"
        observer.progress(f"{name}: {run.error}")
        return None
    if prompt.notice:
        run.notes.append(prompt.notice)
    run.decode_loop = reply.decode_loop
    if reply.decode_loop_note:
        run.notes.append(f"decoding on the {reply.decode_loop} loop: {reply.decode_loop_note}")
    return reply


def _consume(name: str, reply, run: SideRun, observer: RaceObserver) -> None:
    try:
        for event in reply:
            observer.event(name, event)
    finally:
        reply.join()
        run.trace = reply.trace
        if reply.trace is not None and reply.trace.error:
            run.error = reply.trace.error
        if reply.trace is not None and reply.trace.cached_tokens and reply.trace.cache_source != "local":
            # A server keeps its own prompt cache between requests, which the race cannot empty: say what it reused.
            run.notes.append(
                f"the server reused {reply.trace.cached_tokens:,} of the prompt's "
                f"{reply.trace.prompt_tokens:,} tokens from its own prompt cache (an earlier request)"
            )


def _warming_progress(name: str, observer: RaceObserver) -> Callable[[object], None]:
    """The warm-up's prefill in words, each tenth of it once: a long history took minutes with nothing shown."""
    said: set[int] = set()

    def progress(event: object) -> None:
        if isinstance(event, PrefillProgress):
            tenths = int(event.fraction * 10)
            if tenths not in said:
                said.add(tenths)
                observer.progress(f"{name}: warming the prompt cache with the shared history: {tenths * 10}% prefilled")

    return progress
