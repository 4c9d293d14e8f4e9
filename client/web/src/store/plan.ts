/** What one answer sends: kept reports as drawn, copies for repeated questions, fresh draws. */

import { create, equals } from "@bufbuild/protobuf";
import { MechanismSchema, type Report, ReportSchema, type Survey } from "../gen/deniable/v1/aggregator_pb";
import { type ByteSource, InvalidAnswerError, RefusedError, type Truth, buildReport, osSource } from "../index";
import { type Charge, type Costed, oncePerDraw, planCost, spentAfter } from "../policy/budget";
import type { Prepared } from "../policy/policy";
import { reprStr } from "../core/pytext";
import { contentOf, copyReport, definitionOf, repeats } from "./content";

/** The one report drawn for a question at an aggregator, kept before it is shown or sent. */
export interface Kept {
  readonly aggregator: string;
  readonly surveyId: string;
  readonly questionId: string;
  readonly report: Report;
  /** ``definitionOf`` the question when drawn: a changed question is refused. */
  readonly definition: string | null;
  readonly drawnAt: string;
  /** When the aggregator acknowledged it; null: not yet, or not known. */
  readonly sentAt: string | null;
  /** ``contentOf`` the question: the same question asked elsewhere gets this report's value. */
  readonly content: string | null;
  /** The report id the value was first drawn under, for a copy; null: its own. */
  readonly draw: string | null;
}

/** The draw a kept report carries. */
export function keptDraw(kept: Kept): string {
  return kept.draw ?? kept.report.reportId;
}

/** One report of the plan, with what it costs. */
export interface PlanItem extends Costed {
  readonly report: Report;
  readonly prepared: Prepared;
  /** Kept from an earlier answer, or the value kept for the same question elsewhere. */
  readonly reused: boolean;
  /** Already in the ledger at this aggregator and survey. */
  readonly charged: boolean;
  readonly drawnAt: string;
  readonly sentAt: string | null;
  /** Its draw is already charged in this browser (here or for another survey): it costs nothing. */
  readonly paid: boolean;
  /** The report id its value was first drawn under, for a copy; null: its own. */
  readonly draw: string | null;
}

/** Everything one answer sends and costs; ``keep`` holds the memo entries it adds. */
export interface Plan {
  readonly aggregator: string;
  readonly surveyId: string;
  readonly items: readonly PlanItem[];
  readonly keep: readonly Kept[];
  /** ε spent in this browser before this answer (each draw once). */
  readonly before: number;
  /** ε this answer adds (draws charged before cost nothing). */
  readonly cost: number;
  readonly after: number;
  /** Whether the aggregator acknowledged every report before. */
  readonly sent: boolean;
}

/** The kept report fits the question still: same mechanism, same definition. */
export function fits(kept: Kept, prepared: Prepared): boolean {
  const question = prepared.question;
  const empty = create(MechanismSchema);
  if (!equals(MechanismSchema, kept.report.mechanism ?? empty, question.mechanism ?? empty)) return false;
  return kept.definition === null || kept.definition === definitionOf(question);
}

/**
 * The reports kept for the survey's questions at ``aggregator``, by question id; refuses a
 * question that is no longer the one its report was drawn for (Python's ``Session.kept``).
 */
export function keptFor(
  aggregator: string,
  survey: Survey,
  prepared: ReadonlyMap<string, Prepared>,
  entries: readonly Kept[],
): Map<string, Kept> {
  const found = new Map<string, Kept>();
  for (const question of survey.questions) {
    const kept = entries.find(
      (e) => e.aggregator === aggregator && e.surveyId === survey.id && e.questionId === question.id,
    );
    if (kept === undefined) continue;
    if (!fits(kept, prepared.get(question.id)!)) {
      throw new RefusedError(
        `question ${reprStr(question.id)} of survey ${survey.id} at ${aggregator} is not the ` +
          `question your report for it was drawn for on ${kept.drawnAt} (its options or mechanism ` +
          "changed). A second report about the same answer would tell the aggregator more than " +
          "its epsilon says; refusing to answer, nothing was sent. Ask the survey's organizer " +
          "why the question changed",
      );
    }
    found.set(question.id, kept);
  }
  return found;
}

/** The earliest report kept for a question with this content, anywhere (Python's ``Memo.twin``). */
export function twinOf(entries: readonly Kept[], content: string): Kept | undefined {
  let first: Kept | undefined;
  const key = (k: Kept): string =>
    `${k.drawnAt}\u0000${k.aggregator}\u0000${k.surveyId}\u0000${k.questionId}`;
  for (const kept of entries) {
    if (kept.content === content && (first === undefined || key(kept) < key(first))) first = kept;
  }
  return first;
}

/** For questions without a report kept here: one kept for the same question elsewhere. */
export function twinsFor(
  aggregator: string,
  survey: Survey,
  entries: readonly Kept[],
  kept: ReadonlyMap<string, Kept>,
): Map<string, Kept> {
  const found = new Map<string, Kept>();
  for (const question of survey.questions) {
    if (kept.has(question.id)) continue;
    const twin = twinOf(entries, contentOf(question));
    if (twin !== undefined) found.set(question.id, twin);
  }
  return found;
}

/** UTC time as ISO 8601 to the second, ``...Z`` (Python's ``now_utc``). */
export function nowUtc(date: Date = new Date()): string {
  return date.toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** What ``planAnswer`` reads: the survey, its checked questions, the answers and the stores. */
export interface PlanInput {
  readonly aggregator: string;
  readonly survey: Survey;
  readonly prepared: ReadonlyMap<string, Prepared>;
  readonly truths: ReadonlyMap<string, Truth>;
  readonly entries: readonly Kept[];
  readonly charges: readonly Charge[];
  readonly now: string;
  readonly source?: ByteSource;
  /** Plan without drawing (for the cost shown before submitting): fresh reports are placeholders. */
  readonly preview?: boolean;
}

/** Where a repeated question's value comes from: an earlier question, or a twin kept elsewhere. */
interface Source {
  readonly report: Report;
  readonly reused: boolean;
  readonly drawnAt: string;
  readonly drawn: string;
  readonly paid: boolean;
}

function item(
  report: Report,
  prepared: Prepared,
  from: Omit<PlanItem, "report" | "prepared" | "cost">,
): PlanItem {
  const cost = from.paid || from.charged ? 0 : prepared.mechanism.epsilon;
  return { report, prepared, ...from, cost };
}

/**
 * Each question's kept report, or a copy of the one its content was kept for, or a fresh
 * draw from its answer. A question with a kept report sends it whatever the answer given
 * now: fresh draws about the same answer could be averaged to reveal it.
 */
export function planAnswer(input: PlanInput): Plan {
  const { aggregator, survey, prepared, truths, entries, charges, now } = input;
  const kept = keptFor(aggregator, survey, prepared, entries);
  const twins = twinsFor(aggregator, survey, entries, kept);
  const here = charges.filter((c) => c.aggregator === aggregator && c.surveyId === survey.id);
  const charged = new Set(here.map((c) => c.reportId));
  const paid = new Set(charges.map((c) => c.draw));
  const firstAsked = repeats(survey.questions);
  const planned = new Map<string, PlanItem>();
  const keep: Kept[] = [];
  for (const question of survey.questions) {
    const spec = prepared.get(question.id)!;
    const before = kept.get(question.id);
    const twin = twins.get(question.id);
    let next: PlanItem;
    if (before !== undefined) {
      next = item(before.report, spec, {
        reused: true,
        charged: charged.has(before.report.reportId),
        drawnAt: before.drawnAt,
        sentAt: before.sentAt,
        paid: paid.has(keptDraw(before)),
        draw: before.draw,
        drawn: keptDraw(before),
      });
    } else if (twin !== undefined || firstAsked.has(question.id)) {
      const earlier = planned.get(firstAsked.get(question.id) ?? "");
      const source: Source | undefined =
        earlier ??
        (twin && {
          report: twin.report,
          reused: true,
          drawnAt: twin.drawnAt,
          drawn: keptDraw(twin),
          paid: paid.has(keptDraw(twin)),
        });
      if (source === undefined) throw new Error("a repeated question without its first report");
      const report = copyReport(source.report, survey.id, question);
      next = item(report, spec, {
        reused: source.reused,
        charged: charged.has(report.reportId),
        drawnAt: source.drawnAt,
        sentAt: null,
        paid: source.paid,
        draw: source.drawn === report.reportId ? null : source.drawn,
        drawn: source.drawn,
      });
    } else {
      const truth = truths.get(question.id);
      let report: Report;
      if (input.preview)
        report = create(ReportSchema, {
          reportId: `new-${question.id}`,
          surveyId: survey.id,
          questionId: question.id,
        });
      else if (truth === undefined)
        throw new InvalidAnswerError(`no answer for question ${reprStr(question.id)}`);
      else report = buildReport(survey.id, question, spec.mechanism, truth, input.source ?? osSource);
      next = item(report, spec, {
        reused: false,
        charged: false,
        drawnAt: now,
        sentAt: null,
        paid: false,
        draw: null,
        drawn: report.reportId,
      });
    }
    planned.set(question.id, next);
    if (before === undefined) {
      keep.push({
        aggregator,
        surveyId: survey.id,
        questionId: question.id,
        report: next.report,
        definition: definitionOf(question),
        drawnAt: next.drawnAt,
        sentAt: null,
        content: contentOf(question),
        draw: next.draw,
      });
    }
  }
  const items = [...planned.values()];
  const before = oncePerDraw(charges);
  const cost = planCost(items);
  const sent = items.every((planItem) => planItem.sentAt !== null);
  return {
    aggregator,
    surveyId: survey.id,
    items,
    keep,
    before,
    cost,
    after: spentAfter(before, cost),
    sent,
  };
}

/** The ledger's charges for every report of the plan not charged before (``Session.commit``). */
export function chargesOf(plan: Plan, at: string): Charge[] {
  return plan.items
    .filter((item) => !item.charged)
    .map((item) => ({
      aggregator: plan.aggregator,
      surveyId: plan.surveyId,
      questionId: item.report.questionId,
      mechanism: item.prepared.mechanism.name,
      epsilon: item.prepared.mechanism.epsilon,
      reportId: item.report.reportId,
      at,
      draw: item.drawn,
    }));
}
