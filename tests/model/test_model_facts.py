"""A loaded model's facts: typed on both sides, plain data across the engine's pipe, and the keys exports wrote."""

import pickle

from core.engine.messages import ModelReady
from core.model.facts import ModelFacts
from core.remote.connect import RemoteModel
from core.remote.spec import RemoteSpec

# What exports, `ask --json` and the Lab's results have written for each kind of model, in this order.
LOCAL_KEYS = ["model", "dtype", "device", "parameters", "weight_bytes", "context_window", "arithmetic"]
REMOTE_KEYS = [
    "model",
    "remote",
    "spec",
    "server_url",
    "server_kind",
    "protocol",
    "served_model",
    "served_models",
    "dtype",
    "device",
    "parameters",
    "weight_bytes",
    "context_window",
    "timeout_s",
    "notice",
]


def test_a_local_models_facts_cross_the_pipe_and_round_trip_through_to_dict(embedded_model):
    facts = embedded_model.describe()
    ready = pickle.loads(pickle.dumps(ModelReady(facts, None)))
    assert ready.facts == facts and ready.name == embedded_model.name
    written = ready.facts.to_dict()
    assert list(written) == LOCAL_KEYS
    assert written["parameters"] == embedded_model.parameter_count and written["arithmetic"]["layers"] > 0
    assert ModelFacts(**written) == facts


def test_a_servers_model_facts_write_every_key_with_none_for_what_it_does_not_say():
    served = RemoteModel(
        RemoteSpec.parse("http://127.0.0.1:9/v1"), "openai", "llama.cpp", "b", ("a", "b"), 30.0, api_key="sk-secret"
    )
    facts = served.describe()
    ready = pickle.loads(pickle.dumps(ModelReady(facts, "the model runs on a server")))
    assert ready.facts == facts and facts.remote and facts.served_models == ("a", "b")
    written = facts.to_dict()
    assert list(written) == REMOTE_KEYS
    assert written["parameters"] is None and written["served_models"] == ["a", "b"]
    assert "sk-secret" not in repr(written)
    assert ModelFacts(**{**written, "served_models": tuple(written["served_models"])}) == facts
