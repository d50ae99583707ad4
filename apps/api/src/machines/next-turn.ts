// Long pure computations on the request thread (a baseline's shape join) run in slices and await
// this between them, so the event loop serves other requests meanwhile.

/** Resolves after the event loop has had a turn (pending I/O callbacks run first). */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
