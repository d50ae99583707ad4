// A store whose close() does nothing, for apps that share one store the test closes itself;
// `overrides` replaces some of its members (a port standing in for another, say).
import type { Store } from '@adp/store';

export function sharedStoreView(store: Store, overrides: Partial<Record<keyof Store, unknown>> = {}): Store {
  return new Proxy(store, {
    get(target, property, receiver) {
      if (property === 'close') return () => Promise.resolve();
      if (Object.hasOwn(overrides, property)) return overrides[property as keyof Store];
      const value: unknown = Reflect.get(target, property, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
