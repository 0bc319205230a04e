"""One verdict as the lab reports it: the claim, whether it holds, the evidence and the criterion, in one sentence."""

from __future__ import annotations


def verdict_sentence(verdict: dict) -> str:
    word = {True: "Holds.", False: "Does not hold.", None: "Not tested."}[verdict["holds"]]
    if verdict["holds"] is False and verdict.get("criterion"):  # what it fell short of, beside the figures
        word = f"Does not hold: the claim asks that {verdict['criterion']}."
    return f"{verdict['claim']}: {verdict['evidence']}. {word}"


def verdict(key: str, claim: str, holds: bool | None, evidence: str, criterion: str) -> dict:
    record = {"key": key, "claim": claim, "holds": holds, "evidence": evidence, "criterion": criterion}
    record["sentence"] = verdict_sentence(record)
    return record


def pct(fraction: float) -> str:
    return f"{fraction * 100:.0f}%"
