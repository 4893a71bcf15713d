import { z } from 'zod';

/** A duration in the config: `"30s"`, `"15m"`, `"48h"`, or a number of milliseconds. */
export const DurationSchema = z.union([z.string(), z.number().nonnegative()]);
