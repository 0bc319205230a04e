"""Loading and generating run on one compute thread, whoever asks, so the process keeps one OpenMP pool."""

import threading

import pytest
from transformers import LogitsProcessor

import core.model.loader
from core.compute_thread import COMPUTE_THREAD_NAME, ComputeThread, compute_thread, on_compute_thread
from core.generation.local_reply import LocalReply
from core.model.loader import load_model
from core.settings import GenerationSettings


class ThreadRecorder(LogitsProcessor):
    def __init__(self):
        self.names = set()

    def __call__(self, input_ids, scores):
        self.names.add(threading.current_thread().name)
        return scores


def test_a_model_loaded_from_any_thread_is_loaded_and_generates_on_the_compute_thread(tiny_model_folder, monkeypatch):
    load_threads = []
    real_load = core.model.loader._load

    def recording_load(*args, **kwargs):
        load_threads.append(threading.current_thread().name)
        return real_load(*args, **kwargs)

    monkeypatch.setattr(core.model.loader, "_load", recording_load)
    loaded = {}
    caller = threading.Thread(target=lambda: loaded.update(model=load_model(str(tiny_model_folder))))
    caller.start()
    caller.join(120)
    load_model(str(tiny_model_folder))  # and from this (the main) thread
    assert load_threads == [COMPUTE_THREAD_NAME, COMPUTE_THREAD_NAME]

    recorder = ThreadRecorder()
    generation = LocalReply(
        loaded["model"], [1, 2, 3], GenerationSettings(max_new_tokens=3), logits_processors=[recorder]
    ).start()
    events = list(generation)
    assert generation.join(30) and events[-1].error is None
    assert recorder.names == {COMPUTE_THREAD_NAME}


def test_a_call_made_on_the_compute_thread_runs_at_once_instead_of_waiting_for_itself():
    def nested():
        return on_compute_thread(lambda: threading.current_thread().name)

    assert on_compute_thread(nested, timeout=10) == COMPUTE_THREAD_NAME


def test_errors_come_back_to_the_caller_and_the_thread_keeps_working():
    def broken():
        raise ValueError("bad input")

    with pytest.raises(ValueError, match="bad input"):
        on_compute_thread(broken, timeout=10)
    assert on_compute_thread(lambda: 7, timeout=10) == 7


def test_a_closed_thread_refuses_work_instead_of_leaving_the_caller_waiting():
    thread = ComputeThread("closing-test")
    assert thread.call(lambda: 1, timeout=10) == 1
    assert thread.close(timeout=10)
    with pytest.raises(RuntimeError, match="closed"):
        thread.call(lambda: 2, timeout=10)


def test_the_shared_thread_is_started_again_when_something_closed_it():
    first = compute_thread()
    first.close(timeout=30)
    second = compute_thread()
    assert second is not first and second.alive
    assert on_compute_thread(lambda: threading.current_thread().name, timeout=10) == COMPUTE_THREAD_NAME


def test_ctrl_c_while_waiting_on_a_call_is_a_keyboard_interrupt_and_the_thread_goes_on():
    """Ctrl+C as a load ended once gave "RuntimeError: release unlocked lock" out of the wait (an Event's Condition)
    and a traceback from `ask`, instead of "stopped (Ctrl+C)"."""
    import signal

    worker = ComputeThread("test-compute-interrupt")
    started, go_on = threading.Event(), threading.Event()

    def busy() -> str:
        started.set()
        go_on.wait(30)
        return "done"

    def interrupt_once_it_runs() -> None:
        started.wait(30)
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)  # to the main thread, where call() waits

    interrupter = threading.Thread(target=interrupt_once_it_runs)
    # Python's own Ctrl+C handler, as `ask` has it (a pytest-xdist worker ignores SIGINT).
    usual = signal.signal(signal.SIGINT, signal.default_int_handler)
    interrupter.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            worker.call(busy)
    finally:
        go_on.set()
        interrupter.join(30)
        signal.signal(signal.SIGINT, usual)
    assert worker.call(lambda: "again", timeout=30) == "again"
    assert worker.close(30)
