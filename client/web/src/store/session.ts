/** The guardrails around sending (Python's ``Session``): keep, check the budget, charge, then send. */

import type { Survey } from "../gen/deniable/v1/aggregator_pb";
import type { Truth } from "../index";
import { type Charge, checkBudget } from "../policy/budget";
import { type Policy, type Prepared, check, policyOf, withinLimit } from "../policy/policy";
import {
  CHARGES,
  REPORTS,
  SETTINGS,
  addCharges,
  addKept,
  markSent,
  readCharges,
  readKept,
  request,
  transact,
} from "./db";
import { type Kept, type Plan, chargesOf, nowUtc, planAnswer } from "./plan";

/** The key of the stored policy in the settings store. */
const POLICY = "policy";

/** What this browser holds: every kept report, every charge, and the policy. */
export interface LocalState {
  readonly entries: readonly Kept[];
  readonly charges: readonly Charge[];
  readonly policy: Policy;
}

async function readPolicy(tx: IDBTransaction): Promise<Policy> {
  const stored = await request(
    tx.objectStore(SETTINGS).get(POLICY) as IDBRequest<Record<string, unknown> | undefined>,
  );
  return policyOf(stored as { maxEpsilon?: unknown; budget?: unknown } | undefined);
}

/** Read the memo, the ledger and the policy at once (one read-only transaction). */
export function readState(): Promise<LocalState> {
  return transact([REPORTS, CHARGES, SETTINGS], "readonly", async (tx) => {
    const [entries, charges, policy] = await Promise.all([readKept(tx), readCharges(tx), readPolicy(tx)]);
    return { entries, charges, policy };
  });
}

/** Store the participant's limits (each a finite number > 0, checked by the caller). */
export function savePolicy(maxEpsilon: number, budget: number): Promise<Policy> {
  return transact([SETTINGS], "readwrite", async (tx) => {
    await request(tx.objectStore(SETTINGS).put({ name: POLICY, maxEpsilon, budget, at: nowUtc() }));
    return readPolicy(tx);
  });
}

/** Forget the participant's limits: the defaults apply again. */
export function resetPolicy(): Promise<Policy> {
  return transact([SETTINGS], "readwrite", async (tx) => {
    await request(tx.objectStore(SETTINGS).delete(POLICY));
    return readPolicy(tx);
  });
}

/** How an answer went in ``keepAndCharge``. */
export type Submission =
  | { readonly outcome: "charged"; readonly plan: Plan; readonly policy: Policy }
  | { readonly outcome: "sent-before"; readonly plan: Plan; readonly policy: Policy }
  | { readonly outcome: "over-budget"; readonly plan: Plan; readonly policy: Policy; readonly error: Error };

/**
 * In one readwrite transaction (tabs take turns): plan the answer against the memo and the
 * ledger as they are now, keep its new reports, check the budget and charge the ledger, so
 * that the reports are kept and paid for before anything is sent. A question changed since
 * its report was kept, a missing answer or a limit lowered meanwhile throws, writing
 * nothing; an answer over the budget keeps its reports (they are never drawn again) and
 * charges nothing.
 */
export function keepAndCharge(
  aggregator: string,
  survey: Survey,
  prepared: ReadonlyMap<string, Prepared>,
  truths: ReadonlyMap<string, Truth>,
): Promise<Submission> {
  return transact([REPORTS, CHARGES, SETTINGS], "readwrite", async (tx) => {
    const [entries, charges, policy] = await Promise.all([readKept(tx), readCharges(tx), readPolicy(tx)]);
    for (const spec of prepared.values()) {
      if (!withinLimit(policy, spec.mechanism)) check(policy, spec.question); // throws the refusal
    }
    const now = nowUtc();
    const plan = planAnswer({ aggregator, survey, prepared, truths, entries, charges, now });
    if (plan.sent) return { outcome: "sent-before", plan, policy };
    await addKept(tx, plan.keep); // kept before it is shown: never drawn again
    try {
      checkBudget(policy, plan.before, plan.cost);
    } catch (error) {
      return { outcome: "over-budget", plan, policy, error: error as Error };
    }
    await addCharges(tx, chargesOf(plan, now)); // charged before sending: never under-counted
    return { outcome: "charged", plan, policy };
  });
}

/** Record that the aggregator acknowledged the plan's reports (Python's ``mark_sent``). */
export function recordSent(plan: Plan): Promise<void> {
  const keys = plan.items.map(
    (item) => [plan.aggregator, item.report.surveyId, item.report.questionId] as [string, string, string],
  );
  return transact([REPORTS], "readwrite", (tx) => markSent(tx, keys, nowUtc()));
}
