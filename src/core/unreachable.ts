// Exhaustive switches end here: a variant added to a tagged union but not handled becomes a
// compile error at every switch that calls this with it.
export function unreachable(value: never): never {
  throw new Error(`unhandled variant: ${JSON.stringify(value)}`);
}
