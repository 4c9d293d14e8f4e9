/** One input per kind of question (radios, checkboxes, a number, a fieldset per part) and its answer text. */

import type { JointPart, Question } from "../gen/deniable/v1/aggregator_pb";
import { general, reprFloat } from "../text/numbers";
import { type Child, h, idFor } from "./dom";

/** The answer as ``deniable answer`` reads it, or why there is none yet. */
export type Read = { readonly text: string } | { readonly missing: string };

/** A question's inputs and how to read them. */
export interface Inputs {
  /** The inputs, to put inside the question's fieldset. */
  readonly nodes: Child[];
  /** The first input, for focus on an error. */
  readonly first: () => HTMLElement | null;
  /** The answer text (``yes``, an option's number, ``1,3``, a number, parts by commas). */
  readonly read: () => Read;
}

function radios(
  name: string,
  labels: readonly string[],
  values: readonly string[],
  describedBy: string,
): [HTMLElement[], () => string | null] {
  const inputs = labels.map((_, index) =>
    h("input", {
      type: "radio",
      name,
      value: values[index]!,
      id: idFor(name, String(index)),
      "aria-describedby": describedBy,
    }),
  );
  const nodes = labels.map((label, index) =>
    h("div", { className: "choice" }, inputs[index]!, h("label", { for: inputs[index]!.id }, label)),
  );
  const read = (): string | null => inputs.find((input) => input.checked)?.value ?? null;
  return [nodes, read];
}

function number(
  id: string,
  lo: number,
  hi: number,
  label: string,
  describedBy: string,
): [HTMLElement[], () => Read] {
  const input = h("input", {
    type: "number",
    id,
    name: id,
    step: "any",
    min: reprFloat(lo),
    max: reprFloat(hi),
    inputmode: "decimal",
    autocomplete: "off",
    "aria-describedby": describedBy,
  });
  const read = (): Read => {
    const range = `a number from ${reprFloat(lo)} to ${reprFloat(hi)}`;
    if (input.validity.badInput) return { missing: `that is not a number: enter ${range}` };
    const text = input.value.trim();
    return text === "" ? { missing: `enter ${range}` } : { text };
  };
  return [[h("label", { for: id, className: "number-label" }, label), input], read];
}

function yesNo(name: string, describedBy: string): [HTMLElement[], () => string | null] {
  return radios(name, ["Yes", "No"], ["yes", "no"], describedBy);
}

function options(
  name: string,
  labels: readonly string[],
  describedBy: string,
): [HTMLElement[], () => string | null] {
  return radios(
    name,
    labels,
    labels.map((_, index) => String(index + 1)),
    describedBy,
  );
}

/** A joint question's part: its own fieldset, answered like a question of its kind. */
function part(question: Question, item: JointPart, describedBy: string): [HTMLElement, () => Read] {
  const name = idFor("answer", question.id, item.id);
  let nodes: HTMLElement[];
  let read: () => Read;
  const choose =
    (pick: () => string | null, what: string): (() => Read) =>
    () => {
      const value = pick();
      return value === null ? { missing: `${item.id}: ${what}` } : { text: value };
    };
  switch (item.kind.case) {
    case "binary": {
      const [inputs, pick] = yesNo(name, describedBy);
      [nodes, read] = [inputs, choose(pick, "choose yes or no")];
      break;
    }
    case "categorical": {
      const [inputs, pick] = options(name, item.kind.value.options, describedBy);
      [nodes, read] = [inputs, choose(pick, "choose one of the options")];
      break;
    }
    default: {
      const edges = item.kind.case === "numeric" ? item.kind.value.edges : [0, 0];
      const [lo, hi] = [edges[0]!, edges[edges.length - 1]!];
      const bins = edges
        .slice(1)
        .map((top, i) => `[${general(edges[i]!)}, ${general(top)}${i === edges.length - 2 ? "]" : ")"}`);
      const hint = h(
        "p",
        { className: "hint", id: idFor("bins", question.id, item.id) },
        `Sent as the bin it falls in: ${bins.join(", ")}.`,
      );
      const [inputs, numberRead] = number(
        name,
        lo,
        hi,
        `A number from ${reprFloat(lo)} to ${reprFloat(hi)}`,
        `${describedBy} ${hint.id}`,
      );
      nodes = [...inputs, hint];
      read = () => {
        const value = numberRead();
        return "missing" in value ? { missing: `${item.id}: ${value.missing}` } : value;
      };
    }
  }
  const fieldset = h("fieldset", { className: "part" }, h("legend", {}, item.text), ...nodes);
  return [fieldset, read];
}

/** The inputs of one question, by its kind. */
export function inputsFor(question: Question, describedBy: string): Inputs {
  const name = idFor("answer", question.id);
  let nodes: HTMLElement[];
  let read: () => Read;
  const kind = question.kind;
  switch (kind.case) {
    case "binary": {
      const [inputs, pick] = yesNo(name, describedBy);
      nodes = inputs;
      read = () => {
        const value = pick();
        return value === null ? { missing: "choose yes or no" } : { text: value };
      };
      break;
    }
    case "categorical": {
      const [inputs, pick] = options(name, kind.value.options, describedBy);
      nodes = inputs;
      read = () => {
        const value = pick();
        return value === null ? { missing: "choose one of the options" } : { text: value };
      };
      break;
    }
    case "multiSelect": {
      const boxes = kind.value.items.map((_, index) =>
        h("input", {
          type: "checkbox",
          name,
          value: String(index + 1),
          id: idFor(name, String(index)),
          "aria-describedby": describedBy,
        }),
      );
      nodes = [
        h("p", { className: "hint" }, "Choose any, or none."),
        ...kind.value.items.map((item, index) =>
          h("div", { className: "choice" }, boxes[index]!, h("label", { for: boxes[index]!.id }, item)),
        ),
      ];
      read = () => {
        const chosen = boxes.filter((box) => box.checked).map((box) => box.value);
        return { text: chosen.length === 0 ? "none" : chosen.join(",") };
      };
      break;
    }
    case "numeric": {
      const { min, max } = kind.value;
      [nodes, read] = number(
        name,
        min,
        max,
        `Your answer, a number from ${reprFloat(min)} to ${reprFloat(max)}`,
        describedBy,
      );
      break;
    }
    case "joint": {
      const parts = kind.value.parts.map((item) => part(question, item, describedBy));
      nodes = [
        h("p", { className: "hint" }, `${parts.length} parts, answered together in ONE randomized report.`),
        ...parts.map(([fieldset]) => fieldset),
      ];
      read = () => {
        const pieces = parts.map(([, readPart]) => readPart());
        const missing = pieces.filter((piece): piece is { missing: string } => "missing" in piece);
        if (missing.length > 0)
          return { missing: `answer every part (${missing.map((m) => m.missing).join("; ")})` };
        return { text: pieces.map((piece) => (piece as { text: string }).text).join(",") };
      };
      break;
    }
    default:
      nodes = [];
      read = () => ({ missing: "this page cannot ask this kind of question" });
  }
  const holder = nodes;
  return {
    nodes: holder,
    first: () =>
      holder
        .map((node) => (node instanceof HTMLInputElement ? node : node.querySelector("input")))
        .find((x) => x !== null) ?? null,
    read,
  };
}
