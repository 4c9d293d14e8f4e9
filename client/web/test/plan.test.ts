/** One report per question, drawn once: kept, copied for repeated questions, charged once per draw. */

import assert from "node:assert/strict";
import { test } from "node:test";
import { RefusedError } from "../src/core/errors";
import type { Charge } from "../src/policy/budget";
import { type Kept, type Plan, chargesOf, planAnswer } from "../src/store/plan";
import { prepared, survey, yesNo, yesToAll } from "./fake";

const HERE = "http://127.0.0.1:8080";

function plan(
  of: ReturnType<typeof survey>,
  entries: Kept[] = [],
  charges: Charge[] = [],
  epsilon?: number,
): Plan {
  return planAnswer({
    aggregator: HERE,
    survey: of,
    prepared: prepared(of, epsilon),
    truths: yesToAll(of),
    entries,
    charges,
    now: "2026-01-01T00:00:00Z",
  });
}

/** The memo and ledger after a plan is kept, charged and acknowledged. */
function settle(done: Plan, entries: Kept[] = [], charges: Charge[] = []): [Kept[], Charge[]] {
  const kept = [...entries, ...done.keep.map((k) => ({ ...k, sentAt: "2026-01-01T00:00:01Z" }))];
  return [kept, [...charges, ...chargesOf(done, "2026-01-01T00:00:00Z")]];
}

test("a first answer draws every report, keeps it and costs each ε", () => {
  const first = plan(survey("s1", yesNo("a"), yesNo("b")));
  assert.equal(first.keep.length, 2);
  assert.equal(first.cost, 2 * 1.0986122886681098);
  assert.equal(first.before, 0);
  assert.equal(first.sent, false);
  assert.deepEqual(new Set(first.items.map((i) => i.report.reportId)).size, 2);
  assert.ok(first.items.every((i) => /^[0-9a-f]{32}$/.test(i.report.reportId)));
});

test("answering again sends the kept reports, whatever the answer, at no cost", () => {
  const asked = survey("s1", yesNo("a"), yesNo("b"));
  const [entries, charges] = settle(plan(asked));
  const again = planAnswer({
    aggregator: HERE,
    survey: asked,
    prepared: prepared(asked),
    truths: new Map(),
    entries,
    charges,
    now: "later",
  });
  assert.deepEqual(
    again.items.map((i) => i.report.reportId),
    entries.map((k) => k.report.reportId),
  );
  assert.equal(again.cost, 0);
  assert.equal(again.keep.length, 0);
  assert.equal(again.sent, true);
  assert.ok(again.items.every((i) => i.reused && i.charged));
  assert.equal(chargesOf(again, "later").length, 0);
});

test("a kept but uncharged report (refused over budget) is charged when sent", () => {
  const asked = survey("s1", yesNo("a"));
  const first = plan(asked);
  const again = plan(asked, first.keep.slice(), []);
  assert.equal(again.items[0]!.report.reportId, first.items[0]!.report.reportId);
  assert.equal(again.cost, 1.0986122886681098);
  assert.equal(chargesOf(again, "t").length, 1);
});

test("a question changed since its report was kept is refused; a changed text is not", () => {
  const [entries, charges] = settle(plan(survey("s1", yesNo("a", 0.5))));
  assert.throws(
    () => plan(survey("s1", yesNo("a", 0.75)), entries, charges),
    (error: unknown) =>
      error instanceof RefusedError &&
      /question 'a' of survey s1 at http:\/\/127\.0\.0\.1:8080 is not the question your report for it was drawn for on 2026-01-01T00:00:00Z \(its options or mechanism changed\)/.test(
        error.message,
      ) &&
      /refusing to answer, nothing was sent/.test(error.message),
  );
  const retexted = plan(survey("s1", yesNo("a", 0.5, "Reworded?")), entries, charges);
  assert.equal(retexted.items[0]!.report.reportId, entries[0]!.report.reportId);
});

test("a question asked twice in one survey sends one draw under two ids, charged once", () => {
  const twice = plan(survey("s1", yesNo("a", 0.5, "Same?"), yesNo("b", 0.5, "  SAME? ")));
  const [a, b] = twice.items;
  assert.notEqual(a!.report.reportId, b!.report.reportId);
  assert.deepEqual(a!.report.value, b!.report.value);
  assert.equal(b!.draw, a!.report.reportId);
  assert.equal(twice.cost, 1.0986122886681098);
  assert.deepEqual(
    chargesOf(twice, "t").map((c) => c.draw),
    [a!.report.reportId, a!.report.reportId],
  );
});

test("the same question in another survey gets the kept value under a fresh id, free", () => {
  const [entries, charges] = settle(plan(survey("s1", yesNo("a", 0.5, "Cheated?"))));
  const elsewhere = plan(survey("s2", yesNo("x", 0.5, "cheated?"), yesNo("y")), entries, charges);
  const [copy, fresh] = elsewhere.items;
  assert.notEqual(copy!.report.reportId, entries[0]!.report.reportId);
  assert.equal(copy!.report.surveyId, "s2");
  assert.equal(copy!.report.questionId, "x");
  assert.deepEqual(copy!.report.value, entries[0]!.report.value);
  assert.equal(copy!.draw, entries[0]!.report.reportId);
  assert.equal(copy!.cost, 0);
  assert.equal(copy!.drawnAt, entries[0]!.drawnAt);
  assert.equal(fresh!.cost, 1.0986122886681098);
  assert.equal(elsewhere.cost, 1.0986122886681098);
  assert.equal(elsewhere.before, 1.0986122886681098);
  assert.equal(elsewhere.keep.length, 2); // the copy is kept too, with its draw
  assert.equal(elsewhere.keep[0]!.draw, entries[0]!.report.reportId);
});

test("every kept report and charge names this aggregator (the page's origin)", () => {
  const first = plan(survey("s1", yesNo("a")));
  assert.deepEqual(
    first.keep.map((k) => [k.aggregator, k.surveyId, k.questionId]),
    [[HERE, "s1", "a"]],
  );
  assert.ok(chargesOf(first, "t").every((c) => c.aggregator === HERE && c.surveyId === "s1"));
});
