// Fast decoding of a key's trailing string part, for scans that read many keys of one prefix
// (see core/keys.ts: tag 0x02, UTF-8 body with 0x00 escaped as 0x00 0xFF, 0x00 terminator).
export function decodeTrailingString(key: Buffer, offset: number): string {
  const body = key.subarray(offset + 1, key.length - 1);
  if (!body.includes(0)) return body.toString('utf8');
  const out: number[] = [];
  for (let i = 0; i < body.length; i++) {
    out.push(body[i]!);
    if (body[i] === 0) i++;
  }
  return Buffer.from(out).toString('utf8');
}
