"""The chat template's renderer, in a process of its own: a template is code from the model file, so its time and
memory are bounded from outside, and a runaway one is killed without touching the engine.

Started by core/child_process.py's start_child with its memory budget: it says ("ready", None) once started, then
reads (template, messages, variables, max_chars) on its socket and answers ("ok", text) or ("error", one line). The
environment is transformers' own for chat templates (transformers/utils/chat_template_utils.py: the sandbox, trim_blocks, lstrip_blocks, loop controls,
{% generation %}, tojson, raise_exception, strftime_now, dict, namespace), rebuilt from jinja2 alone, which starts in
a tenth of the time (tests/chats/test_chat_template_bounds.py checks it renders what transformers renders).
"""

from __future__ import annotations

import json
import os
import resource
import sys
from datetime import datetime

from core.child_process import as_child
from core.framing import FramedSocket

_CACHE_LIMIT = 16


def environment():
    import jinja2
    import jinja2.ext
    import jinja2.nodes
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    class Generation(jinja2.ext.Extension):
        """{% generation %}...{% endgeneration %}: rendered as its body, as transformers does when not tracking."""

        tags = {"generation"}

        def parse(self, parser):
            lineno = next(parser.stream).lineno
            body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
            return jinja2.nodes.CallBlock(self.call_method("_body"), [], [], body).set_lineno(lineno)

        def _body(self, caller):
            return caller()

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(format):
        return datetime.now().strftime(format)

    class TemplateDict:
        def __call__(self, *args, **kwargs):
            return dict(*args, **kwargs)

        def fromkeys(self, *args, **kwargs):
            return dict.fromkeys(*args, **kwargs)

    class TemplateNamespace(jinja2.utils.Namespace):
        def __init__(*args, **kwargs):
            self, args = args[0], args[1:]
            attrs = dict(*args, **kwargs)
            for name in attrs:
                TemplateNamespace._check_name(name)
            jinja2.utils.Namespace.__init__(self, attrs)

        def __setitem__(self, name, value):
            TemplateNamespace._check_name(name)
            jinja2.utils.Namespace.__setitem__(self, name, value)

        @staticmethod
        def _check_name(name):
            if isinstance(name, str) and name.startswith("_"):
                raise jinja2.exceptions.SecurityError(f"a namespace cannot hold the attribute {name!r}")

    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[Generation, jinja2.ext.loopcontrols]
    )
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    env.globals["dict"] = TemplateDict()
    env.globals["namespace"] = TemplateNamespace
    return env


def render(env, cache: dict, source: str, messages: list, variables: dict, max_chars: int) -> tuple[str, str]:
    """("ok", text) or ("error", why in one line)."""
    import jinja2

    try:
        template = cache.get(source)
        if template is None:
            template = env.from_string(source)
            if len(cache) >= _CACHE_LIMIT:
                cache.pop(next(iter(cache)))
            cache[source] = template
        pieces, size = [], 0
        context = {**variables, "messages": messages, "tools": None, "documents": None, "add_generation_prompt": True}
        for piece in template.generate(**context):
            size += len(piece)
            if size > max_chars:
                return "error", f"the chat template's output passed {max_chars:,} characters"
            pieces.append(piece)
        return "ok", "".join(pieces)
    except jinja2.exceptions.TemplateSyntaxError as error:
        return "error", f"the chat template has a syntax error (line {error.lineno}): {_line(error.message)}"
    except jinja2.exceptions.SecurityError as error:
        return "error", f"the chat template tried something its sandbox forbids: {_line(str(error))}"
    except jinja2.exceptions.TemplateError as error:  # raise_exception(...) among them
        return "error", f"the chat template refused this chat: {_line(error.message or str(error))}"
    except RecursionError:
        return "error", "the chat template recursed too deeply"
    except MemoryError:
        return "error", "the chat template needed more memory than its budget"
    except Exception as error:  # noqa: BLE001 - whatever a template does, the answer is one line
        return "error", f"the chat template failed: {type(error).__name__}: {_line(str(error))}"


def _line(text: str | None) -> str:
    text = " ".join(str(text or "").split())
    return text if len(text) <= 200 else text[:197] + "..."


def _limit_memory(budget_bytes: int) -> None:
    """Address space: what the process holds now plus the budget; past it, allocations fail with MemoryError. Under a
    tighter limit of the user's own (`ulimit -v`), that one stands: it cannot be raised, and trying it ended the
    worker in a ValueError traceback."""
    try:
        with open("/proc/self/statm") as handle:
            held = int(handle.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        held = 256 * 2**20
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = held + budget_bytes if hard == resource.RLIM_INFINITY else min(held + budget_bytes, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def main(connection: FramedSocket, budget_bytes: int) -> None:
    env = environment()
    _limit_memory(budget_bytes)
    cache: dict = {}
    try:
        connection.send(("ready", None))  # started: from here, the time a render takes is the template's
    except OSError:
        return  # the process that started this one has already ended (a model that failed to load, say)
    while True:
        try:
            source, messages, variables, max_chars = connection.recv()
        except (EOFError, OSError):
            return
        try:
            answer = render(env, cache, source, messages, variables, max_chars)
        except MemoryError:
            answer = ("error", "the chat template needed more memory than its budget")
        try:
            connection.send(answer)
        except (OSError, MemoryError):
            return


if __name__ == "__main__":
    ours, (budget,) = as_child(sys.argv[1:])
    main(FramedSocket(ours), int(budget))
