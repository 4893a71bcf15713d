/**
 * In every test file (vitest's setupFiles): the directories `freshDir` made are removed when the
 * file's tests are done, whether or not the file says so itself — a suite run must not leave
 * hundreds of directories in the system's temp dir.
 */
import { afterAll } from 'vitest';
import { removeTemporaries } from './temp-dirs.js';

afterAll(removeTemporaries);
