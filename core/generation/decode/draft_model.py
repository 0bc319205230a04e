"""Drafts from a smaller model with the same vocabulary: it writes k tokens greedily, the target checks them in one pass.

The draft model runs on the same C kernels and the same compute thread as the target. Its keys and values follow
the sequence: each step feeds it what it has not seen (the prompt at first, then the tokens the target kept), and
the drafts it wrote past that are written over next time, as the target's rejected drafts are.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

import numpy as np
import torch

from core.errors import LatencyLabError
from core.generation.decode.drafting import Drafts
from core.generation.decode.greedy import greedy

if TYPE_CHECKING:
    from core.model.loader import LoadedModel

_loaded: dict[str, LoadedModel] = {}  # draft models by file, loaded once a process, as the chat's model is
_lock = threading.Lock()


class DraftModelError(LatencyLabError):
    """The draft model cannot draft for this model: not loadable, not on the kernels, or another vocabulary."""


def draft_model_for(target: LoadedModel, path: str) -> LoadedModel:
    """The draft model at path, loaded once, checked against the target; DraftModelError in one line when it cannot
    draft for it (checked before any work of the reply)."""
    from core.generation.decode.choice import on_kernels
    from core.model.loader import load_model

    with _lock:
        draft = _loaded.get(path)
        if draft is None:
            try:
                draft = load_model(path)  # native precision: the kernels, whose verify and drafts agree bit for bit
            except LatencyLabError as error:
                raise DraftModelError(f"the draft model could not be loaded: {error}") from None
            _loaded[path] = draft
    if not on_kernels(draft.model):
        raise DraftModelError(f"the draft model {draft.name} does not run on the C kernels, so it cannot draft here.")
    if draft.tokenizer.get_vocab() != target.tokenizer.get_vocab():
        raise DraftModelError(
            f"the draft model {draft.name} has another vocabulary than {target.name}: its drafts would be other "
            f"tokens. Choose a smaller model of the same family."
        )
    return draft


BASELINE_STEPS = 2


class ModelDrafts(Drafts):
    """Drafts written greedily by a draft model (its most likely token each time: a draft proposed with certainty,
    as the loop's keep_or_resample rule for sampling asks)."""

    method = "draft model"

    def __init__(self, most: int, verify, keep, draft: LoadedModel):
        from core.generation.decode.choice import lean_decoder

        super().__init__(most, verify, keep)
        self.decoder = lean_decoder(draft.model)
        self.decoder.prompt_cache.set_aside()  # the draft model's cache holds this reply's sequence only
        self._ends = set(draft.eos_token_ids)
        self.seen = 0  # the sequence's first positions the draft model holds keys and values for
        self._fed = 0  # of the last step's drafts, how many went through the draft model

    def propose(self, tokens: np.ndarray, room: int) -> list[int]:
        count = min(self.length, room)
        if count <= 0 or self.steps < BASELINE_STEPS:
            # A draft model drafts at every step, so the reply would have no ordinary step to weigh its verify
            # passes against (SpeculationReport.saved_s): its first steps are ordinary ones.
            return []
        if self.rest > 0:  # after a pass that missed (Drafts.checked); the next drafts feed it what it skipped
            self.rest -= 1
            return []
        if self.seen == 0:
            self.decoder.start_sequence(tokens.size + room + 1)
        logits = self.decoder.forward(torch.from_numpy(tokens[self.seen :].astype(np.int64)), self.seen)
        self.seen = tokens.size
        drafts: list[int] = []
        self._fed = 0  # drafts that went through the draft model (its keys and values are in its cache)
        # No confidence cut (llama.cpp's p_min): measured on Q4_0 drafting for Q8_0 it saved nothing (TPOT 12.2 ms with
        # p_min 0.75 against 11.5 without, benchmarks/speculative.py --draft-model) and hid the pair's disagreements.
        while True:
            best = greedy(logits)
            drafts.append(best)
            if len(drafts) == count or best in self._ends:
                break  # nothing follows the end of the reply
            logits = self.decoder.forward(torch.tensor([best]), self.seen + self._fed)
            self._fed += 1
        return drafts

    def prime(self, tokens: np.ndarray, room: int) -> None:
        """The prompt through the draft model with the target's own prompt pass, before the first token, as
        llama.cpp's server does: its drafts then cost only their own steps, and TPOT is the steady state."""
        if self.seen == 0 and tokens.size:
            self.decoder.start_sequence(tokens.size + room + 1)
            self.decoder.forward(torch.from_numpy(tokens.astype(np.int64)), 0)
            self.seen = tokens.size

    def checked(self, drafted: int, accepted: int, positions: int, took_ns: int = 0, first_token: int = 0) -> None:
        super().checked(drafted, accepted, positions, took_ns, first_token)
        # The kept drafts it fed itself are in its cache as the sequence has them; the rest (a rejected draft's
        # place, the target's own next token) is fed at the next step, over whatever is there.
        self.seen += min(accepted, self._fed)
        self.decoder.keep(self.seen)
