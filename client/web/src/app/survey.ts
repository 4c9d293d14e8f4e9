/** The page of one survey (/s/ID): check it, ask, keep and charge the reports, send them, show them. */

import type { Survey } from "../gen/deniable/v1/aggregator_pb";
import { type Policy, type Prepared, check, withinLimit } from "../policy/policy";
import type { Truth } from "../index";
import { type Kept, type Plan, keptFor, nowUtc, planAnswer } from "../store/plan";
import { type LocalState, keepAndCharge, readState, recordSent } from "../store/session";
import { checkSurvey } from "./checks";
import {
  costText,
  coveredBy,
  type QuestionView,
  clearProblems,
  questionView,
  readAnswers,
  showProblems,
} from "./form";
import { type Action, type Child, errorBox, focus, focusAlert, h, replace, setTitle, status } from "./dom";
import { RemoteError, aggregatorName, getSurvey, submitReports } from "./remote";
import { answeredLine, costLines, reportTable, storedLine } from "./sent";
import { onPolicyChange, openSettings } from "./settings";

const SETTINGS: Action = { label: "Privacy settings", run: () => void openSettings() };
const NOT_SENT =
  "Your reports are kept and charged in this browser: sending again, now or by reloading this page, " +
  "resends the same reports at no extra privacy cost.";

/** Render /s/ID into ``main``; ``takeFocus`` moves focus to its heading (after navigation). */
export async function surveyPage(
  main: HTMLElement,
  surveyId: string,
  takeFocus: boolean,
  navigate: (path: string) => void,
): Promise<void> {
  const heading = h("h1", { tabindex: "-1" }, `Survey ${surveyId}`);
  const meta = h("p", { className: "meta" }, `Survey ${surveyId} at ${aggregatorName()}`);
  const live = h("p", { className: "status", role: "status" });
  const body = h("div", { className: "body" });
  replace(main, heading, meta, live, body);
  setTitle(`Survey ${surveyId}`);
  if (takeFocus) focus(heading);
  const back: Action = { label: "Back to the open surveys", run: () => navigate("/") };
  const aggregator = aggregatorName();
  let showing: "form" | "other" = "other";
  let recheck: (policy: Policy) => void = () => void load();
  onPolicyChange((policy) => recheck(policy));
  const alive = (): boolean => heading.isConnected; // navigated away: leave the page alone

  function fail(error: unknown, actions: Action[], extra: Child[] = []): void {
    status(live, "");
    showing = "other";
    recheck = () => void load();
    const box = errorBox(error, actions, extra);
    replace(body, box);
    focusAlert(box);
  }

  async function load(banner?: unknown): Promise<void> {
    status(live, "Loading the survey…");
    let survey: Survey;
    try {
      survey = await getSurvey(surveyId);
      checkSurvey(survey, surveyId);
    } catch (error) {
      const retry: Action = { label: "Try again", run: () => void load() };
      if (alive()) fail(error, error instanceof RemoteError ? [retry, back] : [back]); // a refusal stays one
      return;
    }
    if (!alive()) return;
    heading.textContent = survey.title;
    setTitle(survey.title);
    const count = survey.questions.length === 1 ? "1 question" : `${survey.questions.length} questions`;
    meta.textContent = `Survey ${survey.id} at ${aggregator} · ${count}`;
    let state: LocalState;
    let prepared: Map<string, Prepared>;
    let kept: Map<string, Kept>;
    try {
      state = await readState();
      prepared = new Map(survey.questions.map((question) => [question.id, check(state.policy, question)]));
      kept = keptFor(aggregator, survey, prepared, state.entries); // a changed question is refused
    } catch (error) {
      if (alive()) fail(error, [SETTINGS, back]);
      return;
    }
    if (!alive()) return;
    const plan = planAnswer({
      aggregator,
      survey,
      prepared,
      truths: new Map(),
      entries: state.entries,
      charges: state.charges,
      now: nowUtc(),
      preview: true,
    });
    if (kept.size === survey.questions.length && plan.sent) {
      answered(plan, state.policy);
    } else if (
      kept.size === survey.questions.length &&
      plan.items.every((item) => item.charged) &&
      banner === undefined
    ) {
      status(
        live,
        "Your reports were kept and charged but not acknowledged: sending the same reports again…",
      );
      await submit(survey, prepared, new Map(), null);
    } else {
      form(survey, prepared, kept, state, plan, banner);
    }
  }

  function form(
    survey: Survey,
    prepared: Map<string, Prepared>,
    kept: Map<string, Kept>,
    state: LocalState,
    plan: Plan,
    banner?: unknown,
  ): void {
    const covered = coveredBy(aggregator, survey, kept, state.entries);
    const total = survey.questions.length;
    const views: QuestionView[] = survey.questions.map((question, index) =>
      questionView(prepared.get(question.id)!, index + 1, total, covered.get(question.id)),
    );
    const summary = h("div", { className: "alert problems", role: "alert", hidden: true });
    const cost = h("p", { id: "cost" }, costText(plan, state.policy));
    const allKept = views.every((view) => view.inputs === null);
    const button = h(
      "button",
      { type: "submit", className: "primary", "aria-describedby": "cost" },
      allKept ? "Send my kept reports" : "Randomize and send my answers",
    );
    let busy = false;
    const onSubmit = async (event: Event): Promise<void> => {
      event.preventDefault();
      if (busy) return;
      const { truths, problems } = readAnswers(views);
      if (problems.length > 0) {
        showProblems(problems, summary, views);
        return;
      }
      clearProblems(views, summary);
      busy = true;
      button.setAttribute("aria-disabled", "true");
      await submit(survey, prepared, truths, () => {
        busy = false;
        button.removeAttribute("aria-disabled");
      });
    };
    const intro = h(
      "p",
      { className: "intro" },
      "Your answers are randomized on this device and only the randomized reports are sent: " +
        "the server never sees a true answer. " +
        "Each question's report is drawn once and kept in this browser, so it cannot be re-rolled.",
    );
    const bannerBox = banner === undefined ? null : errorBox(banner, [SETTINGS]);
    replace(
      body,
      ...(bannerBox ? [bannerBox] : []),
      intro,
      summary,
      h(
        "form",
        { className: "survey", novalidate: true, autocomplete: "off", onsubmit: (event) => void onSubmit(event) },
        ...views.map((view) => view.element),
        h(
          "section",
          { className: "send", "aria-labelledby": "send-heading" },
          h("h2", { id: "send-heading" }, "Send"),
          cost,
          h(
            "div",
            { className: "actions" },
            button,
            h("button", { type: "button", onclick: () => void openSettings() }, "Privacy settings"),
          ),
        ),
      ),
    );
    status(live, "");
    showing = "form";
    recheck = (policy) => {
      if (showing !== "form" || [...prepared.values()].some((spec) => !withinLimit(policy, spec.mechanism)))
        void load();
      else cost.textContent = costText(plan, policy);
    };
    if (bannerBox) focusAlert(bannerBox);
  }

  /** Keep, check and charge in one transaction; then send, or say why not. */
  async function submit(
    survey: Survey,
    prepared: Map<string, Prepared>,
    truths: Map<string, Truth>,
    done: (() => void) | null,
  ): Promise<void> {
    status(live, "Randomizing your answers and keeping the reports in this browser…");
    let result;
    try {
      result = await keepAndCharge(aggregator, survey, prepared, truths);
    } catch (error) {
      done?.();
      fail(error, [{ label: "Reload the survey", run: () => void load() }, SETTINGS, back]);
      return;
    }
    truths.clear(); // the true answers are not needed past this point
    if (result.outcome === "sent-before") answered(result.plan, result.policy);
    else if (result.outcome === "over-budget") await load(result.error);
    else await send(result.plan, result.policy);
  }

  async function send(plan: Plan, policy: Policy): Promise<void> {
    showing = "other";
    recheck = () => undefined;
    const count = plan.items.length === 1 ? "1 randomized answer" : `${plan.items.length} randomized answers`;
    status(live, `Sending ${count} to ${aggregator}…`);
    replace(
      body,
      reportTable(plan, `Being sent to ${aggregator} (your true answers never leave this device)`),
      ...costLines(plan, policy, true),
    );
    let response;
    try {
      response = await submitReports(plan.items.map((item) => item.report));
    } catch (error) {
      fail(
        error,
        [{ label: "Send again", run: () => void send(plan, policy) }, back],
        [h("p", {}, NOT_SENT)],
      );
      body.append(
        reportTable(plan, `Kept and charged, not acknowledged yet by ${aggregator}`),
        ...costLines(plan, policy, true),
      );
      return;
    }
    try {
      await recordSent(plan);
    } catch {
      // Not recorded as acknowledged: the next visit resends the same reports, free and idempotent.
    }
    const title = h("h2", { tabindex: "-1" }, "Sent");
    replace(
      body,
      h(
        "section",
        { className: "sent", "aria-labelledby": "sent-heading" },
        Object.assign(title, { id: "sent-heading" }),
        h("p", {}, storedLine(plan, response)),
        reportTable(plan, `What was sent to ${aggregator} (your true answers never left this device)`),
        ...costLines(plan, policy, true),
        h("p", {}, h("a", { href: "/" }, "Back to the open surveys")),
      ),
    );
    status(live, "Sent.");
    focus(title);
  }

  function answered(plan: Plan, policy: Policy): void {
    showing = "other";
    recheck = () => void load();
    status(live, "");
    const title = h("h2", { tabindex: "-1", id: "sent-heading" }, "Already answered");
    replace(
      body,
      h(
        "section",
        { className: "sent", "aria-labelledby": "sent-heading" },
        title,
        h("p", {}, answeredLine(plan)),
        reportTable(
          plan,
          `What was sent to ${aggregator} and stored (your true answers never left this device)`,
          false,
        ),
        ...costLines(plan, policy, false).slice(-1),
        h("p", {}, h("a", { href: "/" }, "Back to the open surveys")),
      ),
    );
    if (takeFocus) focus(title);
  }

  await load();
}
