/** What an `include:` entry selects an operation by. */
export interface SelectableOperation {
  operationId?: string;
  toolName: string;
  path: string;
  tags: readonly string[];
}

/**
 * `include:` entries as one test: an operationId (as written or as its tool name), `tag:<name>`,
 * or a path glob (starts with /: `*` is one segment or part of one, `**` any number of segments).
 * Without entries every operation is selected.
 */
export function operationSelector(include: readonly string[] | undefined): {
  selects(operation: SelectableOperation): boolean;
  /** The entries that selected nothing so far (a typo the operator should hear of). */
  unused(): string[];
} {
  const used = new Set<string>();
  const tests = (include ?? []).map((entry) => ({ entry, test: testOf(entry) }));
  return {
    selects(operation) {
      if (tests.length === 0) return true;
      let selected = false;
      for (const { entry, test } of tests)
        if (test(operation)) {
          used.add(entry);
          selected = true;
        }
      return selected;
    },
    unused: () => tests.map((t) => t.entry).filter((entry) => !used.has(entry)),
  };
}

function testOf(entry: string): (operation: SelectableOperation) => boolean {
  if (entry.startsWith('tag:')) {
    const tag = entry.slice(4);
    return (operation) => operation.tags.includes(tag);
  }
  if (entry.startsWith('/')) {
    const glob = globRegExp(entry);
    return (operation) => glob.test(operation.path);
  }
  return (operation) => operation.operationId === entry || operation.toolName === entry;
}

function globRegExp(glob: string): RegExp {
  let source = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i] as string;
    if (c === '*' && glob[i + 1] === '*') {
      source += '.*';
      i++;
    } else if (c === '*') source += '[^/]*';
    else source += c.replace(/[.+?^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${source}$`);
}
