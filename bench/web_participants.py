"""Browser participants: answers randomized by the page in Chromium, sent over ``serve --web``.

N participants answer a yes/no, a multiple-choice, a numeric, a multi-select and a joint
question whose true answers this script draws from known shares. Each answer is randomized
in headless Chromium by the committed page (``window.deniable.perturbMany``, WebCrypto) and
the reports go to the daemon's web port as the page sends them (Connect JSON, from the
page's own origin); the daemon's estimates must then cover the true shares and mean. The
baseline, in the same run and against the same daemon: the Python client randomizing the
same number of answers and submitting them over gRPC. It prints both rates and their ratio.

    python bench/web_participants.py --participants 10000 [--confidence 0.95] [--json]
"""

from __future__ import annotations

import argparse
import json
import secrets
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from google.protobuf.json_format import MessageToDict

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from deniable.client import AggregatorClient, build_reports, parse_answer
from deniable.shared.questions import question_from_spec
from deniable.shared.wire.v1 import aggregator_pb2 as pb
from tests._browser import chromium, missing_browser
from tests.conftest import ADMIN_TOKEN, Daemon, start_daemon

TOKEN = ADMIN_TOKEN
BATCH = 1000  # reports per SubmitReports call, as the simulation sends them

SPEC: list[dict[str, Any]] = [
    {"id": "cheated", "text": "Did you cheat?", "epsilon": 1.0},
    {"id": "colour", "text": "Favourite colour?", "type": "categorical",
     "options": ["red", "green", "blue"], "epsilon": 1.0},
    {"id": "hours", "text": "Hours studied?", "type": "numeric", "min": 0, "max": 40,
     "epsilon": 1.0},
    {"id": "tools", "text": "Tools used?", "type": "multi_select",
     "items": ["notes", "tutor", "ai"], "epsilon": 2.0},
    {"id": "habits", "text": "About last term", "type": "joint", "epsilon": 2.0,
     "parts": [{"id": "late", "text": "Late?"}, {"id": "copied", "text": "Copied?"}]},
]  # fmt: skip

YES = 0.3
COLOURS = (0.5, 0.3, 0.2)
HOURS = (10.0, 30.0)  # uniform: mean 20
TOOLS = (0.6, 0.3, 0.1)  # each item chosen independently
HABITS = (0.4, 0.1, 0.2, 0.3)  # no-no, no-yes, yes-no, yes-yes


@dataclass(frozen=True)
class Check:
    """One estimated quantity against its truth."""

    quantity: str
    truth: float
    estimate: float
    low: float
    high: float

    @property
    def covered(self) -> bool:
        """Whether the interval holds the truth."""
        return self.low <= self.truth <= self.high


def truths(participants: int, rng: np.random.Generator) -> dict[str, list[str]]:
    """Each question's true answers, as ``deniable answer`` takes them."""
    colours = rng.choice(3, participants, p=COLOURS)
    chosen = rng.random((participants, 3)) < np.array(TOOLS)
    cells = rng.choice(4, participants, p=HABITS)
    words = ("no", "yes")
    return {
        "cheated": [words[int(v)] for v in rng.random(participants) < YES],
        "colour": [("red", "green", "blue")[c] for c in colours],
        "hours": [repr(float(h)) for h in rng.uniform(*HOURS, participants)],
        "tools": [",".join(n for n, c in zip(("notes", "tutor", "ai"), row, strict=True) if c)
                  or "none" for row in chosen],
        "habits": [f"{words[c // 2]},{words[c % 2]}" for c in cells],
    }  # fmt: skip


def expected() -> list[tuple[str, str, float]]:
    """(question, quantity, truth) for every quantity checked."""
    rows = [("cheated", "yes", YES), ("hours", "mean", sum(HOURS) / 2)]
    rows += [
        ("colour", name, share)
        for name, share in zip(("red", "green", "blue"), COLOURS, strict=True)
    ]
    rows += [
        ("tools", name, share) for name, share in zip(("notes", "tutor", "ai"), TOOLS, strict=True)
    ]
    cells = ("late=no, copied=no", "late=no, copied=yes", "late=yes, copied=no")
    rows += [("habits", cell, share) for cell, share in zip(cells, HABITS, strict=False)]
    return rows


@contextmanager
def daemon(folder: Path) -> Iterator[Daemon]:
    """``serve --web`` on 127.0.0.1 (both ports chosen by the OS), a fresh SQLite database.

    The tests' own starter: the per-peer limit off (one machine sends everything).
    """
    running = start_daemon(folder, args=["--web", "127.0.0.1:0"])
    try:
        yield running
    finally:
        running.stop()


# In the page: perturb each question's truths and send them in batches to the web port.
SEND = """
const [survey, questions, truths, batch] = arguments;
const done = arguments[arguments.length - 1];
(async () => {
  const started = performance.now();
  let sent = 0;
  for (const question of questions) {
    const reports = window.deniable.perturbMany(question, truths[question.id]);
    for (const report of reports) report.surveyId = survey;
    for (let at = 0; at < reports.length; at += batch) {
      const body = JSON.stringify({reports: reports.slice(at, at + batch)});
      const answer = await fetch('/deniable.v1.Aggregator/SubmitReports', {
        method: 'POST', headers: {'Content-Type': 'application/json'}, body});
      if (!answer.ok) throw new Error(`${answer.status} ${await answer.text()}`);
      sent += reports.slice(at, at + batch).length;
    }
  }
  return {sent, seconds: (performance.now() - started) / 1000};
})().then(done, (error) => done({error: String(error)}));
"""


def estimates(
    client: AggregatorClient, survey: str, confidence: float
) -> tuple[list[Check], dict[str, int]]:
    """Every checked quantity's estimate and interval, and each question's n."""
    found: dict[tuple[str, str], pb.OptionEstimate | pb.Estimate] = {}
    counted: dict[str, int] = {}
    for question in ("cheated", "colour", "hours", "tools", "habits"):
        estimate = client.get_estimate(survey, question, confidence)
        counted[question] = estimate.n
        found[(question, "yes")] = found[(question, "mean")] = estimate
        for option in (*estimate.options, *estimate.items):
            found[(question, option.option)] = option
    checks = [
        Check(f"{question}: {quantity}", truth, got.estimate, got.ci_low, got.ci_high)
        for question, quantity, truth in expected()
        for got in [found[(question, quantity)]]
    ]
    return checks, counted


def run(
    participants: int, confidence: float, seed: int | None = None, *, baseline: bool = True
) -> dict[str, Any]:
    """Both paths against one daemon (the browser's alone without ``baseline``); its checks."""
    missing = missing_browser()
    if missing is not None:
        raise RuntimeError(missing)
    rng = np.random.default_rng(seed)
    answers = truths(participants, rng)
    questions = [question_from_spec(item, f"question {i}")[0] for i, item in enumerate(SPEC)]
    with (
        tempfile.TemporaryDirectory() as folder,
        daemon(Path(folder)) as running,
        AggregatorClient(running.address, admin_token=TOKEN) as client,
    ):
        web_survey = client.create_survey("browser participants", questions)
        grpc_survey = client.create_survey("Python participants", questions)
        with chromium(Path(folder) / "profile") as browser:
            browser.set_script_timeout(3600)
            browser.get(f"http://{running.web_address}/s/{web_survey.id}")
            shown = [MessageToDict(q) for q in web_survey.questions]
            sent = browser.execute_async_script(SEND, web_survey.id, shown, answers, BATCH)
        if "error" in sent:
            raise RuntimeError(f"the page could not send: {sent['error']}")
        started = time.perf_counter()
        for question in grpc_survey.questions if baseline else []:
            for at in range(0, participants, BATCH):
                batch = [
                    build_reports(
                        pb.Survey(id=grpc_survey.id, questions=[question]),
                        {question.id: parse_answer(text, question)},
                    )[0].report
                    for text in answers[question.id][at : at + BATCH]
                ]
                client.submit_reports(batch)
        python_seconds = time.perf_counter() - started
        checks, counted = estimates(client, web_survey.id, confidence)
    reports = participants * len(SPEC)
    return {
        "participants": participants,
        "reports": reports,
        "confidence": confidence,
        "browser": {"seconds": sent["seconds"], "reports_per_second": reports / sent["seconds"]},
        "python_grpc": (
            {"seconds": python_seconds, "reports_per_second": reports / python_seconds}
            if baseline
            else None
        ),
        "ratio": python_seconds / sent["seconds"] if baseline else None,
        "counted": counted,
        "checks": [
            {
                "quantity": c.quantity,
                "truth": c.truth,
                "estimate": c.estimate,
                "low": c.low,
                "high": c.high,
                "covered": c.covered,
            }
            for c in checks
        ],
        "run_id": secrets.token_hex(4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--participants", type=int, default=10_000)
    parser.add_argument("--confidence", type=float, default=0.95)
    parser.add_argument("--seed", type=int, help="seed of the true answers (not the noise)")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    args = parser.parse_args()
    result = run(args.participants, args.confidence, args.seed)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    browser, python = result["browser"], result["python_grpc"]
    print(f"{result['participants']} participants x {len(SPEC)} questions = "
          f"{result['reports']} reports")  # fmt: skip
    print(f"browser (Chromium, Connect JSON): {browser['reports_per_second']:,.0f} reports/s "
          f"({browser['seconds']:.1f} s)")  # fmt: skip
    print(f"baseline (Python client, gRPC):   {python['reports_per_second']:,.0f} reports/s "
          f"({python['seconds']:.1f} s)")  # fmt: skip
    print(f"ratio browser/baseline: {result['ratio']:.2f}")
    for check in result["checks"]:
        mark = "covered" if check["covered"] else "MISSED"
        interval = f"[{check['low']:.4f}, {check['high']:.4f}]"
        print(f"  {check['quantity']:<32} truth {check['truth']:<6g} estimate "
              f"{check['estimate']:.4f} {interval} {mark}")  # fmt: skip


if __name__ == "__main__":
    main()
