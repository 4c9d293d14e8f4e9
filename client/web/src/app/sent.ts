/** What was sent: the randomized reports as the CLI shows them, their cost and the budget left. */

import type { Report, SubmitReportsResponse } from "../gen/deniable/v1/aggregator_pb";
import type { Policy } from "../policy/policy";
import type { Plan } from "../store/plan";
import { reprFloat, roundDown, roundUp } from "../text/numbers";
import { h } from "./dom";

function hex(bytes: Uint8Array): string {
  return [...bytes].map((byte) => byte.toString(16).padStart(2, "0")).join("");
}

/** A report's randomized value in words, as the CLI's ``show_value`` writes it. */
export function shownValue(report: Report): string {
  const value = report.value;
  switch (value.case) {
    case "bit":
      return value.value ? "yes" : "no";
    case "option":
    case "optionFixed":
      return `option ${value.value + 1}`;
    case "bits":
      return `bits ${hex(value.value)}`;
    case "hashed":
      return `hash value ${value.value.valueFixed ?? value.value.value}`;
    case "number":
      return reprFloat(value.value);
    case "encoded":
      return hex(value.value);
    default:
      return "(no value)";
  }
}

/**
 * The report table: question, reported value, mechanism, ε and report id. ``now``: the ε
 * column says what sending costs now ("0 (charged before)" for a draw paid before).
 */
export function reportTable(plan: Plan, caption: string, now = true): HTMLTableElement {
  const header = [
    "Question",
    "Reported (randomized)",
    "Mechanism",
    now ? "Epsilon charged now" : "Epsilon",
    "Report id",
  ];
  return h(
    "table",
    { className: "reports" },
    h("caption", {}, caption),
    h("thead", {}, h("tr", {}, ...header.map((name) => h("th", { scope: "col" }, name)))),
    h(
      "tbody",
      {},
      ...plan.items.map((item) =>
        h(
          "tr",
          {},
          h("th", { scope: "row" }, item.report.questionId),
          h("td", {}, shownValue(item.report)),
          h("td", {}, item.prepared.mechanism.name),
          h(
            "td",
            {},
            now && item.cost === 0 ? "0 (charged before)" : roundUp(item.prepared.mechanism.epsilon),
          ),
          h("td", { className: "report-id" }, item.report.reportId),
        ),
      ),
    ),
  );
}

/** The lines under the table: reused reports, the cost now and the budget (``show_reports``). */
export function costLines(plan: Plan, policy: Policy, charged: boolean): HTMLElement[] {
  const lines: HTMLElement[] = [];
  const reused = plan.items.filter((item) => item.reused);
  if (reused.length > 0) {
    const were = reused.length === 1 ? "report was" : "reports were";
    const first = reused.map((item) => item.drawnAt).sort()[0];
    lines.push(
      h(
        "p",
        {},
        `${reused.length} ${were} drawn before (from ${first}) and kept: a question's report is drawn ` +
          "once and sent as it is, whatever the answer, so it cannot be re-rolled.",
      ),
    );
  }
  if (plan.cost === 0) {
    lines.push(h("p", {}, "Privacy cost now: none; every report was charged before."));
  } else {
    const paid = plan.items.filter((item) => item.cost === 0).length;
    const note = paid ? `; ${paid} charged before cost nothing again` : "";
    lines.push(h("p", {}, `Privacy cost now: epsilon <= ${roundUp(plan.cost)} (epsilons add up${note}).`));
  }
  const spentNow = charged ? plan.after : plan.before;
  lines.push(
    h(
      "p",
      {},
      charged
        ? `Your budget in this browser: ${roundUp(plan.before)} spent before, ` +
            `${roundDown(policy.budget - plan.after)} left after this, of ${reprFloat(policy.budget)}.`
        : `Your budget in this browser: ${roundUp(spentNow)} spent, ` +
            `${roundDown(policy.budget - spentNow)} left, of ${reprFloat(policy.budget)}.`,
    ),
  );
  return lines;
}

/** "Sent N randomized answers; the server stored S." as the CLI says it. */
export function storedLine(plan: Plan, response: SubmitReportsResponse): string {
  const before = response.alreadyStored ? ` (${response.alreadyStored} were already stored)` : "";
  return `Sent ${plan.items.length} randomized answers; the server stored ${response.stored}.${before}`;
}

/** "You already answered survey S at A: its reports were stored on T", as the CLI refuses it. */
export function answeredLine(plan: Plan): string {
  const last = plan.items
    .map((item) => item.sentAt ?? "")
    .sort()
    .at(-1);
  const reports = plan.items.length === 1 ? "its report was" : `its ${plan.items.length} reports were`;
  return (
    `You already answered survey ${plan.surveyId} at ${plan.aggregator}: ${reports} stored on ${last}. ` +
    "Each question gets one report, drawn once, so that reports cannot be averaged to reveal your " +
    "answers; nothing new was sent."
  );
}
