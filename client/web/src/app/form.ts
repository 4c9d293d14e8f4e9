/** The survey's form: each question with its privacy sentence and ε, its inputs, and answer errors. */

import { InvalidAnswerError, type Truth } from "../index";
import type { Survey } from "../gen/deniable/v1/aggregator_pb";
import { checkBudget } from "../policy/budget";
import type { Policy, Prepared } from "../policy/policy";
import { repeats } from "../store/content";
import { type Kept, type Plan, twinsFor } from "../store/plan";
import { reprFloat, roundDown, roundUp } from "../text/numbers";
import { visible } from "../text/unsafe";
import { focus, h, idFor, replace } from "./dom";
import { exactLine, explain } from "./explain";
import { type Inputs, inputsFor } from "./inputs";

/** Why a question asks nothing: its report is kept, kept elsewhere, or another question's. */
export type Covered =
  | { readonly by: "kept"; readonly kept: Kept }
  | { readonly by: "twin"; readonly kept: Kept }
  | { readonly by: "repeat"; readonly first: string };

/** One question on the page. */
export interface QuestionView {
  readonly prepared: Prepared;
  readonly element: HTMLFieldSetElement;
  /** The inputs, when the question asks for an answer. */
  readonly inputs: Inputs | null;
  readonly error: HTMLElement;
}

function coveredLine(covered: Covered): string {
  switch (covered.by) {
    case "kept":
      return (
        `Answered before: the report drawn on ${covered.kept.drawnAt} is kept and sent as it is; ` +
        "an answer given now is not used."
      );
    case "twin":
      return (
        `Asked before (survey ${visible(covered.kept.surveyId)} at ${visible(covered.kept.aggregator)}): ` +
        `the report drawn for it on ${covered.kept.drawnAt} is sent again, so no second draw can be ` +
        "averaged with it; no answer is asked."
      );
    case "repeat":
      return `The same question as ${covered.first}: its report is sent for both; no answer is asked.`;
  }
}

/** A question's fieldset: legend (number and text), privacy sentence, exact ε, inputs or why none. */
export function questionView(
  prepared: Prepared,
  index: number,
  total: number,
  covered: Covered | undefined,
): QuestionView {
  const { question, mechanism } = prepared;
  const privacyId = idFor("privacy", question.id);
  const errorId = idFor("error", question.id);
  const error = h("p", { className: "field-error", id: errorId, hidden: true });
  const inputs = covered === undefined ? inputsFor(question, errorId) : null;
  const element = h(
    "fieldset",
    { className: "question", id: idFor("q", question.id), "aria-describedby": privacyId },
    h(
      "legend",
      {},
      h("span", { className: "number" }, `Question ${index} of ${total}`),
      h("span", { className: "text" }, question.text),
    ),
    h(
      "p",
      { className: "privacy", id: privacyId },
      h("strong", {}, "Privacy: "),
      explain(question, mechanism),
    ),
    h("p", { className: "exact" }, exactLine(question, mechanism)),
    ...(inputs === null ? [h("p", { className: "covered" }, coveredLine(covered!))] : inputs.nodes),
    error,
  );
  return { prepared, element, inputs, error };
}

/** A problem with one question's answer. */
export interface AnswerProblem {
  readonly view: QuestionView;
  readonly message: string;
}

/** Each asked question's true answer, parsed as the CLI parses it, or what is wrong with it. */
export function readAnswers(views: readonly QuestionView[]): {
  truths: Map<string, Truth>;
  problems: AnswerProblem[];
} {
  const truths = new Map<string, Truth>();
  const problems: AnswerProblem[] = [];
  for (const view of views) {
    if (view.inputs === null) continue;
    const read = view.inputs.read();
    if ("missing" in read) {
      problems.push({ view, message: `No answer yet: ${read.missing}.` });
      continue;
    }
    try {
      truths.set(
        view.prepared.question.id,
        view.prepared.type.parseAnswer(read.text, view.prepared.question),
      );
    } catch (error) {
      if (!(error instanceof InvalidAnswerError)) throw error;
      problems.push({ view, message: error.message });
    }
  }
  return { truths, problems };
}

/** Clear every question's error. */
export function clearProblems(views: readonly QuestionView[], summary: HTMLElement): void {
  summary.hidden = true;
  summary.replaceChildren();
  for (const view of views) {
    view.error.hidden = true;
    view.error.textContent = "";
    view.element.querySelectorAll("input").forEach((input) => input.removeAttribute("aria-invalid"));
  }
}

/**
 * Show the problems: each under its question (inputs marked invalid) and listed in a
 * summary of links to them, which takes focus.
 */
export function showProblems(
  problems: readonly AnswerProblem[],
  summary: HTMLElement,
  views: readonly QuestionView[],
): void {
  clearProblems(views, summary);
  for (const { view, message } of problems) {
    view.error.textContent = message;
    view.error.hidden = false;
    view.element.querySelectorAll("input").forEach((input) => input.setAttribute("aria-invalid", "true"));
  }
  const heading = h(
    "h2",
    { tabindex: "-1" },
    problems.length === 1 ? "One answer needs attention" : `${problems.length} answers need attention`,
  );
  const items = problems.map(({ view, message }) => {
    const link = h("a", { href: `#${view.element.id}` }, `${view.prepared.question.id}: ${message}`);
    link.addEventListener("click", (event) => {
      event.preventDefault();
      focus(view.inputs?.first() ?? view.element);
    });
    return h("li", {}, link);
  });
  replace(summary, heading, h("p", {}, "Nothing was randomized or sent."), h("ul", {}, ...items));
  summary.hidden = false;
  focus(heading);
}

/** Why each question asks nothing, if it does not: kept here, asked before in the survey, or kept elsewhere. */
export function coveredBy(
  aggregator: string,
  survey: Survey,
  kept: ReadonlyMap<string, Kept>,
  entries: readonly Kept[],
): Map<string, Covered> {
  const covered = new Map<string, Covered>();
  const twins = twinsFor(aggregator, survey, entries, kept);
  const first = repeats(survey.questions);
  for (const question of survey.questions) {
    const mine = kept.get(question.id);
    const twin = twins.get(question.id);
    const earlier = first.get(question.id);
    if (mine) covered.set(question.id, { by: "kept", kept: mine });
    else if (earlier !== undefined) covered.set(question.id, { by: "repeat", first: earlier });
    else if (twin) covered.set(question.id, { by: "twin", kept: twin });
  }
  return covered;
}

/** What sending costs, before the participant sends: new draws, ε, the budget left. */
export function costText(plan: Plan, policy: Policy): string {
  const fresh = plan.items.filter((item) => !item.reused && item.draw === null).length;
  const draws = fresh === 1 ? "1 new report" : `${fresh} new reports`;
  const cost =
    plan.cost === 0
      ? "no new privacy cost (every report was charged before)"
      : `a privacy cost of epsilon <= ${roundUp(plan.cost)} (epsilons add up)`;
  let over = "";
  try {
    checkBudget(policy, plan.before, plan.cost);
  } catch {
    over = " That is more than your budget allows: sending will be refused unless you raise it.";
  }
  return (
    `Sending draws ${draws} on this device, at ${cost}. Your budget in this browser: ` +
    `${roundUp(plan.before)} spent, ${roundDown(policy.budget - plan.after)} left after this, ` +
    `of ${reprFloat(policy.budget)}.${over}`
  );
}
