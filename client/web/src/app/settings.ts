/** The privacy settings dialog: the two limits, stored in this browser, and what the ledger holds. */

import { InvalidAnswerError } from "../index";
import { type Charge, oncePerDraw, remaining, spent } from "../policy/budget";
import { type Policy, DEFAULT_BUDGET, DEFAULT_MAX_EPSILON, parseSetting } from "../policy/policy";
import { readState, resetPolicy, savePolicy } from "../store/session";
import { reprFloat, roundDown, roundUp } from "../text/numbers";
import { describe, focus, h, replace } from "./dom";
import { aggregatorName } from "./remote";

let changed: (policy: Policy) => void = () => undefined;

/** What the current view does when the limits change (re-check its survey). */
export function onPolicyChange(handler: (policy: Policy) => void): void {
  changed = handler;
}

function field(
  id: string,
  label: string,
  hint: string,
  value: number,
): [HTMLElement, HTMLInputElement, HTMLElement] {
  const error = h("p", { className: "field-error", id: `${id}-error`, hidden: true });
  const input = h("input", {
    type: "number",
    id,
    name: id,
    step: "any",
    min: "0",
    inputmode: "decimal",
    value: reprFloat(value),
    "aria-describedby": `${id}-hint ${id}-error`,
  });
  const row = h(
    "div",
    { className: "setting" },
    h("label", { for: id }, label),
    h("p", { className: "hint", id: `${id}-hint` }, hint),
    input,
    error,
  );
  return [row, input, error];
}

function ledgerSummary(policy: Policy, list: readonly Charge[]): HTMLElement {
  const total = oncePerDraw(list);
  const surveys = [...new Set(list.map((c) => c.surveyId))];
  return h(
    "section",
    { "aria-labelledby": "ledger-heading" },
    h("h3", { id: "ledger-heading" }, "Spent in this browser"),
    h(
      "p",
      {},
      `This browser: ${roundUp(total)} spent, ${roundDown(remaining(policy, total))} left, ` +
        `of ${reprFloat(policy.budget)}.`,
    ),
    surveys.length === 0
      ? h("p", {}, "No privacy spent yet.")
      : h(
          "table",
          { className: "ledger" },
          h("caption", {}, `Charges at ${aggregatorName()}, by survey`),
          h(
            "thead",
            {},
            h(
              "tr",
              {},
              h("th", { scope: "col" }, "Survey"),
              h("th", { scope: "col" }, "Answers"),
              h("th", { scope: "col" }, "Epsilon spent"),
            ),
          ),
          h(
            "tbody",
            {},
            ...surveys.map((surveyId) =>
              h(
                "tr",
                {},
                h("th", { scope: "row" }, surveyId),
                h("td", {}, list.filter((c) => c.surveyId === surveyId).length),
                h("td", {}, roundUp(spent(list, aggregatorName(), surveyId))),
              ),
            ),
          ),
        ),
  );
}

/** Open the settings dialog (modal: focus stays inside; Escape closes it and focus returns). */
export async function openSettings(): Promise<void> {
  const opener = document.activeElement instanceof HTMLElement ? document.activeElement : null;
  const dialog =
    (document.getElementById("settings") as HTMLDialogElement | null) ??
    document.body.appendChild(h("dialog", { id: "settings", "aria-labelledby": "settings-heading" }));
  const message = h("p", { role: "status", className: "saved" });
  let state;
  try {
    state = await readState();
  } catch (error) {
    replace(
      dialog,
      h("h2", { id: "settings-heading" }, "Privacy settings"),
      h("p", { role: "alert" }, describe(error).message),
      h("button", { type: "button", onclick: () => dialog.close() }, "Close"),
    );
    dialog.showModal();
    return;
  }
  const { policy } = state;
  const [maxRow, maxInput, maxError] = field(
    "max-epsilon",
    "Maximum epsilon per answer",
    "A question whose privacy loss is above this is refused " +
      `(default ${reprFloat(DEFAULT_MAX_EPSILON)}; now ${policy.sources.maxEpsilon}).`,
    policy.maxEpsilon,
  );
  const [budgetRow, budgetInput, budgetError] = field(
    "budget",
    "Privacy budget",
    "The most epsilon this browser spends at this site over every answer " +
      `(default ${reprFloat(DEFAULT_BUDGET)}; now ${policy.sources.budget}).`,
    policy.budget,
  );
  let summary = ledgerSummary(policy, state.charges);
  const show = (next: Policy, text: string): void => {
    message.textContent = text;
    const fresh = ledgerSummary(next, state.charges);
    summary.replaceWith(fresh);
    summary = fresh;
    changed(next);
  };
  const save = async (event: Event): Promise<void> => {
    event.preventDefault();
    const values: number[] = [];
    for (const [input, error, name] of [
      [maxInput, maxError, "maxEpsilon"],
      [budgetInput, budgetError, "budget"],
    ] as const) {
      error.hidden = true;
      input.removeAttribute("aria-invalid");
      try {
        values.push(parseSetting(name, input.value));
      } catch (problem) {
        error.textContent = problem instanceof InvalidAnswerError ? problem.message : String(problem);
        error.hidden = false;
        input.setAttribute("aria-invalid", "true");
      }
    }
    if (values.length < 2) {
      focus(dialog.querySelector<HTMLElement>("[aria-invalid=true]"));
      return;
    }
    show(await savePolicy(values[0]!, values[1]!), "Saved: your limits apply from now on.");
  };
  const reset = async (): Promise<void> => {
    const next = await resetPolicy();
    maxInput.value = reprFloat(next.maxEpsilon);
    budgetInput.value = reprFloat(next.budget);
    show(next, "Back to the defaults.");
  };
  replace(
    dialog,
    h("h2", { id: "settings-heading" }, "Privacy settings"),
    h(
      "p",
      {},
      `Kept in this browser's storage for ${aggregatorName()}: they do not count what you answered ` +
        "elsewhere, with the command-line client or in another browser.",
    ),
    h(
      "form",
      { novalidate: true, onsubmit: (event) => void save(event) },
      maxRow,
      budgetRow,
      h(
        "div",
        { className: "actions" },
        h("button", { type: "submit" }, "Save"),
        h("button", { type: "button", onclick: () => void reset() }, "Use the defaults"),
        h("button", { type: "button", onclick: () => dialog.close() }, "Close"),
      ),
    ),
    message,
    summary,
  );
  dialog.onclose = () => opener?.focus();
  dialog.showModal();
  maxInput.focus();
}
