// Wait on a condition with a deadline: the only way tests synchronise (never a bare sleep).
export async function waitFor<T>(
  probe: () => T | undefined | false | Promise<T | undefined | false>,
  options: { timeoutMs?: number; intervalMs?: number; what?: string } = {},
): Promise<T> {
  const deadline = Date.now() + (options.timeoutMs ?? 10_000);
  let lastError: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined && value !== false) return value;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) {
      const why = lastError === undefined ? '' : `: last error ${(lastError as Error).message}`;
      throw new Error(`timed out waiting for ${options.what ?? 'condition'}${why}`);
    }
    await new Promise((r) => setTimeout(r, options.intervalMs ?? 20));
  }
}
