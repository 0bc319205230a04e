"""The finding of speculation that did not pay: drafts rarely accepted, and verify passes that cost more than the
steps they saved, weighed by the reply's own ordinary steps."""

from __future__ import annotations

from core.diagnosis.words import duration, share
from core.timing.finding import Finding
from core.timing.trace import ReplyTrace


def speculation_finding(trace: ReplyTrace) -> list[Finding]:
    report = trace.speculation
    if report is None or not report.drafted or report.acceptance is None:
        return []
    saved = report.saved_s
    if saved is None or saved >= 0:
        return []
    return [
        Finding(
            kind="speculation",
            summary=(
                f"Drafts were accepted {share(report.acceptance)} of the time; speculation cost more than it saved "
                f"({duration(-saved)} over this reply)."
            ),
            cause="the drafts were rarely right, and each verify pass costs more than an ordinary step",
            evidence=(
                f"{report.accepted:,} of {report.drafted:,} drafts accepted; {report.passes:,} verify passes took "
                f"{duration(report.verify_s or 0.0)}, where {report.accepted + (report.passes or 0):,} ordinary steps "
                f"at this reply's {duration((report.step_s or 0.0) / (report.steps or 1))} would have taken "
                f"{duration((report.verify_s or 0.0) + saved)}"
            ),
            figure=report.acceptance,
            advice="turn speculation off for replies like this one, or draft fewer tokens a step",
            cost_s=-saved,
        )
    ]
