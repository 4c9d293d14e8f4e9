/** The app's routes (history API): / lists the open surveys, /s/ID shows one; links and the settings button. */

import { visible } from "../text/unsafe";
import { SURVEY_ID } from "./checks";
import { errorBox, focus, focusAlert, h, replace, root, setTitle, status } from "./dom";
import { aggregatorName, listSurveys } from "./remote";
import { onPolicyChange, openSettings } from "./settings";
import { surveyPage } from "./survey";

/** Render / into ``main``; ``takeFocus`` moves focus to its heading (after navigation). */
export async function listPage(main: HTMLElement, takeFocus: boolean): Promise<void> {
  const heading = h("h1", { tabindex: "-1" }, "Open surveys");
  const live = h("p", { className: "status", role: "status" });
  const body = h("div", { className: "body" });
  replace(
    main,
    heading,
    h(
      "p",
      { className: "meta" },
      `At ${aggregatorName()}. Your answers are randomized in this browser; only randomized reports are sent.`,
    ),
    live,
    body,
  );
  setTitle("");
  if (takeFocus) focus(heading);
  status(live, "Loading the open surveys…");
  let surveys;
  try {
    surveys = await listSurveys();
  } catch (error) {
    status(live, "");
    const box = errorBox(error, [{ label: "Try again", run: () => void listPage(main, true) }]);
    replace(body, box);
    focusAlert(box);
    return;
  }
  status(live, surveys.length === 1 ? "1 open survey." : `${surveys.length} open surveys.`);
  if (surveys.length === 0) {
    replace(body, h("p", {}, `No open surveys at ${aggregatorName()}.`));
    return;
  }
  const items = surveys.map((survey) => {
    // Titles come from the aggregator: shown with unsafe characters as escapes, as the CLI lists them.
    const title = visible(survey.title) || `Survey ${visible(survey.id)}`;
    const questions = survey.questions.length === 1 ? "1 question" : `${survey.questions.length} questions`;
    const reports = `${survey.reports} report${survey.reports === 1n ? "" : "s"} so far`;
    const name = SURVEY_ID.test(survey.id)
      ? h("a", { href: `/s/${survey.id}` }, title)
      : h("span", {}, title);
    return h(
      "li",
      {},
      name,
      h("span", { className: "detail" }, ` · ${questions} · ${reports} · id ${visible(survey.id)}`),
    );
  });
  replace(body, h("ul", { className: "surveys" }, ...items));
}

const SURVEY_PATH = /^\/s\/([a-z0-9]{1,64})\/?$/;

/** Render the view of the current location; ``takeFocus`` after a navigation, not at first load. */
function route(takeFocus: boolean): void {
  const main = root();
  onPolicyChange(() => undefined); // the new view sets its own
  const path = location.pathname;
  const survey = SURVEY_PATH.exec(path);
  if (path === "/" || path === "") {
    void listPage(main, takeFocus);
  } else if (survey) {
    void surveyPage(main, survey[1]!, takeFocus, navigate);
  } else {
    const heading = h("h1", { tabindex: "-1" }, "No such page");
    replace(
      main,
      heading,
      h("p", {}, "This address names no page: survey addresses look like /s/SURVEY_ID."),
      h("p", {}, h("a", { href: "/" }, "See the open surveys")),
    );
    setTitle("No such page");
    if (takeFocus) focus(heading);
  }
}

/** Go to a path of this page without reloading it. */
export function navigate(path: string): void {
  if (path !== location.pathname) history.pushState(null, "", path);
  route(true);
}

/** Follow same-origin links to the page's routes without reloading. */
function onClick(event: MouseEvent): void {
  if (
    event.defaultPrevented ||
    event.button !== 0 ||
    event.metaKey ||
    event.ctrlKey ||
    event.shiftKey ||
    event.altKey
  )
    return;
  const link = (event.target as Element | null)?.closest?.("a");
  if (!link || link.target || link.hasAttribute("download")) return;
  const url = new URL(link.href, location.href);
  if (url.origin !== location.origin || url.hash) return;
  if (url.pathname === "/" || SURVEY_PATH.test(url.pathname)) {
    event.preventDefault();
    navigate(url.pathname);
  }
}

/** Start the app: route the current location and listen for navigation. */
export function start(): void {
  try {
    aggregatorName(); // a page that names no usable aggregator stops here, sending nothing
  } catch (error) {
    const main = root();
    const box = errorBox(error);
    replace(main, h("h1", { tabindex: "-1" }, "This page cannot be used"), box);
    focusAlert(box);
    return;
  }
  document.addEventListener("click", onClick);
  window.addEventListener("popstate", () => route(true));
  document.getElementById("settings-button")?.addEventListener("click", () => void openSettings());
  route(false);
}
