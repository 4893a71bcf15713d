import { Worker, type WorkerOptions } from 'node:worker_threads';

/**
 * Starts the worker module `name` that sits beside the module at `besideUrl`
 * (its `import.meta.url`): the TypeScript source under tsx (tests,
 * development), the JavaScript from dist/ otherwise. Under tsx the worker
 * registers tsx itself: loader flags do not reach workers.
 */
export function startWorkerBeside(
  besideUrl: string,
  name: string,
  options: Omit<WorkerOptions, 'eval'> = {},
): Worker {
  const here = new URL(besideUrl);
  const typescript = here.pathname.endsWith('.ts');
  const entry = new URL(`./${name}.${typescript ? 'ts' : 'js'}`, here);
  if (!typescript) return new Worker(entry, options);
  return new Worker(
    `import('tsx/esm/api').then((tsx) => { tsx.register(); return import(${JSON.stringify(entry.href)}); });`,
    { ...options, eval: true },
  );
}
