/** The page at /: the open surveys (``ListSurveys``), each a link to its own page. */

import { SURVEY_ID } from "./checks";
import { focus, h, replace, setTitle } from "./dom";
import { errorBox, focusAlert, status } from "./notice";
import { aggregatorName, listSurveys } from "./remote";
import { visible } from "../text/unsafe";

/** Render / into ``main``; ``takeFocus`` moves focus to its heading (after navigation). */
export async function listPage(main: HTMLElement, takeFocus: boolean): Promise<void> {
  const heading = h("h1", { tabindex: "-1" }, "Open surveys");
  const live = h("p", { className: "status", role: "status" });
  const body = h("div", { className: "body" });
  replace(
    main,
    heading,
    h("p", { className: "meta" }, `At ${aggregatorName()}. Your answers are randomized in this browser; only randomized reports are sent.`),
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
    const name = SURVEY_ID.test(survey.id) ? h("a", { href: `/s/${survey.id}` }, title) : h("span", {}, title);
    return h("li", {}, name, h("span", { className: "detail" }, ` · ${questions} · ${reports} · id ${visible(survey.id)}`));
  });
  replace(body, h("ul", { className: "surveys" }, ...items));
}
