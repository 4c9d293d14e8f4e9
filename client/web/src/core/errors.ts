/** The participant library's errors: a refused question and an invalid answer, as in the CLI. */

/** The survey or question is refused before anything is randomized or sent. */
export class RefusedError extends Error {
  override name = "RefusedError";
}

/** The participant's answer does not fit the question. */
export class InvalidAnswerError extends Error {
  override name = "InvalidAnswerError";
}
