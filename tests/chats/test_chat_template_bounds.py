"""A chat template is code from the model file: it renders within a time and size budget, Stop ends it, and every
way it fails is one line."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading

import pytest
from tiny_gguf import write_tiny_llama

from core.chats import template_render
from core.chats.template_render import (
    ChatTemplateError,
    TemplateInterrupted,
    render_chat_template,
    stop_renders_on,
    template_worker,
)

MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
# A template that asks for gigabytes may be stopped by its memory budget or, on a busy machine that fills memory
# slowly, by its 2 s: either refusal is right, and which comes first is the machine's speed, not the code's.
TIME = "did not finish within 2 s, so it was stopped"
MEMORY = (
    "needed more memory than its budget",
    "renderer ended before it answered (did the template run out of memory?)",
)
MEMORY_OR_TIME = (*MEMORY, TIME)
# template: what the one-line refusal may say. The cases first (a hang, 4.3 GB and a MemoryError traceback,
# a Rust panic from a ~1 GB render, 60-1,433-line tracebacks), then others of their classes.
HOSTILE = {
    "{% for i in range(99999) %}{% for j in range(99999) %}{% endfor %}{% endfor %}": (TIME,),
    "{{ 'x' * 4000000000 }}": MEMORY_OR_TIME,
    "{% for i in range(1000) %}{{ 'x' * 1000000 }}{% endfor %}": ("output passed 1,000,000 characters",),
    "{{ raise_exception('only user and assistant roles are supported') }}": (
        "refused this chat: only user and assistant roles are supported",
    ),
    "{% for m in messages %}{{ m.content }": ("has a syntax error (line 1): unexpected '}'",),
    "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}": ("recursed too deeply",),
    "{{ messages.__class__.__mro__ }}": ("sandbox forbids",),
    "{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s }}": (
        MEMORY_OR_TIME
    ),
    "{{ 'x'.ljust(10 ** 10) }}": MEMORY_OR_TIME,
    "{{ 'x' * 2000000 }}": ("output passed 1,000,000 characters",),
    "{% for i in range(99999999999) %}{% endfor %}": ("the chat template",),
    "{{ (messages | first).nope.deeper }}": ("the chat template",),
    "{{ 1 / 0 }}": ("the chat template failed: ZeroDivisionError",),
    "{% while true %}{% endwhile %}": ("has a syntax error",),
}


@pytest.mark.parametrize("template", list(HOSTILE), ids=[t[:40] for t in HOSTILE])
def test_a_hostile_template_is_refused_in_one_line(template):
    with pytest.raises(ChatTemplateError) as refused:
        template_worker().render(template, MESSAGES, {})
    said = str(refused.value)
    assert any(words in said for words in HOSTILE[template]) and "\n" not in said, said
    assert template_worker().render("{{ messages[1].content }}!", MESSAGES, {}) == "Hi!"  # and the next one works


# A worker that takes a second to start, as a fresh one can on a loaded machine after a killed render.
SLOW_START = (
    sys.executable,
    "-c",
    "import runpy, sys, time; time.sleep(1.0); sys.argv[0] = 'template_worker'; "
    "runpy.run_module('core.chats.template_worker', run_name='__main__')",
)


@pytest.mark.subprocess  # the stand-in worker is a python process of the test's own making
def test_the_time_budget_is_the_templates_own_not_the_workers_start(monkeypatch):
    """Was: a worker started anew spent the budget starting, and a trivial template "did not finish within 2 s"."""
    monkeypatch.setattr(template_render, "TEMPLATE_TIME_S", 0.5)
    monkeypatch.setattr(template_render, "WORKER_COMMAND", SLOW_START)
    worker = template_render.TemplateWorker()
    try:
        assert worker.render("{{ messages | length }}", MESSAGES, {}) == "2"
    finally:
        worker.close()


def test_stop_ends_a_render_at_once_and_the_next_render_works():
    stop = threading.Event()
    stop.set()  # pressed while the render runs: the wait sees it at its first look, long before the 2 s budget
    with stop_renders_on(stop), pytest.raises(TemplateInterrupted):
        template_worker().render(
            "{% for i in range(99999) %}{% for j in range(99999) %}{% endfor %}{% endfor %}", MESSAGES, {}
        )
    assert template_worker().render("{{ messages | length }}", MESSAGES, {}) == "2"


def test_the_worker_renders_what_transformers_renders(embedded_tokenizer):
    """Our environment is transformers' own, rebuilt: the embedded template, and one using its other features."""
    chats = [
        MESSAGES,
        MESSAGES + [{"role": "assistant", "content": "Hello."}, {"role": "user", "content": "More"}],
        [{"role": "user", "content": "<|im_start|>ünïcödé 👋"}],
    ]
    for chat in chats:
        assert render_chat_template(embedded_tokenizer, chat) == embedded_tokenizer.apply_chat_template(
            chat, tokenize=False, add_generation_prompt=True
        )
    features = (
        "{% set ns = namespace(n=0) %}{% for m in messages %}{% generation %}{{ m.role | tojson }}"
        "{% endgeneration %}{% set ns.n = ns.n + 1 %}{% if loop.last %}{% break %}{% endif %}{% endfor %}"
        "{{ ns.n }}{{ dict(a=1) | tojson }}{{ bos_token }}{{ strftime_now('%Y') | length }}"
    )
    ours = template_worker().render(features, MESSAGES, dict(embedded_tokenizer.special_tokens_map))
    original = embedded_tokenizer.chat_template
    try:
        embedded_tokenizer.chat_template = features
        theirs = embedded_tokenizer.apply_chat_template(MESSAGES, tokenize=False, add_generation_prompt=True)
    finally:
        embedded_tokenizer.chat_template = original
    assert ours == theirs


def test_a_render_that_takes_longer_than_the_budget_is_stopped_even_without_a_stop(monkeypatch):
    monkeypatch.setattr(template_render, "TEMPLATE_TIME_S", 0.2)
    with pytest.raises(ChatTemplateError, match="did not finish within 0.2 s"):
        template_worker().render(
            "{% for i in range(99999) %}{% for j in range(99999) %}{% endfor %}{% endfor %}", MESSAGES, {}
        )


@pytest.fixture(scope="module")
def hanging_template_gguf(tmp_path_factory):
    return write_tiny_llama(tmp_path_factory.mktemp("template") / "hang.gguf", chat_template=next(iter(HOSTILE)))


def test_ask_with_a_hanging_template_ends_in_one_line(hanging_template_gguf, run_cli):
    """Was: `ask` hung after "model ready"."""
    result = run_cli("ask", "hi", "--model", str(hanging_template_gguf), "--max-new-tokens", "4")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    said = [line for line in result.stderr.splitlines() if line.startswith("latencylab:")]
    assert said == ["latencylab: error: the chat template did not finish within 2 s, so it was stopped."], result.stderr


def test_stop_in_the_window_ends_a_reply_stuck_in_its_template(qtbot, open_window, hanging_template_gguf):
    """Was: the window's reply hung beyond Stop. Now it ends as a Stop at any other phase does: stopped, with no
    token, the message kept in the chat, and the window ready for the next."""
    from core.model.loader import load_model

    window = open_window(load_model(str(hanging_template_gguf)))
    window.chat_panel.settings_panel.max_new_tokens.setValue(4)
    window.chat_panel.input_box.setPlainText("Hello?")
    with qtbot.waitSignal(window.reply_finished, timeout=60_000) as finished:
        window.send_message()
        window.stop_generation()
    trace = finished.args[0]
    assert trace.stop_reason == "stopped" and trace.output_tokens == 0
    assert [m.content for m in window.session.messages] == ["Hello?"] and window.chat_panel.send_button.isEnabled()


# A worker under a memory limit of the user's own (`ulimit -v`), tighter than the template's budget on top of it.
UNDER_ULIMIT = (
    sys.executable,
    "-c",
    "import os, resource, runpy, sys\n"
    "held = int(open('/proc/self/statm').read().split()[0]) * os.sysconf('SC_PAGE_SIZE')\n"
    "resource.setrlimit(resource.RLIMIT_AS, (held + 300 * 2**20, held + 300 * 2**20))\n"
    "sys.argv[0] = 'template_worker'\n"
    "runpy.run_module('core.chats.template_worker', run_name='__main__')",
)


@pytest.mark.subprocess  # the stand-in worker is a python process of the test's own making
def test_a_worker_under_a_tighter_ulimit_keeps_it_and_renders(monkeypatch):
    """Was: under `ulimit -v` the worker's own limit could not be raised above it, and it died in a ValueError
    traceback; every template then "ended before it answered"."""
    monkeypatch.setattr(template_render, "WORKER_COMMAND", UNDER_ULIMIT)
    worker = template_render.TemplateWorker()
    try:
        assert worker.render("{{ messages | length }}", MESSAGES, {}) == "2"
        with pytest.raises(ChatTemplateError, match="needed more memory than its budget"):
            worker.render("{{ 'x' * 1000000000 }}", MESSAGES, {})  # the user's limit is the budget now
    finally:
        worker.close()


def test_a_worker_whose_asker_has_gone_ends_without_a_traceback():
    """A model that fails to load ends `ask` before the worker says it is ready: the worker's greeting then meets a
    closed socket, and it printed a BrokenPipeError traceback under the CLI's one-line error."""
    ours, theirs = socket.socketpair()
    ours.close()
    result = subprocess.run(
        [
            *template_render.WORKER_COMMAND,
            str(theirs.fileno()),
            str(os.getpid()),
            str(template_render.TEMPLATE_MEMORY_BYTES),
        ],
        pass_fds=(theirs.fileno(),),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    theirs.close()
    assert result.returncode == 0 and result.stderr == ""
