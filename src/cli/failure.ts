// The CLI's one error type. It is not FirkinError: the CLI is a client, its codes are the
// server's (an open set, whatever the node answered) plus its own (`usage`, `unreachable`,
// `bad_response`), and it maps them to exit statuses, never to HTTP.
export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;

export class CliFailure extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly exitCode: typeof EXIT_FAILED | typeof EXIT_USAGE = EXIT_FAILED,
    /** The request never reached the node (no connection was made): safe to ask another. */
    readonly notSent = false,
  ) {
    super(message);
    this.name = 'CliFailure';
  }
}

/** The one line an error prints: `firkin: <code>: <message>`, newlines and all folded into it. */
export function failureLine(code: string, message: string): string {
  const flat = (s: string) => s.replace(/[\u0000-\u001f\u007f-\u009f]+/g, ' ').trim();
  return `firkin: ${flat(code)}: ${flat(message)}`;
}
