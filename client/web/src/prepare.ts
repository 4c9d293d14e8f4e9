/** Which questions this device answers: Python's ``check_mechanism``, refusals worded as the CLI's. */

import { ScalarType } from "@bufbuild/protobuf";
import { InvalidMechanismError, InvalidQuestionError, RefusedError } from "./core/errors";
import { reprFloat, reprStr } from "./core/pytext";
import {
  type Mechanism as MechanismMessage,
  MechanismSchema,
  type Question,
} from "./gen/deniable/v1/aggregator_pb";
import { mechanismName, mechanismOf } from "./mechanisms/registry";
import type { Mechanism } from "./mechanisms/types";
import { questionTypeOf } from "./questions/registry";
import type { QuestionType } from "./questions/types";

/** A question this device accepts: its validated mechanism and its type. */
export interface PreparedQuestion {
  mechanism: Mechanism;
  type: QuestionType;
}

/** A mechanism's name and parameters in one line, e.g. ``grr (alpha 1.0)`` (``describe_mechanism``). */
export function describeMechanism(message: MechanismMessage | undefined): string {
  const kind = message?.kind;
  if (kind?.case === undefined) return "no mechanism";
  const field = MechanismSchema.fields.find((f) => f.localName === kind.case);
  const values = kind.value as unknown as Record<string, unknown>;
  if (kind.case === "registered") {
    const parameters = Object.entries(kind.value.parameters)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([name, value]) => `${name} ${reprFloat(value)}`);
    return `${kind.value.name} (${parameters.join(", ")})`;
  }
  const fields = field?.fieldKind === "message" ? [...field.message.fields] : [];
  fields.sort((a, b) => a.number - b.number);
  const shown = fields.flatMap((f) => {
    const value = values[f.localName];
    if (f.fieldKind !== "scalar" || value === undefined || value === "" || value === false) return [];
    if (value === 0n || (value === 0 && !Object.is(value, -0))) return [];
    const double = f.scalar === ScalarType.DOUBLE || f.scalar === ScalarType.FLOAT;
    return [`${f.name} ${double ? reprFloat(value as number) : String(value)}`];
  });
  return `${mechanismName(kind.case)} (${shown.join(", ")})`;
}

/** ``"mechanism"`` or ``"question"`` when it carries a kind unknown here (unknown fields, no known kind). */
function unknownKind(question: Question): string | null {
  if (question.mechanism?.kind.case === undefined && (question.mechanism?.$unknown?.length ?? 0) > 0) {
    return "mechanism";
  }
  if (question.kind.case === undefined && (question.$unknown?.length ?? 0) > 0) return "question";
  return null;
}

/**
 * The mechanism to perturb one question's answer with, and the question's type, if this
 * device accepts it (Python's ``check_mechanism``). ε is recomputed from the mechanism's
 * parameters; the server's ``privacy`` field is never read. Refused with ``RefusedError``:
 * a kind of question or mechanism this page does not know, a missing mechanism or one that
 * does not fit the question, invalid parameters, a domain outside the surveys' limits, and
 * mechanisms without privacy (ε = ∞, such as α = 1). The participant's own limits (maximum
 * ε, budget) are the policy's.
 */
export function prepareQuestion(question: Question): PreparedQuestion {
  const where = `question ${reprStr(question.id)}`;
  const unknown = unknownKind(question);
  if (unknown !== null) {
    throw new RefusedError(
      `${where}: its ${unknown} is of a kind this version of deniable does not know, so its privacy ` +
        "cannot be checked; refusing to answer, nothing was sent. A newer version of deniable may support it",
    );
  }
  let prepared: PreparedQuestion;
  try {
    const mechanism = mechanismOf(question);
    const type = questionTypeOf(question);
    type.check(question);
    prepared = { mechanism, type };
  } catch (error) {
    if (!(error instanceof InvalidMechanismError || error instanceof InvalidQuestionError)) throw error;
    throw new RefusedError(
      `${where}: ${error.message}; refusing to answer, nothing was sent. The survey's privacy ` +
        "setting is invalid: tell the survey's organizer",
    );
  }
  if (!Number.isFinite(prepared.mechanism.epsilon)) {
    throw new RefusedError(
      `${where}: ${describeMechanism(question.mechanism)} gives no privacy (epsilon = inf: the server ` +
        "would learn your true answer); refusing to answer, nothing was sent. Ask the survey's " +
        "organizer for a setting with privacy",
    );
  }
  return prepared;
}
