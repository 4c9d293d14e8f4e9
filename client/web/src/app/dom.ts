/** Building the page from elements and text nodes only (server strings never become markup), and its alerts. */

import { InvalidAnswerError, RefusedError } from "../index";
import { LocalStateError } from "../store/db";
import { RemoteError, remoteMessage } from "./remote";

/** A child: an element, text (always a text node) or nothing. */
export type Child = Node | string | number | null | undefined | false;

/** Properties set on an element: attributes by name, ``className``, event handlers as ``on*``. */
export type Props = Record<string, string | number | boolean | null | undefined | ((event: Event) => void)>;

/**
 * An element with attributes and children. Strings become text nodes (``textContent``
 * semantics); ``on*`` functions become listeners; false/null/undefined attributes are left off.
 */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: Props = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(props)) {
    if (value === null || value === undefined || value === false) continue;
    if (typeof value === "function") {
      element.addEventListener(name.slice(2).toLowerCase(), value);
    } else if (name === "className") {
      element.className = String(value);
    } else {
      element.setAttribute(name, value === true ? "" : String(value));
    }
  }
  append(element, ...children);
  return element;
}

/** Append children: strings as text nodes. */
export function append(parent: Node, ...children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    parent.appendChild(
      typeof child === "string" || typeof child === "number" ? document.createTextNode(String(child)) : child,
    );
  }
}

/** Replace an element's children. */
export function replace(parent: Element, ...children: Child[]): void {
  parent.replaceChildren();
  append(parent, ...children);
}

/** Move keyboard focus to an element (made focusable by script if it is not) and show it. */
export function focus(element: HTMLElement | null): void {
  if (element === null) return;
  if (
    !element.hasAttribute("tabindex") &&
    !(element instanceof HTMLInputElement || element instanceof HTMLButtonElement)
  ) {
    element.setAttribute("tabindex", "-1");
  }
  element.focus();
  element.scrollIntoView({ block: "nearest" });
}

/** An element id for a question (ids are [A-Za-z0-9_.-], valid in ids). */
export function idFor(prefix: string, ...names: string[]): string {
  return [prefix, ...names].join("--");
}

/** The app's container, ``<main id="app">``. */
export function root(): HTMLElement {
  const main = document.getElementById("app");
  if (main === null) throw new Error("the page has no <main id=app>");
  return main;
}

/** Set the document's title (text only). */
export function setTitle(title: string): void {
  document.title = title ? `${title} · deniable` : "deniable: answer privately";
}

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
      message:
        `${error.message}; refusing to answer, nothing was sent. Reports are kept in this ` +
        "browser's storage before they are sent, so that they are never drawn twice",
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
  return {
    title: "Unexpected error",
    message: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
  };
}

/**
 * An alert box: heading, message, extra lines and buttons. It is announced (role=alert)
 * and takes focus when ``take`` is true, so keyboard and screen reader users land on it.
 */
export function alertBox(
  title: string,
  message: string,
  extra: Child[] = [],
  actions: readonly Action[] = [],
): HTMLElement {
  const heading = h("h2", { tabindex: "-1" }, title);
  return h(
    "div",
    { className: "alert", role: "alert" },
    heading,
    h("p", { className: "message" }, message),
    ...extra,
    actions.length > 0
      ? h(
          "div",
          { className: "actions" },
          ...actions.map((action) => h("button", { type: "button", onclick: action.run }, action.label)),
        )
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
