// Where the Databases page reads documents: a database (`/db/<name>`) or a virtual database
// (`/vdb/<name>`, its shards merged by the node). Both answer `_all_docs`, a document's GET
// with every read option, its attachments and `_find` in the same shapes; they differ in the
// live feed's URL and in what a VDB lacks (`_explain`). Pure: the page builds every URL here.
export const STORE_KINDS = ['db', 'vdb'] as const;
export type StoreKind = (typeof STORE_KINDS)[number];

export interface DocStore {
  readonly kind: StoreKind;
  readonly name: string;
}

interface KindTraits {
  /** "Database orders", "Virtual database orders". */
  readonly title: string;
  /** The SSE feed, from `since` (a sequence, a VDB cursor, or `now`). */
  readonly streamQuery: (since: string) => string;
  /** POST `_explain` exists (a VDB's shards each plan on their own: there is no merged plan). */
  readonly explain: boolean;
}

// A Record: a new kind that says nothing about its traits does not compile.
const TRAITS: Record<StoreKind, KindTraits> = {
  db: { title: 'Database', streamQuery: (since) => `/_changes/stream?since=${encodeURIComponent(since)}`, explain: true },
  vdb: { title: 'Virtual database', streamQuery: (since) => `/_changes?feed=eventsource&since=${encodeURIComponent(since)}`, explain: false },
};

export function storeId(store: DocStore): string {
  return `${store.kind}:${store.name}`;
}

export function storeTitle(store: DocStore): string {
  return `${TRAITS[store.kind].title} ${store.name}`;
}

export function storeBase(store: DocStore): string {
  return `/${store.kind}/${encodeURIComponent(store.name)}`;
}

/** `_all_docs` from `startId` (the keyset page's first id; none: the first page), `rows` rows. */
export function allDocsPath(store: DocStore, rows: number, startId: string | undefined): string {
  const start = startId === undefined ? '' : `&startkey=${encodeURIComponent(JSON.stringify(startId))}`;
  return `${storeBase(store)}/_all_docs?limit=${rows}${start}`;
}

/** A document, with `query` (without its `?`) when given. */
export function docPath(store: DocStore, id: string, query = ''): string {
  return `${storeBase(store)}/${encodeURIComponent(id)}${query === '' ? '' : `?${query}`}`;
}

export function attachmentPath(store: DocStore, id: string, name: string): string {
  return `${docPath(store, id)}/_attachments/${encodeURIComponent(name)}`;
}

export function changesStreamPath(store: DocStore, since: string): string {
  return storeBase(store) + TRAITS[store.kind].streamQuery(since);
}

export function findPath(store: DocStore): string {
  return `${storeBase(store)}/_find`;
}

/** POST `_explain`, or undefined where the store has none. */
export function explainPath(store: DocStore): string | undefined {
  return TRAITS[store.kind].explain ? `${storeBase(store)}/_explain` : undefined;
}
