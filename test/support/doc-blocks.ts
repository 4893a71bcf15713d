/**
 * What the doc test reads out of Markdown: the fenced blocks marked runnable by the line
 * `<!-- doc-test -->` just above them, and the relative links with the anchors they name.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

export const DOC_TEST_MARKER = '<!-- doc-test -->';

export interface DocBlock {
  /** From the repository's root. */
  file: string;
  /** 1-based line of the block's first content line. */
  line: number;
  lang: string;
  text: string;
}

export interface DocMarkerProblem {
  file: string;
  line: number;
  problem: string;
}

/** README.md and every page under docs/, from the repository's root. */
export function docFiles(root: string): string[] {
  const walk = (dir: string): string[] =>
    readdirSync(join(root, dir)).flatMap((name) => {
      const path = join(dir, name);
      if (statSync(join(root, path)).isDirectory()) return walk(path);
      return path.endsWith('.md') ? [path] : [];
    });
  return ['README.md', ...walk('docs')].map((file) => relative('.', file));
}

const FENCE = /^(\s*)(`{3,}|~{3,})\s*([\w+-]*)/;

interface Fence {
  indent: string;
  fence: string;
  lang: string;
  open: number;
  lines: string[];
  marked: boolean;
}

/** Every fenced block of a page, and whether the line before it (blank lines aside) is the marker. */
export function fencedBlocks(file: string, text: string): (DocBlock & { marked: boolean })[] {
  const lines = text.split('\n');
  const blocks: (DocBlock & { marked: boolean })[] = [];
  let open: Fence | undefined;
  lines.forEach((line, index) => {
    if (open) {
      const close = FENCE.exec(line);
      if (close?.[2]?.startsWith(open.fence) && !close[3] && line.trim() === close[2]) {
        blocks.push({
          file,
          line: open.open + 2,
          lang: open.lang,
          text: open.lines.join('\n'),
          marked: open.marked,
        });
        open = undefined;
      } else {
        open.lines.push(line.startsWith(open.indent) ? line.slice(open.indent.length) : line.trimStart());
      }
      return;
    }
    const start = FENCE.exec(line);
    if (!start) return;
    const before = lines.slice(0, index).findLast((l) => l.trim() !== '');
    open = {
      indent: start[1] ?? '',
      fence: start[2] ?? '```',
      lang: (start[3] ?? '').toLowerCase(),
      open: index,
      lines: [],
      marked: before?.trim() === DOC_TEST_MARKER,
    };
  });
  return blocks;
}

/** A marker that is not followed by a fenced block, found by line. */
export function strayMarkers(file: string, text: string): DocMarkerProblem[] {
  const lines = text.split('\n');
  const problems: DocMarkerProblem[] = [];
  lines.forEach((line, index) => {
    if (line.trim() !== DOC_TEST_MARKER) return;
    const next = lines.slice(index + 1).find((l) => l.trim() !== '');
    if (!next || !FENCE.test(next))
      problems.push({
        file,
        line: index + 1,
        problem: `${DOC_TEST_MARKER} is not followed by a fenced block`,
      });
  });
  return problems;
}

/** The page with its fenced blocks blanked (lines kept, so that line numbers still hold). */
function withoutFences(text: string): string[] {
  let inFence: string | undefined;
  return text.split('\n').map((line) => {
    const fence = FENCE.exec(line)?.[2];
    if (inFence) {
      if (fence?.startsWith(inFence) && line.trim() === fence) inFence = undefined;
      return '';
    }
    if (fence) {
      inFence = fence;
      return '';
    }
    return line;
  });
}

/** The page without its fenced blocks and inline code, where a link is not a link. */
function prose(text: string): string[] {
  return withoutFences(text).map((line) => line.replace(/`[^`]*`/g, '``'));
}

export interface DocLink {
  file: string;
  line: number;
  target: string;
}

/** The links of a page that point into the repository (not to a web address). */
export function relativeLinks(file: string, text: string): DocLink[] {
  const links: DocLink[] = [];
  prose(text).forEach((line, index) => {
    const found = [
      ...[...line.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]),
      ...[...line.matchAll(/^\s*\[[^\]]+\]:\s*(\S+)/g)].map((m) => m[1]),
      ...[...line.matchAll(/<(?:a|img)\s[^>]*(?:href|src)="([^"]+)"/g)].map((m) => m[1]),
    ];
    for (const target of found)
      if (target && !/^[a-z][a-z0-9+.-]*:/i.test(target)) links.push({ file, line: index + 1, target });
  });
  return links;
}

/** The anchors GitHub gives a page's headings (github-slugger's rule), and its explicit `<a id>`s. */
export function anchorsOf(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of withoutFences(text)) {
    for (const m of line.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) if (m[1]) anchors.add(m[1]);
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!heading) continue;
    const words = (heading[1] ?? '')
      .replace(/`([^`]*)`/g, '$1')
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .replace(/<[^>]+>/g, '')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\p{M} _-]/gu, '')
      .replace(/ /g, '-');
    const count = seen.get(words) ?? 0;
    seen.set(words, count + 1);
    anchors.add(count === 0 ? words : `${words}-${count}`);
  }
  return anchors;
}

export function readPage(root: string, file: string): string {
  return readFileSync(join(root, file), 'utf8');
}
