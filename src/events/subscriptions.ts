/**
 * Wraps a PubSub iterator, passing on what `pick` makes of each payload and skipping those it answers
 * null for (checked one at a time, in order): a subscription's filter and its payload in one step.
 */
export function selectIterable<T, U>(source: AsyncIterable<unknown>, pick: (payload: T) => Promise<U | null> | U | null): AsyncIterable<U> {
  return {
    [Symbol.asyncIterator]() {
      const inner = source[Symbol.asyncIterator]();
      return {
        async next(): Promise<IteratorResult<U>> {
          for (;;) {
            const item = await inner.next();
            if (item.done) return { value: undefined, done: true };
            const picked = await pick(item.value as T);
            if (picked !== null) return { value: picked, done: false };
          }
        },
        async return(): Promise<IteratorResult<U>> {
          await inner.return?.();
          return { value: undefined, done: true };
        },
      };
    },
  };
}

/** Wraps a PubSub iterator, passing on only the payloads `keep` accepts (checked one at a time, in order). */
export function filterIterable<T>(source: AsyncIterable<unknown>, keep: (payload: T) => Promise<boolean> | boolean): AsyncIterable<T> {
  return selectIterable<T, T>(source, async (payload) => ((await keep(payload)) ? payload : null));
}
