// `${NAME}` in a config value (a header, a stdio upstream's `env`, an OpenAPI import's fixed header)
// is read from the environment when the gateway starts, so a secret stays out of the file.
const ENV_REFERENCE = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

/** `${NAME}` → process.env.NAME in header values and a stdio upstream's `env`. */
export function expandEnv(value: string, environment: NodeJS.ProcessEnv = process.env): string {
  return value.replace(ENV_REFERENCE, (_, name: string) => environment[name] ?? '');
}

/** The NAMEs of the `${NAME}` references in a value. */
export function envReferences(value: string): string[] {
  return [...value.matchAll(ENV_REFERENCE)].map((match) => match[1] as string);
}
