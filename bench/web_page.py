"""The participant page's first paint in headless Chromium, with the daemon on this machine.

Opens ``/s/SURVEY_ID`` of a five-question survey (yes/no, multiple choice, numeric,
multi-select, joint) on ``serve --web`` in a fresh Chromium profile, --runs times, and reads
the page's first contentful paint and the moment its survey form is complete (every
question shown). The baseline, in the same run, on the same port and browser: the first
paint of ``/healthz`` (a few bytes of JSON, no script), so the ratio says what the page
itself costs. Also prints the bundle's size, gzipped.

    python bench/web_page.py [--runs 10] [--json]
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import web_participants

from deniable.client import WEB_FILES, AggregatorClient, web_bundle
from deniable.shared.questions import question_from_spec
from tests._browser import chromium, missing_browser

# Runs before the page's own script: note when the survey's form holds every question.
WATCH = """
window.__shown = null;
new MutationObserver((_, observer) => {
  const form = document.querySelector('#app form');
  if (form && form.querySelectorAll('fieldset.question, .question').length >= 5) {
    window.__shown = performance.now();
    observer.disconnect();
  }
}).observe(document, {childList: true, subtree: true});
"""

READ = """
const done = arguments[arguments.length - 1];
const poll = () => {
  const paint = performance.getEntriesByName('first-contentful-paint')[0];
  if (paint && (window.__shown !== null || !document.querySelector('#app'))) {
    done({paint: paint.startTime, shown: window.__shown});
  } else setTimeout(poll, 20);
};
poll();
"""


def load(profile: Path, url: str) -> dict[str, float | None]:
    """One cold load of ``url`` in a fresh profile: first paint and form complete (ms)."""
    with chromium(profile) as browser:
        browser.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": WATCH})
        browser.set_script_timeout(30)
        browser.get(url)
        timings: dict[str, float | None] = browser.execute_async_script(READ)
        return timings


def bundle_gzipped() -> int:
    """The page's files, each gzipped at level 9, in bytes."""
    return sum(len(gzip.compress((web_bundle() / name).read_bytes(), 9)) for name in WEB_FILES)


def run(runs: int) -> dict[str, Any]:
    """Median and worst first paint of the page and of the baseline, over ``runs`` loads each."""
    missing = missing_browser()
    if missing is not None:
        raise RuntimeError(missing)
    questions = [
        question_from_spec(item, f"question {i}")[0] for i, item in enumerate(web_participants.SPEC)
    ]
    page: list[dict[str, float | None]] = []
    base: list[dict[str, float | None]] = []
    with (
        tempfile.TemporaryDirectory() as folder,
        web_participants.daemon(Path(folder)) as running,
    ):
        with AggregatorClient(running.address, admin_token=web_participants.TOKEN) as client:
            survey = client.create_survey("first paint", questions)
        for run_index in range(runs):
            base.append(
                load(Path(folder) / f"b{run_index}", f"http://{running.web_address}/healthz")
            )
            page.append(
                load(Path(folder) / f"p{run_index}", f"http://{running.web_address}/s/{survey.id}")
            )

    def summary(values: list[float]) -> dict[str, float]:
        return {"median_ms": statistics.median(values), "max_ms": max(values)}

    page_paint = summary([t["paint"] or 0.0 for t in page])
    base_paint = summary([t["paint"] or 0.0 for t in base])
    shown = [t["shown"] for t in page]
    return {
        "runs": runs,
        "page_first_paint": page_paint,
        "page_form_complete": summary([s for s in shown if s is not None]) if all(shown) else None,
        "baseline_first_paint": base_paint,
        "ratio": page_paint["median_ms"] / base_paint["median_ms"],
        "bundle_gzipped_bytes": bundle_gzipped(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    args = parser.parse_args()
    result = run(args.runs)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    paint, base = result["page_first_paint"], result["baseline_first_paint"]
    print(f"page /s/ID first paint: median {paint['median_ms']:.0f} ms, "
          f"worst {paint['max_ms']:.0f} ms ({result['runs']} cold loads)")  # fmt: skip
    if result["page_form_complete"] is not None:
        form = result["page_form_complete"]
        print(f"page form complete:     median {form['median_ms']:.0f} ms, "
              f"worst {form['max_ms']:.0f} ms")  # fmt: skip
    print(f"baseline /healthz paint: median {base['median_ms']:.0f} ms, "
          f"worst {base['max_ms']:.0f} ms")  # fmt: skip
    print(f"ratio page/baseline: {result['ratio']:.2f}")
    print(f"bundle: {result['bundle_gzipped_bytes'] / 1024:.1f} KiB gzipped (limit 150)")


if __name__ == "__main__":
    main()
