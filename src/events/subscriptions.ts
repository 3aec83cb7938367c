/** Wraps a PubSub iterator, passing on only the payloads `keep` accepts (checked one at a time, in order). */
export function filterIterable<T>(source: AsyncIterable<unknown>, keep: (payload: T) => Promise<boolean> | boolean): AsyncIterable<T> {
  return {
    [Symbol.asyncIterator]() {
      const inner = source[Symbol.asyncIterator]();
      return {
        async next(): Promise<IteratorResult<T>> {
          for (;;) {
            const item = await inner.next();
            if (item.done) return { value: undefined, done: true };
            if (await keep(item.value as T)) return { value: item.value as T, done: false };
          }
        },
        async return(): Promise<IteratorResult<T>> {
          await inner.return?.();
          return { value: undefined, done: true };
        },
      };
    },
  };
}
