/** Errors and progress shown to the participant: precise words, a heading, what to do next, focus. */

import { InvalidAnswerError, RefusedError } from "../core/errors";
import { LocalStateError } from "../store/db";
import { type Child, focus, h } from "./dom";
import { RemoteError, remoteMessage } from "./remote";

/** A button under a notice: its label and what it does. */
export interface Action {
  readonly label: string;
  readonly run: () => void;
}

/** The heading and one-line message of any error the page meets. */
export function describe(error: unknown): { title: string; message: string } {
  if (error instanceof RefusedError) return { title: "Refused", message: error.message };
  if (error instanceof InvalidAnswerError) return { title: "Invalid answer", message: error.message };
  if (error instanceof LocalStateError) {
    return {
      title: "This browser cannot keep your reports",
      message: `${error.message}; refusing to answer, nothing was sent. Reports are kept in this browser's storage before they are sent, so that they are never drawn twice`,
    };
  }
  if (error instanceof RemoteError) {
    const title = error.retryable
      ? "Cannot reach the aggregator"
      : ["FAILED_PRECONDITION", "ALREADY_EXISTS", "UNAUTHENTICATED", "PERMISSION_DENIED"].includes(error.code)
        ? "Refused by the aggregator"
        : error.code === "NOT_FOUND"
          ? "Not found"
          : "Aggregator error";
    return { title, message: remoteMessage(error) };
  }
  return { title: "Unexpected error", message: error instanceof Error ? `${error.name}: ${error.message}` : String(error) };
}

/**
 * An alert box: heading, message, extra lines and buttons. It is announced (role=alert)
 * and takes focus when ``take`` is true, so keyboard and screen reader users land on it.
 */
export function alertBox(title: string, message: string, extra: Child[] = [], actions: readonly Action[] = []): HTMLElement {
  const heading = h("h2", { tabindex: "-1" }, title);
  return h(
    "div",
    { className: "alert", role: "alert" },
    heading,
    h("p", { className: "message" }, message),
    ...extra,
    actions.length > 0
      ? h("div", { className: "actions" }, ...actions.map((action) => h("button", { type: "button", onclick: action.run }, action.label)))
      : null,
  );
}

/** The alert of an error, with its buttons. */
export function errorBox(error: unknown, actions: readonly Action[] = [], extra: Child[] = []): HTMLElement {
  const { title, message } = describe(error);
  return alertBox(title, message, extra, actions);
}

/** Focus the heading of an alert (or any region's first heading). */
export function focusAlert(box: HTMLElement): void {
  focus(box.querySelector<HTMLElement>("h2") ?? box);
}

/** A polite live region's text (progress: "Sending…"). */
export function status(region: HTMLElement, text: string): void {
  region.textContent = text;
}
