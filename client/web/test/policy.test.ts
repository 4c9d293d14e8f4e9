/** The policy's limits and the budget, checked exactly as the Python client's ``Policy`` and ``Plan``. */

import assert from "node:assert/strict";
import { test } from "node:test";
import { Fraction, ONE } from "../src/core/fraction";
import { InvalidAnswerError, RefusedError } from "../src/core/errors";
import { type Charge, checkBudget, oncePerDraw, planCost, remaining, spent } from "../src/policy/budget";
import { DEFAULT_POLICY, parseSetting, policyOf, withinLimit } from "../src/policy/policy";
import { expAtLeast, tightestEpsilon } from "../src/privacy/epsilon";
import { mechanism } from "./fake";

function charge(draw: string, epsilon: number, aggregator = "a", surveyId = "s", reportId = draw): Charge {
  return { aggregator, surveyId, questionId: "q", mechanism: "grr", epsilon, reportId, at: "t", draw };
}

function nextUp(x: number): number {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, x);
  view.setBigUint64(0, view.getBigUint64(0) + 1n);
  return view.getFloat64(0);
}

function nextDown(x: number): number {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, x);
  view.setBigUint64(0, view.getBigUint64(0) - 1n);
  return view.getFloat64(0);
}

test("defaults are the CLI's: 2.0 per answer, 10.0 in all", () => {
  assert.equal(DEFAULT_POLICY.maxEpsilon, 2.0);
  assert.equal(DEFAULT_POLICY.budget, 10.0);
  assert.deepEqual(policyOf(undefined), DEFAULT_POLICY);
  assert.deepEqual(policyOf({ maxEpsilon: -1, budget: "x" }), DEFAULT_POLICY);
  const set = policyOf({ maxEpsilon: 1.5, budget: 4 });
  assert.deepEqual([set.maxEpsilon, set.budget, set.sources.maxEpsilon], [1.5, 4, "set in this browser"]);
});

test("settings must be finite numbers above 0", () => {
  assert.equal(parseSetting("budget", " 12.5 "), 12.5);
  for (const bad of ["0", "-1", "", "abc", "Infinity", "NaN", "1e999"]) {
    assert.throws(() => parseSetting("maxEpsilon", bad), InvalidAnswerError, bad);
  }
  assert.throws(() => parseSetting("maxEpsilon", "0"), /max_epsilon must be a finite number > 0, got "0"/);
});

test("the limit compares the tightest ε: the same as e^limit ≥ the exact ratio", () => {
  for (const alpha of [0.1, 0.25, 0.46211715726000974, 0.5, 0.7615941559557649, 0.9, 0.999]) {
    const a = Fraction.fromDouble(alpha);
    const ratio = ONE.add(a).div(ONE.sub(a));
    const epsilon = tightestEpsilon(ratio);
    for (const limit of [epsilon, nextUp(epsilon), nextDown(epsilon), 2.0, 1.0, epsilon * 2]) {
      const policy = { ...DEFAULT_POLICY, maxEpsilon: limit };
      assert.equal(
        withinLimit(policy, mechanism(epsilon, ratio)),
        expAtLeast(limit, ratio),
        `${alpha} at ${limit}`,
      );
    }
  }
});

test("ε adds up once per draw, exactly rounded", () => {
  const charges = [charge("d1", 0.1), charge("d2", 0.2), charge("d1", 0.1, "b", "t", "r9")];
  assert.equal(oncePerDraw(charges), 0.30000000000000004); // fsum([0.1, 0.2])
  assert.equal(spent(charges, "a"), 0.30000000000000004);
  assert.equal(spent(charges, "b"), 0.1);
  assert.equal(spent(charges, "a", "nope"), 0);
  assert.equal(oncePerDraw([charge("d", 1), charge("d", 2)]), 2); // a draw's largest charge
  assert.equal(
    planCost([
      { drawn: "x", cost: 1 },
      { drawn: "x", cost: 1 },
      { drawn: "y", cost: 0 },
    ]),
    1,
  );
});

test("the budget refuses an answer that would pass it, by an exact sum, and never a free one", () => {
  const policy = { ...DEFAULT_POLICY, budget: 0.3 };
  assert.throws(
    () => checkBudget(policy, 0.1, 0.2), // 0.1 + 0.2 = 0.30000000000000004 > 0.3
    (error: unknown) =>
      error instanceof RefusedError &&
      error.message.startsWith(
        "answering would spend epsilon 0.2000, but only 0.1999 of your budget of 0.3 (default) is left",
      ) &&
      error.message.includes("0.0001 over budget; refusing to answer, nothing was sent"),
  );
  checkBudget({ ...DEFAULT_POLICY, budget: 0.5 }, 0.25, 0.25); // exactly at the budget: accepted
  checkBudget({ ...DEFAULT_POLICY, budget: 0.3 }, 5, 0); // costs nothing: never refused
  assert.equal(remaining(policy, 1), 0);
});
