// The analyzer shared by BM25 and the hash embedder. Pure. Unicode-aware: lowercase, then
// split on every character that is neither a letter nor a digit (any script), so "Café-au-lait"
// gives ["café", "au", "lait"] and CJK or Cyrillic words survive.
const SPLIT_RE = /[^\p{L}\p{N}]+/u;

export function tokenize(text: string, stopwords?: ReadonlySet<string>): string[] {
  const out: string[] = [];
  for (const token of text.toLowerCase().split(SPLIT_RE)) {
    if (token === '' || stopwords?.has(token)) continue;
    out.push(token);
  }
  return out;
}

/** Lucene's classic English stop set (the one its StandardAnalyzer used). */
export const ENGLISH_STOPWORDS: ReadonlySet<string> = new Set([
  'a', 'an', 'and', 'are', 'as', 'at', 'be', 'but', 'by', 'for', 'if', 'in', 'into', 'is', 'it', 'no', 'not', 'of',
  'on', 'or', 'such', 'that', 'the', 'their', 'then', 'there', 'these', 'they', 'this', 'to', 'was', 'will', 'with',
]);
