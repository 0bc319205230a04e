"""The typed seams: both engines meet the Engine Protocol, both model kinds the ServedModel Protocol (mypy proves it
statically in make check; this proves it at run time, signatures included), and a reply must define its own work."""

import inspect

import pytest

from core.backend.served_model import ServedModel
from core.engine.in_process import InProcessEngine
from core.engine.process import EngineProcess
from core.engine.protocol import Engine
from core.generation.local_model import LocalModel
from core.generation.local_reply import LocalReply
from core.generation.reply import Reply
from core.remote.connect import RemoteModel
from core.remote.reply import RemoteReply


def members(protocol) -> dict:
    return {
        name: value
        for name, value in vars(protocol).items()
        if not name.startswith("_") and (callable(value) or isinstance(value, property))
    }


@pytest.mark.parametrize(
    "protocol, kinds", [(Engine, (InProcessEngine, EngineProcess)), (ServedModel, (LocalModel, RemoteModel))]
)
def test_each_kind_has_every_member_of_its_protocol_with_the_same_parameters(protocol, kinds):
    for kind in kinds:
        for name, member in members(protocol).items():
            own = inspect.getattr_static(kind, name, None)
            fields = getattr(kind, "__dataclass_fields__", {})
            assert own is not None or name in fields, f"{kind.__name__} lacks {name}"
            if callable(member) and not isinstance(member, property) and own is not None:
                assert list(inspect.signature(own).parameters) == list(inspect.signature(member).parameters), (
                    f"{kind.__name__}.{name}"
                )


def test_the_in_process_engine_says_closed_as_the_protocol_asks():
    engine = InProcessEngine()
    try:
        assert engine.closed is False and engine.alive
    finally:
        engine.close()
    assert engine.closed is True


def test_a_reply_that_does_not_define_its_work_cannot_be_made():
    class Half(Reply):
        def start(self, request_start_ns=None):
            return self

    with pytest.raises(TypeError, match="abstract"):
        Half()
    assert not inspect.isabstract(LocalReply) and not inspect.isabstract(RemoteReply)
