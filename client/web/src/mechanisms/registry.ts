/** The mechanism registry: one entry per wire oneof case, added by each mechanism's module. */

import type { DescField } from "@bufbuild/protobuf";
import { InvalidMechanismError, ParameterError, RefusedError } from "../core/errors";
import { reprStr } from "../core/pytext";
import { MechanismSchema, type Question, QuestionSchema } from "../gen/deniable/v1/aggregator_pb";
import type { Mechanism, MechanismKind } from "./types";

const kinds = new Map<string, MechanismKind>();

/** Add a mechanism kind (each mechanism module calls this once). */
export function registerMechanism(kind: MechanismKind): MechanismKind {
  if (kinds.has(kind.wireCase)) throw new Error(`mechanism ${kind.wireCase} registered twice`);
  kinds.set(kind.wireCase, kind);
  return kind;
}

/** The wire cases this page knows. */
export function knownMechanisms(): string[] {
  return [...kinds.keys()];
}

/** A mechanism's name as Python spells it: its field in ``Mechanism.kind`` ("item_rr"). */
export function mechanismName(wireCase: string): string {
  return mechanismField(wireCase)?.name ?? wireCase;
}

/** The field of ``Mechanism.kind`` for a oneof case. */
function mechanismField(wireCase: string): DescField | undefined {
  return MechanismSchema.fields.find((field) => field.localName === wireCase);
}

/** A question kind's name as Python spells it: its field in ``Question.kind`` ("multi_select"). */
export function questionKindName(kindCase: string): string {
  return QuestionSchema.fields.find((field) => field.localName === kindCase)?.name ?? kindCase;
}

/** "grr or oue": the mechanisms this page has for a question kind, in registration order. */
function expected(kindCase: string): string {
  const names = [...kinds.values()]
    .filter((kind) => (kind.questionKinds as readonly string[]).includes(kindCase))
    .map((kind) => mechanismName(kind.wireCase));
  return names.join(" or ") || "no mechanism";
}

/** Where a parameter error points: ``mechanism.grr.alpha`` when it names a field, else ``mechanism.grr``. */
function parameterPath(wireCase: string, message: string): string {
  const field = mechanismField(wireCase);
  const where = `mechanism.${mechanismName(wireCase)}`;
  const named = message.split(" ", 1)[0];
  const fields = field?.fieldKind === "message" ? field.message.fields : [];
  return fields.some((f) => f.name === named) ? `${where}.${named}` : where;
}

/**
 * The question's validated mechanism, from its own parameters alone (ε recomputed here,
 * never read from the server), as Python's ``mechanism_of``. Throws
 * ``InvalidMechanismError`` (its message starting with the field's path) for a missing
 * kind or mechanism, one that does not fit the question, or an invalid parameter; and
 * ``RefusedError`` for a mechanism of a kind this page does not know.
 */
export function mechanismOf(question: Question): Mechanism {
  const kindCase = question.kind.case;
  if (kindCase === undefined) {
    throw new InvalidMechanismError("kind: missing (binary, categorical or numeric)");
  }
  const kindName = questionKindName(kindCase);
  const message = question.mechanism?.kind;
  if (message?.case === undefined) {
    throw new InvalidMechanismError(
      `mechanism: missing (a ${kindName} question takes ${expected(kindCase)})`,
    );
  }
  if (message.case === "registered") {
    const name = message.value.name;
    if (MechanismSchema.fields.some((field) => field.name === name)) {
      throw new InvalidMechanismError(
        `mechanism.registered.name: ${reprStr(name)} is built in; send it as mechanism.${name}`,
      );
    }
    throw new InvalidMechanismError(
      `mechanism.registered.name: unknown mechanism ${reprStr([...name].slice(0, 40).join(""))} ` +
        `(a ${kindName} question takes ${expected(kindCase)})`,
    );
  }
  const kind = kinds.get(message.case);
  if (kind === undefined) {
    throw new RefusedError(
      `question ${reprStr(question.id)}: its mechanism is of a kind this version of deniable does not ` +
        "know, so its privacy cannot be checked; refusing to answer, nothing was sent. A newer version " +
        "of deniable may support it",
    );
  }
  const name = mechanismName(message.case);
  if (!(kind.questionKinds as readonly string[]).includes(kindCase)) {
    throw new InvalidMechanismError(
      `mechanism: ${name} does not apply to a ${kindName} question (expected ${expected(kindCase)})`,
    );
  }
  try {
    return kind.fromQuestion(question);
  } catch (error) {
    if (!(error instanceof ParameterError)) throw error;
    throw new InvalidMechanismError(`${parameterPath(message.case, error.message)}: ${error.message}`);
  }
}
