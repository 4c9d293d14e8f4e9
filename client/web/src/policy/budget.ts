/** The privacy ledger's sums and the budget check, as the Python client's ``Ledger`` and ``Plan``. */

import { RefusedError } from "../index";
import { fsum, reprFloat, roundDown, roundUp } from "../text/numbers";
import { type Policy, howToChange } from "./policy";

/**
 * One report's privacy loss at an aggregator, recorded before the report is sent. ``draw``
 * names the randomized draw it carries: its own report id unless it is a copy of a report
 * kept for the same question asked elsewhere. A draw costs its ε once, however often sent.
 */
export interface Charge {
  readonly aggregator: string;
  readonly surveyId: string;
  readonly questionId: string;
  readonly mechanism: string;
  readonly epsilon: number;
  readonly reportId: string;
  readonly at: string;
  readonly draw: string;
}

/** ε of the charges' distinct draws (each draw's largest charge), summed exactly. */
export function oncePerDraw(charges: Iterable<Charge>): number {
  const byDraw = new Map<string, number>();
  for (const charge of charges)
    byDraw.set(charge.draw, Math.max(byDraw.get(charge.draw) ?? 0, charge.epsilon));
  return fsum(byDraw.values());
}

/** ε spent at an aggregator (or on one of its surveys): each draw once. */
export function spent(charges: readonly Charge[], aggregator: string, surveyId?: string): number {
  return oncePerDraw(
    charges.filter((c) => c.aggregator === aggregator && (surveyId === undefined || c.surveyId === surveyId)),
  );
}

/** What one planned report costs: the ε of its draw, unless that draw was charged before. */
export interface Costed {
  /** The draw the report carries (its report id, or the one its value was first drawn under). */
  readonly drawn: string;
  /** 0 when the draw or the report is already in the ledger, else the mechanism's ε. */
  readonly cost: number;
}

/** The ε an answer adds: each new draw once (Python's ``Plan.cost``). */
export function planCost(items: Iterable<Costed>): number {
  const byDraw = new Map<string, number>();
  for (const item of items) if (item.cost) byDraw.set(item.drawn, item.cost);
  return fsum(byDraw.values());
}

/** ε spent once an answer of ``cost`` is charged after ``before``, summed exactly. */
export function spentAfter(before: number, cost: number): number {
  return fsum([before, cost]);
}

/**
 * Refuse, before anything is sent, an answer that would take the total over the budget
 * (Python's ``Plan.check_budget``); nothing is refused when it costs nothing new.
 */
export function checkBudget(policy: Policy, before: number, cost: number): void {
  const after = spentAfter(before, cost);
  if (cost > 0 && after > policy.budget) {
    const left = policy.budget - before;
    throw new RefusedError(
      `answering would spend epsilon ${roundUp(cost)}, but only ${roundDown(left)} of your budget ` +
        `of ${reprFloat(policy.budget)} (${policy.sources.budget}) is left in this browser ` +
        `(${roundUp(before)} spent): ${roundUp(after - policy.budget)} over budget; refusing to ` +
        `answer, nothing was sent. See what you spent under Privacy settings; to accept more ` +
        `privacy loss, raise the budget with ${howToChange("budget")}`,
    );
  }
}

/** The remaining budget after ``spentNow``, never below 0. */
export function remaining(policy: Policy, spentNow: number): number {
  return Math.max(policy.budget - spentNow, 0);
}
