/** The participant library's errors: a refused question and an invalid answer, as in the CLI. */

/** The survey or question is refused before anything is randomized or sent. */
export class RefusedError extends Error {
  override name = "RefusedError";
}

/** The participant's answer does not fit the question. */
export class InvalidAnswerError extends Error {
  override name = "InvalidAnswerError";
}

/**
 * A question's kind or mechanism is missing, mismatched or invalid (Python's
 * ``InvalidMechanismError``); the message starts with the field's path inside the question,
 * e.g. ``mechanism.grr.alpha: alpha must be in (0, 1], got 1.5``.
 */
export class InvalidMechanismError extends RefusedError {
  override name = "InvalidMechanismError";
}

/** A mechanism's parameter is invalid; the message starts with the parameter's name. */
export class ParameterError extends Error {
  override name = "ParameterError";
}

/**
 * A question's domain is outside the surveys' limits (the Python type's ``check``); the
 * message starts with the field's path, e.g. ``question.categorical.options: need 2..1024``.
 */
export class InvalidQuestionError extends RefusedError {
  override name = "InvalidQuestionError";
}
