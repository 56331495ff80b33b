// One total order over JSON values (CouchDB collation, with "missing" first):
//   missing < null < false < true < numbers < strings < arrays < objects
// Numbers compare numerically (JavaScript has one number type: 1 and 1.0 are equal);
// strings by Unicode code point; arrays element-wise then by length; objects by their
// sorted [key, value] pairs.
import { compareStrings } from '../../core/keys.js';
import type { Json } from './ast.js';

export { compareStrings };

export const MISSING = Symbol('missing');
export type MaybeJson = Json | typeof MISSING;

export function typeRank(v: MaybeJson): number {
  if (v === MISSING) return 0;
  if (v === null) return 1;
  if (v === false) return 2;
  if (v === true) return 3;
  if (typeof v === 'number') return 4;
  if (typeof v === 'string') return 5;
  if (Array.isArray(v)) return 6;
  return 7;
}

export function collate(a: MaybeJson, b: MaybeJson): number {
  const ra = typeRank(a);
  const rb = typeRank(b);
  if (ra !== rb) return ra < rb ? -1 : 1;
  switch (ra) {
    case 4:
      return (a as number) < (b as number) ? -1 : (a as number) > (b as number) ? 1 : 0;
    case 5:
      return compareStrings(a as string, b as string);
    case 6: {
      const x = a as Json[];
      const y = b as Json[];
      for (let i = 0; i < Math.min(x.length, y.length); i++) {
        const c = collate(x[i]!, y[i]!);
        if (c !== 0) return c;
      }
      return x.length === y.length ? 0 : x.length < y.length ? -1 : 1;
    }
    case 7: {
      const x = Object.keys(a as object).sort(compareStrings);
      const y = Object.keys(b as object).sort(compareStrings);
      for (let i = 0; i < Math.min(x.length, y.length); i++) {
        const k = compareStrings(x[i]!, y[i]!);
        if (k !== 0) return k;
        const c = collate((a as Record<string, Json>)[x[i]!]!, (b as Record<string, Json>)[y[i]!]!);
        if (c !== 0) return c;
      }
      return x.length === y.length ? 0 : x.length < y.length ? -1 : 1;
    }
    default:
      return 0; // missing, null, false, true: the rank is the value
  }
}

export function jsonEqual(a: MaybeJson, b: MaybeJson): boolean {
  return collate(a, b) === 0;
}
