import { existsSync, readFileSync } from 'node:fs';

// src/version.ts runs from src/ (tsx) or dist/src/ (built): take the nearest package.json.
const candidates = ['../package.json', '../../package.json'].map((p) => new URL(p, import.meta.url));
const file = candidates.find((url) => existsSync(url));
if (file === undefined) throw new Error('package.json not found next to the program');
export const VERSION: string = (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version;
