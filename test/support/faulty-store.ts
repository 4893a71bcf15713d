import type { ExecutionStore } from '../../src/store/types.js';

/** A real store with some methods replaced — to make a store fail at one precise step. */
export function withFaults(store: ExecutionStore, overrides: Partial<ExecutionStore>): ExecutionStore {
  return new Proxy(store, {
    get(target, property, receiver) {
      if (Object.hasOwn(overrides, property)) return overrides[property as keyof ExecutionStore];
      const value = Reflect.get(target, property, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
