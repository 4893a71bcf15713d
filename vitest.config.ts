import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    // Compiles dist/ once: process-level tests start the CLI from it, as `npx idem` does.
    globalSetup: ['test/global-setup.ts'],
    // In each file: the temporary directories its tests made (test/support/temp-dirs.ts) removed at its end.
    setupFiles: ['test/support/remove-temporaries.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Two cores: more workers only add contention to the concurrency tests.
    maxWorkers: 2,
  },
});
