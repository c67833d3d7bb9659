// Conversations in the browser's IndexedDB (one store, keyed by id), and their export to
// and import from a JSON file.
import { type Conversation, normalize } from './tree.js';

const DB = 'llama-ts-chat';
const STORE = 'conversations';
/** The export file's `format`, checked on import. */
export const EXPORT_FORMAT = 'llama-ts-chat';
/** Imported files above this size are refused before they are read. */
export const MAX_IMPORT_BYTES = 64 * 1024 * 1024;

function request<T>(r: IDBRequest<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    r.onsuccess = () => resolve(r.result);
    r.onerror = () => reject(r.error);
  });
}

export class Store {
  private constructor(private db: IDBDatabase) {}

  static async open(): Promise<Store> {
    const req = indexedDB.open(DB, 1);
    req.onupgradeneeded = () => req.result.createObjectStore(STORE, { keyPath: 'id' });
    return new Store(await request(req));
  }

  private store(mode: IDBTransactionMode): IDBObjectStore {
    return this.db.transaction(STORE, mode).objectStore(STORE);
  }

  /** Every conversation, the latest first (those that do not read back are left out). */
  async list(): Promise<Conversation[]> {
    const all = (await request(this.store('readonly').getAll())) as unknown[];
    const out: Conversation[] = [];
    for (const raw of all) {
      try {
        out.push(normalize(raw, 'IndexedDB'));
      } catch (e) {
        console.warn((e as Error).message);
      }
    }
    return out.sort((a, b) => b.updated - a.updated);
  }

  async put(c: Conversation): Promise<void> {
    await request(this.store('readwrite').put(c));
  }

  async delete(id: string): Promise<void> {
    await request(this.store('readwrite').delete(id));
  }
}

/** The export file's text: every conversation, as kept. */
export function exportJson(conversations: Conversation[]): string {
  return JSON.stringify({ format: EXPORT_FORMAT, version: 1, conversations }, null, 1);
}

/** The conversations of an export file (or a single conversation); throws naming what is wrong. */
export function parseImport(text: string, name: string): Conversation[] {
  let j: unknown;
  try {
    j = JSON.parse(text);
  } catch (e) {
    throw new Error(`${name} is not JSON: ${(e as Error).message}`);
  }
  const o = j as { format?: unknown; conversations?: unknown };
  if (o && typeof o === 'object' && Array.isArray(o.conversations)) {
    if (o.format !== EXPORT_FORMAT)
      throw new Error(`${name}: format ${JSON.stringify(o.format)} is not ${EXPORT_FORMAT}`);
    return o.conversations.map((c, i) => normalize(c, `${name}: conversation ${i}`));
  }
  return [normalize(j, name)];
}
