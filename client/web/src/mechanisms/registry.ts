/** The mechanism registry: one entry per wire oneof case, added by each mechanism's module. */

import { RefusedError } from "../core/errors";
import type { Question } from "../gen/deniable/v1/aggregator_pb";
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

/**
 * The question's mechanism, built from its own parameters (ε recomputed here, never read
 * from the server). Throws ``RefusedError`` for a missing or unknown mechanism.
 */
export function mechanismOf(question: Question): Mechanism {
  const wireCase = question.mechanism?.kind.case;
  if (wireCase === undefined) {
    throw new RefusedError(`question ${JSON.stringify(question.id)} has no mechanism`);
  }
  const kind = kinds.get(wireCase);
  if (kind === undefined) {
    throw new RefusedError(
      `question ${JSON.stringify(question.id)}: its mechanism is of a kind this page does not know`,
    );
  }
  return kind.fromQuestion(question);
}
