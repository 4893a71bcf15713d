import { describeStoreContract } from '../store.contract.js';
import { MemoryStore } from './memory-store.js';

describeStoreContract('memory, real clock', async () => {
  const store = new MemoryStore();
  return { store, cleanup: () => store.close() };
});

describeStoreContract('memory, test clock', async () => {
  let now = Date.now();
  const store = new MemoryStore({ clock: () => now });
  return {
    store,
    clock: {
      advance(ms: number) {
        now += ms;
      },
    },
    cleanup: () => store.close(),
  };
});
