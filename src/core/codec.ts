// Value codecs, one of each. CBOR (cbor-x) for records, Raft values and HTTP bodies; a checked
// JSON codec for records kept in the `system` column family.
//
// CBOR options are part of the on-disk format: every record written so far was encoded with
// exactly these, so they must not change. `useRecords: false` keeps the output plain RFC 8949
// maps that any CBOR client can read; `mapsAsObjects` decodes maps to plain objects.
import { Decoder, Encoder } from 'cbor-x';

const cborOptions = { useRecords: false, mapsAsObjects: true } as const;
const cborEncoder = new Encoder(cborOptions);
const cborDecoder = new Decoder(cborOptions);

export function encodeCbor(value: unknown): Buffer {
  return cborEncoder.encode(value);
}

/** Unchecked: callers that read their own records check the shape they need. */
export function decodeCbor(bytes: Uint8Array): unknown {
  return cborDecoder.decode(bytes);
}
