/**
 * What `make` answers for an owner, made on first use and kept while the owner lives: state per
 * runtime (an instance's caches and queues), per configuration, or per request (its `Loaders`).
 */
export function onePer<Owner extends object, T>(make: (owner: Owner) => T): (owner: Owner) => T {
  const made = new WeakMap<Owner, T>();
  return (owner) => {
    if (!made.has(owner)) made.set(owner, make(owner));
    return made.get(owner)!;
  };
}
