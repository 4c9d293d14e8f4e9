/** The participant library's face: what the page needs to check questions and randomize answers. */
import "./mechanisms/all";
import "./questions/all";

export { buildReport, newReportId } from "./answer";
export {
  InvalidAnswerError,
  InvalidMechanismError,
  InvalidQuestionError,
  ParameterError,
  RefusedError,
} from "./core/errors";
export { Fraction } from "./core/fraction";
export { mechanismName, mechanismOf } from "./mechanisms/registry";
export type { Mechanism, ReportValue, Truth } from "./mechanisms/types";
export { describeMechanism, prepareQuestion, type PreparedQuestion } from "./prepare";
export { expAtLeast, tightestEpsilon } from "./privacy/epsilon";
export { questionTypeOf } from "./questions/registry";
export type { QuestionType } from "./questions/types";
export { osSource, type ByteSource } from "./sampling/source";
