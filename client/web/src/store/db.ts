/** The browser's IndexedDB: the memo, the ledger and the policy, changed in atomic transactions. */

import { fromBinary, toBinary } from "@bufbuild/protobuf";
import { ReportSchema } from "../gen/deniable/v1/aggregator_pb";
import type { Charge } from "../policy/budget";
import type { Kept } from "./plan";

/** The database's name; one per origin, as every IndexedDB is. */
export const DB_NAME = "deniable";
const VERSION = 1;
/** The kept reports, keyed by [aggregator, survey id, question id]. */
export const REPORTS = "reports";
/** The ledger's charges, oldest first. */
export const CHARGES = "charges";
/** The participant's settings, by name ("policy"). */
export const SETTINGS = "settings";

/** A kept report as stored: the report as base64 of its protobuf bytes (never a true answer). */
interface StoredKept extends Omit<Kept, "report"> {
  readonly report: string;
}

/** The browser cannot keep the participant's state: nothing is answered (fail closed). */
export class LocalStateError extends Error {
  override name = "LocalStateError";
}

function base64(bytes: Uint8Array): string {
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}

/** A kept report in its stored form. */
export function storedOf(kept: Kept): StoredKept {
  return { ...kept, report: base64(toBinary(ReportSchema, kept.report)) };
}

/** A stored kept report, decoded; throws LocalStateError for one that is not. */
export function keptOf(stored: StoredKept): Kept {
  try {
    const report = fromBinary(
      ReportSchema,
      Uint8Array.from(atob(stored.report), (c) => c.charCodeAt(0)),
    );
    return { ...stored, report };
  } catch (error) {
    throw new LocalStateError(`a kept report is unreadable (${String(error)}); nothing was reset`);
  }
}

/** A request's result as a promise (resolved inside the transaction, which stays active). */
export function request<T>(req: IDBRequest<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

let opened: Promise<IDBDatabase> | null = null;

/** The database, created at first use; later opens reuse the connection. */
export function openDb(): Promise<IDBDatabase> {
  opened ??= new Promise<IDBDatabase>((resolve, reject) => {
    if (typeof indexedDB === "undefined") {
      reject(new LocalStateError("this browser offers no IndexedDB storage"));
      return;
    }
    const req = indexedDB.open(DB_NAME, VERSION);
    req.onupgradeneeded = () => {
      const db = req.result;
      db.createObjectStore(REPORTS, { keyPath: ["aggregator", "surveyId", "questionId"] });
      db.createObjectStore(CHARGES, { autoIncrement: true });
      db.createObjectStore(SETTINGS, { keyPath: "name" });
    };
    req.onsuccess = () => {
      const db = req.result;
      db.onversionchange = () => {
        db.close(); // a newer page upgrades the database: let it, and open again when needed
        opened = null;
      };
      resolve(db);
    };
    req.onerror = () =>
      reject(new LocalStateError(`cannot open this browser's storage (${String(req.error)})`));
    req.onblocked = () =>
      reject(new LocalStateError("this browser's storage is held by an older tab of this page"));
  }).catch((error: unknown) => {
    opened = null;
    throw error instanceof LocalStateError ? error : new LocalStateError(String(error));
  });
  return opened;
}

/**
 * Run ``body`` in one transaction over ``stores`` and resolve once it has committed
 * durably; a throw aborts it, so nothing of it is written. Readwrite transactions over the
 * same stores run one at a time, across tabs too: each sees what the one before wrote.
 */
export async function transact<T>(
  stores: string[],
  mode: IDBTransactionMode,
  body: (tx: IDBTransaction) => Promise<T>,
): Promise<T> {
  const db = await openDb();
  const tx = db.transaction(stores, mode, { durability: "strict" });
  const done = new Promise<void>((resolve, reject) => {
    tx.oncomplete = () => resolve();
    tx.onabort = () => reject(tx.error ?? new DOMException("transaction aborted", "AbortError"));
  });
  let result: T;
  try {
    result = await body(tx);
  } catch (error) {
    try {
      tx.abort();
    } catch {
      // already finished
    }
    await done.catch(() => undefined);
    throw error;
  }
  await done;
  return result;
}

/** Every kept report (all surveys: the same question asked elsewhere gets its value). */
export async function readKept(tx: IDBTransaction): Promise<Kept[]> {
  const stored = await request(tx.objectStore(REPORTS).getAll() as IDBRequest<StoredKept[]>);
  return stored.map(keptOf);
}

/** Every charge, oldest first. */
export async function readCharges(tx: IDBTransaction): Promise<Charge[]> {
  return request(tx.objectStore(CHARGES).getAll() as IDBRequest<Charge[]>);
}

/** Add kept reports; one already kept for a question is never replaced (``add`` fails). */
export async function addKept(tx: IDBTransaction, entries: readonly Kept[]): Promise<void> {
  const store = tx.objectStore(REPORTS);
  await Promise.all(entries.map((kept) => request(store.add(storedOf(kept)))));
}

/** Append charges to the ledger. */
export async function addCharges(tx: IDBTransaction, charges: readonly Charge[]): Promise<void> {
  const store = tx.objectStore(CHARGES);
  await Promise.all(charges.map((charge) => request(store.add(charge))));
}

/** Mark kept reports as acknowledged at ``at`` (those not marked before). */
export async function markSent(
  tx: IDBTransaction,
  keys: readonly [string, string, string][],
  at: string,
): Promise<void> {
  const store = tx.objectStore(REPORTS);
  for (const key of keys) {
    const stored = await request(store.get(key) as IDBRequest<StoredKept | undefined>);
    if (stored !== undefined && stored.sentAt === null) await request(store.put({ ...stored, sentAt: at }));
  }
}
