// Event listeners on the proxy paths run outside any caller's try/catch: an exception thrown in one reaches the
// event loop as an uncaught exception and ends the whole server. Every listener there is wrapped with this.

/**
 * Wrap a listener so that an exception inside it goes to `onFault` (which answers 502 or destroys the sockets)
 * instead of escaping. A fault handler that throws in turn is swallowed after running `last`, the step that
 * cannot fail (destroying the client's socket).
 */
export function guarded<A extends unknown[]>(
  listener: (...args: A) => void,
  onFault: (err: unknown) => void,
  last: () => void,
): (...args: A) => void {
  return (...args: A) => {
    try {
      listener(...args);
    } catch (err) {
      try {
        onFault(err);
      } catch {
        try {
          last();
        } catch {
          // Nothing is left to do: the exchange is already as torn down as it can be.
        }
      }
    }
  };
}
