/** The app's start: client-side routes for / and /s/ID (history API), links, the settings button. */

import { focus, h, replace, root, setTitle } from "./dom";
import { listPage } from "./list";
import { onPolicyChange, openSettings } from "./settings";
import { surveyPage } from "./survey";

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
    replace(main, heading, h("p", {}, "This address names no page: survey addresses look like /s/SURVEY_ID."),
      h("p", {}, h("a", { href: "/" }, "See the open surveys")));
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
  if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
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
  document.addEventListener("click", onClick);
  window.addEventListener("popstate", () => route(true));
  document.getElementById("settings-button")?.addEventListener("click", () => void openSettings());
  route(false);
}
