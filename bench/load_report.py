"""The load test's output: a table for one run, a line per run, the summary and the comparison."""

from __future__ import annotations

from typing import Any

import numpy as np

P99_TARGET_MS = 150.0
THROUGHPUT_TARGET = 1.0  # current / baseline reports per second


def percentiles(latencies: list[float] | np.ndarray[Any, Any]) -> dict[str, float]:
    """p50, p90, p99 and max of call latencies in seconds, in milliseconds (rounded)."""
    if len(latencies) == 0:
        return {"p50": 0.0, "p90": 0.0, "p99": 0.0, "max": 0.0}
    ms = np.asarray(latencies) * 1000.0
    p50, p90, p99 = np.percentile(ms, [50, 90, 99]).tolist()
    return {
        "p50": round(p50, 2),
        "p90": round(p90, 2),
        "p99": round(p99, 2),
        "max": round(float(ms.max()), 2),
    }


def _check_text(check: dict[str, Any]) -> str:
    if not check["ran"]:
        return f"skipped: {check['note']}"
    if check["ok"]:
        reports = f" ({check['reports']:,} reports in the log)" if "reports" in check else ""
        return f"passed{reports}"
    repeated = check.get("duplicate_reports")
    why = f", {repeated} repeated report ids" if repeated else ""
    examples = f" (e.g. {', '.join(check['duplicate_ids'])})" if check.get("duplicate_ids") else ""
    return f"FAILED (exit {check['exit_code']}{why}){examples}"


def _resend_text(resend: dict[str, Any]) -> str:
    text = (
        f"{resend['batches']:,} of {resend['planned']:,} batches ({resend['reports']:,} reports) "
        f"in {resend['seconds']:.1f} s (p50 {resend['latency_ms']['p50']:.0f} ms, p99 "
        f"{resend['latency_ms']['p99']:.0f} ms): stored {resend['stored']:,}, already_stored "
        f"{resend['already_stored']:,}"
    )
    if resend["batches_stored_again"]:
        text += f"; {resend['batches_stored_again']} batches stored again"
    if resend["changed"]:
        text += f"; {resend['changed']} rebuilt batches differed (not sent)"
    if resend["errors"]:
        text += "; errors " + ", ".join(f"{k} {v}" for k, v in resend["errors"].items())
    return text


def _mark(verdict: bool | None) -> str:
    return "OK" if verdict else "skipped" if verdict is None else "FAILED"


def table(result: dict[str, Any]) -> str:
    """One run, in detail."""
    work, latency, verdicts = result["workload"], result["latency_ms"], result["verdicts"]
    submit, estimate = latency["submit"], latency["estimate"]
    sizes = f"batch {work['batch']}" if work["sizes"] == "fixed" else f"mixed 1..{work['batch']}"
    rss = result["daemon_rss_mb"]
    log = result["daemon_log"]
    rows = [
        ("target", f"{result['target']} ({result['label']}: {result['aggregator']})"),
        (
            "workload",
            f"{work['clients']} processes x {work['threads']} threads, {sizes}, "
            f"{work['estimates']:.0%} GetEstimate, {work['ids']} ids",
        ),
        ("duration", f"{result['seconds']:.1f} s"),
        (
            "throughput",
            f"{result['reports_per_s']:,.0f} reports/s, {result['calls_per_s']:,.1f} calls/s "
            f"(mean batch {result['mean_batch']:,.1f})",
        ),
        (
            "SubmitReports",
            f"{result['submit_calls']:,} calls: p50 {submit['p50']:.1f} ms, p90 "
            f"{submit['p90']:.1f} ms, p99 {submit['p99']:.1f} ms, max {submit['max']:.1f} ms",
        ),
        (
            "GetEstimate",
            f"{result['estimate_calls']:,} calls: p50 {estimate['p50']:.1f} ms, p99 "
            f"{estimate['p99']:.1f} ms, max {estimate['max']:.1f} ms"
            + (
                f" ({result['estimates_empty']} before the first report: 'no reports yet')"
                if result["estimates_empty"]
                else ""
            ),
        ),
        (
            "daemon memory (RSS)",
            "not sampled (--server)"
            if rss is None
            else "{start:.1f} MB before the clients, {peak:.1f} MB peak, {end:.1f} MB at the "
            "end".format(**rss),
        ),
        ("reports acked/stored", f"{result['reports_acked']:,} / {result['stored']:,}"),
        ("errors", ", ".join(f"{k} {v}" for k, v in result["errors"].items()) or "0"),
        ("resend", f"{_resend_text(result['resend'])} -> {_mark(verdicts['resend'])}"),
        (
            "estimate n",
            f"{result['estimate_n']:,} vs {result['stored']:,} acknowledged as stored -> "
            f"{_mark(verdicts['estimate'])}",
        ),
        ("check", f"{_check_text(result['check'])} -> {_mark(verdicts['check'])}"),
        (
            "daemon",
            "not ours (--server)"
            if result["daemon_exit_code"] is None
            else f"exit {result['daemon_exit_code']}; log: {log['warning']} warnings, "
            f"{log['error']} errors" + "".join(f"; {line}" for line in log["first"]),
        ),
        ("verdict", "OK" if result["ok"] else "FAILED"),
    ]
    width = max(len(name) for name, _ in rows)
    return "\n".join(f"{name:<{width}}  {value}" for name, value in rows)


def problems(result: dict[str, Any]) -> list[str]:
    """What went wrong in a run, briefly (empty when it is clean)."""
    found = []
    if result["error_count"]:
        found.append(f"{result['error_count']} errors")
    if result["verdicts"]["load"] is False and result["stored"] != result["reports_acked"]:
        found.append(f"stored {result['stored']:,} of {result['reports_acked']:,} acked")
    if result["verdicts"]["resend"] is False:
        found.append(f"resend stored {result['resend']['stored']}")
    if result["verdicts"]["estimate"] is False:
        found.append(f"n {result['estimate_n']:,} != stored {result['stored']:,}")
    if result["verdicts"]["check"] is False:
        found.append(f"check {_check_text(result['check'])}")
    if result["verdicts"]["daemon"] is False:
        found.append(f"daemon exit {result['daemon_exit_code']}")
    return found


def run_line(result: dict[str, Any]) -> str:
    """One run in a line: throughput, latency, memory and the three checks."""
    submit, estimate = result["latency_ms"]["submit"], result["latency_ms"]["estimate"]
    rss = result["daemon_rss_mb"]
    resend = result["resend"]
    check = result["check"]
    check_word = "skipped" if not check["ran"] else "passed" if check["ok"] else "FAILED"
    return (
        f"{result['label']:<8} run {result['run']:>2}: {result['reports_per_s']:>9,.0f} reports/s "
        f"{result['calls_per_s']:>7,.1f} calls/s, submit p50 {submit['p50']:.0f} p99 "
        f"{submit['p99']:.0f} ms, estimate p99 {estimate['p99']:.0f} ms, RSS peak "
        f"{'-' if rss is None else format(rss['peak'], '.0f')} MB | resend {resend['batches']} "
        f"batches stored {resend['stored']} | n {'=' if result['verdicts']['estimate'] else '!='} "
        f"stored | check {check_word} | {'clean' if result['ok'] else 'NOT CLEAN'}"
    )


def summary(results: list[dict[str, Any]]) -> dict[str, Any]:
    """How many runs were clean, and what went wrong in the others."""
    return {
        "runs": len(results),
        "clean": sum(r["ok"] for r in results),
        "resend_stored": [r["resend"]["stored"] for r in results],
        "check_failed": sum(r["verdicts"]["check"] is False for r in results),
        "not_clean": {str(r["run"]): problems(r) for r in results if not r["ok"]},
    }


def summary_line(label: str, figures: dict[str, Any]) -> str:
    """``N/M runs clean``, with the problems of the others."""
    text = f"{label}: {figures['clean']}/{figures['runs']} runs clean"
    if figures["not_clean"]:
        text += "; not clean: " + "; ".join(
            f"run {run} ({', '.join(found)})" for run, found in figures["not_clean"].items()
        )
    return text


def comparison(
    current: list[dict[str, Any]],
    baseline: list[dict[str, Any]],
    latencies: dict[str, list[float]],
) -> dict[str, Any]:
    """Paired rounds: the throughput ratios and both pooled SubmitReports p99s; the verdicts."""
    ratios = [
        c["reports_per_s"] / b["reports_per_s"] for c, b in zip(current, baseline, strict=True)
    ]
    p99 = {label: percentiles(values)["p99"] for label, values in latencies.items()}
    median = float(np.median(ratios))
    return {
        "rounds": len(ratios),
        "ratios": [round(r, 3) for r in ratios],
        "ratio_median": round(median, 3),
        "current_reports_per_s": [c["reports_per_s"] for c in current],
        "baseline_reports_per_s": [b["reports_per_s"] for b in baseline],
        "current_p99_ms": p99["current"],
        "baseline_p99_ms": p99["baseline"],
        "throughput_pass": median >= THROUGHPUT_TARGET,
        "p99_pass": p99["current"] <= P99_TARGET_MS,
    }


def comparison_lines(figures: dict[str, Any]) -> list[str]:
    """The ratio, both p99s and the PASS/FAIL lines."""
    ratios = figures["ratios"]
    return [
        f"throughput, current / baseline, per round: {', '.join(f'{r:.2f}x' for r in ratios)}",
        f"{'PASS' if figures['throughput_pass'] else 'FAIL'} current >= "
        f"{THROUGHPUT_TARGET:.1f}x baseline throughput: median {figures['ratio_median']:.2f}x "
        f"({min(ratios):.2f}-{max(ratios):.2f}x) over {figures['rounds']} rounds",
        f"{'PASS' if figures['p99_pass'] else 'FAIL'} p99 <= {P99_TARGET_MS:.0f} ms: current "
        f"{figures['current_p99_ms']:.1f} ms (baseline {figures['baseline_p99_ms']:.1f} ms), "
        "SubmitReports over all rounds",
    ]
