/** Building the page from elements and text nodes only: server strings never become markup. */

/** A child: an element, text (always a text node) or nothing. */
export type Child = Node | string | number | null | undefined | false;

/** Properties set on an element: attributes by name, ``className``, event handlers as ``on*``. */
export type Props = Record<string, string | number | boolean | null | undefined | ((event: Event) => void)>;

/**
 * An element with attributes and children. Strings become text nodes (``textContent``
 * semantics); ``on*`` functions become listeners; false/null/undefined attributes are left off.
 */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, props: Props = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
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
    parent.appendChild(typeof child === "string" || typeof child === "number" ? document.createTextNode(String(child)) : child);
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
  if (!element.hasAttribute("tabindex") && !(element instanceof HTMLInputElement || element instanceof HTMLButtonElement)) {
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
