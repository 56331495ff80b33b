// CouchDB addresses a design document as `/db/<db>/_design/<name>`, two path segments, where
// every other document is one (`/db/<db>/<id>`). Rewriting the path before routing lets
// the document and attachment routes serve design documents without a copy of each.

const DESIGN_PATH = /^\/(db|vdb)\/([^/?]+)\/_design\/([^/?]+)(\/[^?]*)?(\?.*)?$/;

/**
 * `/db/<db>/_design/<name>[/<attachment>][?query]` as `/db/<db>/_design%2F<name>[/…]`, which
 * the document routes read as the id `_design/<name>`. A path whose next segment starts with
 * `_` (`_view`, `_show`, `_update`, `_info`, …) is left for the route that refuses it. Pure.
 */
export function designDocUrl(url: string): string {
  const m = DESIGN_PATH.exec(url);
  if (m === null) return url;
  const [, service, db, name, rest = '', query = ''] = m;
  if (rest.startsWith('/_')) return url;
  return `/${service}/${db}/_design%2F${name}${rest}${query}`;
}
