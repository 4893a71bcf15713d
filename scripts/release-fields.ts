/**
 * Run by `npm publish` (prepublishOnly): a published package must say where the
 * project lives — `repository`, `homepage`, `bugs` — and this checkout knows no
 * public URL for it yet, so none is made up (docs/releasing.md). Until whoever
 * publishes first fills them in, publishing stops here, naming what is missing.
 * `npx tsx scripts/release-fields.ts [package.json]`: exit 0 when all are there.
 */
import { readFileSync } from 'node:fs';

const RELEASE_FIELDS = ['repository', 'homepage', 'bugs'] as const;

/** The fields of RELEASE_FIELDS that `manifest` leaves out or empty (a URL string, or an object with `url`). */
function missingReleaseFields(manifest: Record<string, unknown>): string[] {
  return RELEASE_FIELDS.filter((field) => {
    const value = manifest[field];
    const url = typeof value === 'object' && value !== null ? (value as { url?: unknown }).url : value;
    return typeof url !== 'string' || url.trim() === '';
  });
}

const path = process.argv[2] ?? new URL('../package.json', import.meta.url);
const missing = missingReleaseFields(JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>);
if (missing.length > 0) {
  process.stderr.write(
    `package.json has no ${missing.join(', ')}: fill in the project's public URLs before publishing (docs/releasing.md)\n`,
  );
  process.exit(1);
}
