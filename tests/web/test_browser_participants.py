"""Browser participants end to end: the page randomizes, the web port stores, estimates cover.

bench/web_participants.py at a small size: every report the page sends is counted, and every
estimate's interval covers the truth the answers were drawn from. Each of the 11 intervals
is at 99.999% confidence, so a correct system fails this test with probability at most
11 × 10⁻⁵ (the union bound); a perturbation with a wrong law, a lost or doubled report, or a
wrong encoding moves an estimate by many standard errors.
"""

from __future__ import annotations

import sys
from pathlib import Path

from tests._browser import require_browser

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import web_participants

PARTICIPANTS = 1500
CONFIDENCE = 0.99999


def test_browser_participants_are_counted_and_covered() -> None:
    require_browser("browser participants")
    result = web_participants.run(PARTICIPANTS, CONFIDENCE, baseline=False)
    assert result["counted"] == dict.fromkeys(
        ("cheated", "colour", "hours", "tools", "habits"), PARTICIPANTS
    )
    missed = [check for check in result["checks"] if not check["covered"]]
    assert not missed
    assert len(result["checks"]) == 11
