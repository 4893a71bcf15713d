/** The demo's stdio upstream (the charge_card server) beside this module: TypeScript under tsx (tests), JavaScript from dist/. */
export function upstreamCommand(): { command: string; args: string[] } {
  const here = new URL(import.meta.url);
  const ts = here.pathname.endsWith('.ts');
  const entry = new URL(`./charge-card-upstream.${ts ? 'ts' : 'js'}`, here).pathname;
  return { command: process.execPath, args: ts ? ['--import', 'tsx', entry] : [entry] };
}
