/** The aggregator over the Connect protocol (the page's origin unless it names one), with the CLI's retries and errors. */

import { Code, ConnectError, createClient, type Client } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import {
  Aggregator,
  type Report,
  type SubmitReportsResponse,
  type Survey,
} from "../gen/deniable/v1/aggregator_pb";
import { visible } from "../text/unsafe";

/** Attempts of a call the aggregator could not take (UNAVAILABLE, DEADLINE_EXCEEDED, network), as the CLI. */
export const ATTEMPTS = 4;
const TIMEOUT_MS = 15_000;

/** An aggregator's status, named as gRPC names it ("UNAVAILABLE"...), with its details. */
export class RemoteError extends Error {
  override name = "RemoteError";

  constructor(
    readonly code: string,
    readonly details: string,
    readonly retryable: boolean,
    readonly attempts: number,
  ) {
    super(`${code}: ${details}`);
  }
}

/**
 * The aggregator's origin: the page's own, unless the page names another in
 * ``<meta name="deniable-aggregator" content="https://host:port">`` (a page served from a
 * separate origin, or installed locally, calls its aggregator across origins). It is the
 * aggregator's name in the memo and the ledger. A meta tag that is not an http(s) origin
 * is refused: the page stops rather than send anywhere else.
 */
export function aggregatorName(): string {
  const named = document.querySelector<HTMLMetaElement>('meta[name="deniable-aggregator"]');
  if (named === null) return location.origin;
  let url: URL;
  try {
    url = new URL(named.content);
  } catch {
    throw new Error(`the page names an aggregator that is not a URL: ${JSON.stringify(named.content)}`);
  }
  if ((url.protocol !== "https:" && url.protocol !== "http:") || url.origin !== named.content.replace(/\/$/, "")) {
    throw new Error(`the page's aggregator must be an http(s) origin, got ${JSON.stringify(named.content)}`);
  }
  return url.origin;
}

let client: Client<typeof Aggregator> | null = null;

function aggregator(): Client<typeof Aggregator> {
  client ??= createClient(
    Aggregator,
    createConnectTransport({ baseUrl: aggregatorName(), useBinaryFormat: true }),
  );
  return client;
}

function codeName(code: Code): string {
  return (Code[code] ?? "UNKNOWN").replace(/([a-z])([A-Z])/g, "$1_$2").toUpperCase();
}

function remoteOf(error: unknown, attempts: number): RemoteError {
  const connect = ConnectError.from(error);
  // fetch rejects with a TypeError when the network fails: the aggregator was not reached.
  const network = connect.code === Code.Unknown && connect.cause instanceof TypeError;
  const code = network ? "UNAVAILABLE" : codeName(connect.code);
  const details = network ? `network error: ${connect.rawMessage}` : connect.rawMessage;
  const retryable = code === "UNAVAILABLE" || code === "DEADLINE_EXCEEDED";
  return new RemoteError(code, details, retryable, attempts);
}

function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Call, retrying what the aggregator could not take (same request: reports keep their ids). */
async function withRetries<T>(call: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (error) {
      const remote = remoteOf(error, attempt);
      if (!remote.retryable || attempt >= ATTEMPTS) throw remote;
      await pause(250 * 2 ** (attempt - 1));
    }
  }
}

/** The open surveys (``ListSurveys``). */
export async function listSurveys(): Promise<Survey[]> {
  const response = await withRetries(() => aggregator().listSurveys({}, { timeoutMs: TIMEOUT_MS }));
  return response.surveys;
}

/** One survey (``GetSurvey``). */
export function getSurvey(surveyId: string): Promise<Survey> {
  return withRetries(() => aggregator().getSurvey({ surveyId }, { timeoutMs: TIMEOUT_MS }));
}

/** Submit reports in one batch (``SubmitReports``); a resend of stored ones is acknowledged. */
export function submitReports(reports: Report[]): Promise<SubmitReportsResponse> {
  return withRetries(() => aggregator().submitReports({ reports }, { timeoutMs: TIMEOUT_MS }));
}

/** The participant's one-line message for an aggregator's error (Python's ``from_remote``). */
export function remoteMessage(error: RemoteError): string {
  const details = visible(error.details);
  if (error.retryable) {
    const after = `after ${error.attempts} attempt(s) (${error.code}: ${details})`;
    return `cannot reach the aggregator at ${aggregatorName()} ${after}`;
  }
  if (error.code === "NOT_FOUND") return details;
  if (
    ["FAILED_PRECONDITION", "ALREADY_EXISTS", "UNAUTHENTICATED", "PERMISSION_DENIED"].includes(error.code)
  ) {
    return `refused by the aggregator: ${details}`;
  }
  return `aggregator error ${error.code}: ${details}`;
}
