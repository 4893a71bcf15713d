/**
 * docs/reference/errors.md: every code, reason and error class of src/errors.ts, with the words
 * there (its doc comments), and what a model is told to do next (the `advice` of each answer,
 * src/executions/answers.ts).
 */
import { readFileSync } from 'node:fs';
import ts from 'typescript';
import {
  IDEM_CODES,
  type IdemCode,
  INVALID_INPUT_REASONS,
  MissingPackageError,
  OPERATOR_CODES,
  OPTIONAL_PACKAGES,
  type OptionalPackage,
  STORE_REFUSAL_REASONS,
} from '../../src/errors.js';
import { type IdemAnswerInfo, idemAnswer } from '../../src/executions/answers.js';
import { code, generatedHeading, table } from './markdown.js';

const ERRORS_TS = new URL('../../src/errors.ts', import.meta.url);

interface Documented {
  text: string;
  tags: Record<string, string>;
}

/** The doc comment of a node: its text, and its `@tag`s by name. */
function docOf(node: ts.Node, source: ts.SourceFile): Documented {
  const ranges = ts.getLeadingCommentRanges(source.text, node.getFullStart()) ?? [];
  const last = ranges.filter((r) => source.text.startsWith('/**', r.pos)).at(-1);
  if (!last) return { text: '', tags: {} };
  const body = source.text
    .slice(last.pos + 3, last.end - 2)
    .split('\n')
    .map((line) => line.replace(/^\s*\*\s?/, ''))
    .join('\n');
  const [text = '', ...tagged] = body.split(/^@/m);
  const tags = Object.fromEntries(
    tagged.map((t) => {
      const [, name = '', value = ''] = /^(\w+)\s+([\s\S]*)$/.exec(t) ?? [];
      return [name, oneLine(value)];
    }),
  );
  return { text: oneLine(text), tags };
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/** What src/errors.ts says of each name it declares: the members of its constants, and its classes. */
function readErrorsModule() {
  const source = ts.createSourceFile(
    'errors.ts',
    readFileSync(ERRORS_TS, 'utf8'),
    ts.ScriptTarget.ES2022,
    true,
  );
  const members = new Map<string, Map<string, Documented>>();
  const classes: { name: string; base: string | undefined; code: string | undefined; doc: Documented }[] = [];
  const visit = (node: ts.Node) => {
    if (ts.isVariableDeclaration(node) && ts.isIdentifier(node.name) && node.initializer) {
      let init: ts.Expression = node.initializer;
      while (ts.isAsExpression(init)) init = init.expression;
      const found = new Map<string, Documented>();
      if (ts.isObjectLiteralExpression(init))
        for (const p of init.properties)
          if (ts.isPropertyAssignment(p))
            found.set(p.name.getText(source).replace(/'/g, ''), docOf(p, source));
      if (ts.isArrayLiteralExpression(init))
        for (const e of init.elements) if (ts.isStringLiteral(e)) found.set(e.text, docOf(e, source));
      members.set(node.name.text, found);
    }
    if (ts.isClassDeclaration(node) && node.name) {
      const base = node.heritageClauses?.[0]?.types[0]?.expression.getText(source);
      const codeMember = node.members.find(
        (m) => ts.isPropertyDeclaration(m) && m.name.getText(source) === 'code' && m.initializer,
      ) as ts.PropertyDeclaration | undefined;
      const superCall = /super\(\s*IDEM_CODES\.(\w+)/.exec(node.getText(source))?.[1];
      const assigned = codeMember?.initializer?.getText(source).split('.').at(-1) ?? superCall;
      classes.push({ name: node.name.text, base, code: assigned, doc: docOf(node, source) });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  const codeOf = (name: string): string | undefined => {
    const c = classes.find((k) => k.name === name);
    return c?.code ?? (c?.base ? codeOf(c.base) : undefined);
  };
  return {
    doc: (constant: string, member: string) => members.get(constant)?.get(member) ?? { text: '', tags: {} },
    classes: classes.map((c) => ({ ...c, code: codeOf(c.name) })),
  };
}

function adviceOf(answer: IdemCode): string {
  const result = idemAnswer(answer, { ref: 'exe_…', state: 'dispatched' });
  return (result.structuredContent as { idem: IdemAnswerInfo }).idem.advice;
}

export function errorsPage(): string {
  const module = readErrorsModule();
  const classesWith = (c: string) =>
    module.classes
      .filter((k) => k.code === c)
      .map((k) => code(k.name))
      .join(', ');
  const answers = table(
    ['code', 'meaning', 'what the model is told to do'],
    Object.values(IDEM_CODES).map((c) => [code(c), module.doc('IDEM_CODES', c).text, adviceOf(c)]),
  );
  const operators = table(
    ['code', 'error class', 'meaning', 'what the operator does', 'what the caller gets'],
    Object.values(OPERATOR_CODES).map((c) => {
      const doc = module.doc('OPERATOR_CODES', c);
      return [code(c), classesWith(c), doc.text, doc.tags.remedy ?? '', doc.tags.caller ?? ''];
    }),
  );
  const reasons = (constant: string, values: readonly string[]) =>
    table(
      ['reason', 'cause'],
      values.map((r) => [code(r), module.doc(constant, r).text]),
    );
  const classes = table(
    ['class', 'extends', 'code', 'what it says'],
    module.classes.map((k) => [
      code(k.name),
      k.base ? code(k.base) : '',
      k.code ? code(k.code) : '',
      k.doc.text,
    ]),
  );
  const packages = table(
    ['package', 'needed by'],
    Object.entries(OPTIONAL_PACKAGES).map(([name, feature]) => [code(name), feature]),
  );
  const missing = new MissingPackageError(Object.keys(OPTIONAL_PACKAGES)[0] as OptionalPackage).message;
  return [
    generatedHeading('Errors reference', '`src/errors.ts`'),
    'Every code is public API and never changes meaning; the package exports them (`IDEM_CODES`, ' +
      '`OPERATOR_CODES`, the reasons, the classes). How answers are shaped, and what an operator sees when ' +
      'something is refused: [errors](../errors.md).\n',
    '## Answers',
    '',
    'What a model or a client reads, in `structuredContent.idem.code` of a tool result with `isError: true` ' +
      '(two are JSON-RPC errors, said in their row). The text the model reads is `CODE: what happened. ` ' +
      "followed by the `advice` below (`exe_…` stands for the execution's ref).\n",
    `${answers}\n`,
    '## Codes for operators',
    '',
    "The code of an error that reaches an operator (a refused start, a log line, a command's exit), never a model: " +
      'when one stops a call, the caller gets the answer in the last column.\n',
    `${operators}\n`,
    '## `IDEM_INVALID_INPUT` reasons',
    '',
    "The answer's text carries `reason: message (at path)`. Refused before anything is claimed: nothing is " +
      'recorded or sent, and the corrected call is a first attempt.\n',
    `${reasons('INVALID_INPUT_REASONS', INVALID_INPUT_REASONS)}\n`,
    '## Store refusal reasons',
    '',
    'The `reason` of a `StoreRefusedError`: a store file that cannot be trusted or written is refused, never ' +
      'used half-way; a call that meets it gets `IDEM_NOT_EXECUTED`.\n',
    `${reasons('STORE_REFUSAL_REASONS', STORE_REFUSAL_REASONS)}\n`,
    '## Error classes',
    '',
    'Each carries its code as `code`.\n',
    `${classes}\n`,
    '## Optional packages',
    '',
    `A feature whose package is not installed is refused with \`MissingPackageError\` (\`packageName\` names the package), e.g.:\n\n\`\`\`text\nidem: ${missing}\n\`\`\`\n`,
    `${packages}\n`,
  ].join('\n');
}
