/**
 * The road of one effectful `tools/call` through the gateway, recomputed from
 * the source with the TypeScript compiler (docs/architecture.md, "One
 * effectful tools/call, file by file"):
 *
 *   npx tsx scripts/road.ts          the road, then its count; exits 1 past the bounds
 *   npx tsx scripts/road.ts --json   the same as JSON
 *
 * How it is counted. The walk starts at the session's dispatch of a
 * `tools/call` and takes the calls of each function in source order, every
 * branch included (a refusal's too), into the nested functions that run there
 * and then (`(async () => …)()`), not into those only handed on. A call is
 * resolved to the function it runs: a call through an interface's member or a
 * function-typed property runs what implements it in src/ (a class that
 * satisfies the interface, an object literal typed as it), every one of them.
 * Reading a property is not a call.
 *
 * - A call into another file **enters** it. Entries into the gateway's files
 *   (and the engine's `execute`, where the walk stops) are the road; entries
 *   into the layers below (protocol/, dispatch/, identity/, …) are steps down,
 *   listed apart: lint keeps those layers from importing the gateway, so they
 *   cannot call back into it but through a function handed to them.
 * - The walk follows a call into its callee when the call is handed the call
 *   itself: an argument or receiver of one of the `carriers` types (the request,
 *   the tool call as read, the call's context). A call handed only a part (a
 *   name, an id, a schema) is a step of its own: its file is entered, what it
 *   does inside is not the road.
 * - A file **entered twice** appears twice in the road's list of entries.
 * - A **climb back up** is an entry into a file of a caller still running (a
 *   hook of what wraps it) or into a file ranked above the caller's (`ranks`,
 *   the gateway's layering as biome.json holds it, top first).
 * - `exits`: functions where a call leaves this road for a road of its own (the
 *   status tool, a continued input round); listed, not walked. A read-only tool
 *   passed through is no exit: the handler returns it as its answer, and the
 *   session forwards it (part of the way back up).
 *
 * After `stop`, the walk goes on back up: the calls each running function makes
 * after the one it was in, to the answer (the `answer` part; not bounded).
 */
import { relative, resolve } from 'node:path';
import ts from 'typescript';

export interface RoadSpec {
  /** The file (src-relative) and function (a method as `Class.#name` or `Class.name`) where the road starts. */
  start: { file: string; name: string };
  /** Where the road ends: `Class.method` or a function's name. */
  stop: string;
  /** Functions (by name) that leave for a road of their own: listed, not walked. */
  exits: string[];
  /** Type names that carry the call: a call handed one is followed into its callee. */
  carriers: string[];
  /** Path prefixes (src-relative), top first: an entry into a file ranked above its caller's climbs. */
  ranks: string[];
}

export interface RoadEntry {
  /** The file the call is made in, and the function. */
  from: string;
  caller: string;
  /** The files the callee is in (several: one per implementation of an interface's member). */
  to: string[];
  callee: string;
  /** Followed into the callee (it is handed the call). */
  followed: boolean;
  /** Why this entry climbs back up, if it does. */
  climb?: string;
}

export interface Road {
  /** The entries into gateway files, in call order, from the start to `stop` (the stop included). */
  road: RoadEntry[];
  /** The distinct files the road is in, the start's included, in the order it reaches them. */
  files: string[];
  /** Files the road enters more than once. */
  twice: string[];
  climbs: RoadEntry[];
  /** Entries into the layers below the gateway on the way (not walked). */
  down: RoadEntry[];
  exits: RoadEntry[];
  /** After `stop`, back up to the answer: entries into gateway files. */
  answer: RoadEntry[];
  /** Calls into src/ the walk could not resolve (a function-typed value of no known origin). */
  unresolved: string[];
}

/** The road docs/architecture.md states: the session's dispatch of a tools/call to engine.execute. */
export const TOOLS_CALL_ROAD: RoadSpec = {
  start: { file: 'gateway/sessions/session.ts', name: 'toolCall' },
  stop: 'ExecutionEngine.execute',
  exits: ['callStatusTool', 'continueRound'],
  carriers: ['JSONRPCRequest', 'ToolCallRequest', 'CallContext'],
  ranks: [
    'cli/',
    'demo/',
    'gateway/gateway.ts',
    'gateway/lint.ts',
    'gateway/readiness.ts',
    'gateway/shutdown.ts',
    // The proxy core: what serves each request of a session.
    'gateway/sessions/session.ts',
    'gateway/sessions/initialize.ts',
    'gateway/sessions/forwarding.ts',
    'gateway/sessions/pooled-upstreams.ts',
    'gateway/sessions/subscriptions.ts',
    // A tools/call: the handler, then what it consults (the client's revision, tasks).
    'gateway/tool-calls/',
    'gateway/revisions/',
    'gateway/tasks/',
    // What a session holds and lends a call (CallSession, ToolLookup), below every part that serves it.
    'gateway/sessions/',
    'gateway/upstreams/',
    'gateway/catalog/',
    'gateway/openapi/',
    'gateway/config/',
    'gateway/',
    '',
  ],
};

/**
 * The same road in the layout before issue 45 (b9dc605: session.ts, revision-bridge/, tool-calls/), for
 * the count before: `npx tsx scripts/road.ts --before --src <that tree>/src`.
 */
export const TOOLS_CALL_ROAD_BEFORE: RoadSpec = {
  start: { file: 'gateway/session.ts', name: 'toolCall' },
  stop: 'ExecutionEngine.execute',
  exits: ['callStatusTool', 'statusToolCall', 'passThrough', 'continueRound'],
  carriers: ['JSONRPCRequest', 'ToolCallRequest', 'SessionState'],
  ranks: [
    'cli/',
    'demo/',
    'gateway/gateway.ts',
    'gateway/session.ts',
    'gateway/revision-bridge/',
    'gateway/tool-calls/',
    'gateway/',
    '',
  ],
};

let SRC = resolve(import.meta.dirname, '../src');

type FunctionLike = ts.FunctionLikeDeclaration;

class Walk {
  readonly #program: ts.Program;
  readonly #checker: ts.TypeChecker;
  readonly #spec: RoadSpec;
  readonly #classes: ts.ClassDeclaration[] = [];
  readonly #literals: ts.ObjectLiteralExpression[] = [];
  readonly #implementations = new Map<ts.Symbol, (ts.ClassDeclaration | ts.ObjectLiteralExpression)[]>();
  readonly result: Road = {
    road: [],
    files: [],
    twice: [],
    climbs: [],
    down: [],
    exits: [],
    answer: [],
    unresolved: [],
  };
  #stopped = false;
  #afterStop = false;

  constructor(spec: RoadSpec, root = SRC) {
    this.#spec = spec;
    const files = ts.sys
      .readDirectory(root, ['.ts'], undefined, ['**/*.ts'])
      .filter((f) => !f.endsWith('.test.ts') && !f.endsWith('.contract.ts') && !f.endsWith('.d.ts'));
    const config = ts.readConfigFile(resolve(root, '../tsconfig.json'), ts.sys.readFile).config;
    const options = ts.parseJsonConfigFileContent(config, ts.sys, resolve(root, '..')).options;
    this.#program = ts.createProgram(files, { ...options, noEmit: true });
    this.#checker = this.#program.getTypeChecker();
    for (const source of this.#program.getSourceFiles()) {
      if (!this.#inSrc(source.fileName)) continue;
      const visit = (node: ts.Node): void => {
        if (ts.isClassDeclaration(node)) this.#classes.push(node);
        if (ts.isObjectLiteralExpression(node)) this.#literals.push(node);
        ts.forEachChild(node, visit);
      };
      visit(source);
    }
  }

  #inSrc(fileName: string): boolean {
    const path = relative(SRC, fileName);
    return !path.startsWith('..') && !fileName.includes('node_modules') && !path.endsWith('.d.ts');
  }

  #path(node: ts.Node): string {
    return relative(SRC, node.getSourceFile().fileName);
  }

  #rank(path: string): number {
    const index = this.#spec.ranks.findIndex((prefix) => path.startsWith(prefix));
    return index === -1 ? this.#spec.ranks.length : index;
  }

  #inGateway(path: string): boolean {
    return path.startsWith('gateway/');
  }

  /** The start's declaration. */
  start(): FunctionLike {
    const source = this.#program.getSourceFile(resolve(SRC, this.#spec.start.file));
    if (!source) throw new Error(`road: no file src/${this.#spec.start.file}`);
    let found: FunctionLike | undefined;
    const visit = (node: ts.Node): void => {
      if (ts.isFunctionLike(node) && 'body' in node && node.body && nameOf(node) === this.#spec.start.name)
        found = node as FunctionLike;
      ts.forEachChild(node, visit);
    };
    visit(source);
    if (!found) throw new Error(`road: no function ${this.#spec.start.name} in src/${this.#spec.start.file}`);
    return found;
  }

  run(): Road {
    const start = this.start();
    this.result.files.push(this.#path(start));
    this.#visit(start, [start]);
    const gatewayEntries = this.result.road.map((e) => e.to.join(' | '));
    this.result.twice = [...new Set(gatewayEntries.filter((f, i) => gatewayEntries.indexOf(f) !== i))];
    return this.result;
  }

  /** Walks one function's calls in source order; `stack` is the functions running, outermost first. */
  #visit(fn: FunctionLike, stack: FunctionLike[]): void {
    const calls: (ts.CallExpression | ts.NewExpression)[] = [];
    const collect = (node: ts.Node): void => {
      // A nested function runs only when called; one called where it is written (an IIFE) runs here.
      if (node !== fn && ts.isFunctionLike(node) && !isInvokedInPlace(node)) return;
      // Its arguments are evaluated before the call runs: their calls come first.
      ts.forEachChild(node, collect);
      // An IIFE's own calls were taken above, where they run.
      if ((ts.isCallExpression(node) || ts.isNewExpression(node)) && !isInPlaceCall(node)) calls.push(node);
    };
    if (fn.body) collect(fn.body);
    for (const call of calls) {
      if (this.#stopped && !this.#afterStop) return;
      this.#call(call, fn, stack);
      if (this.#stopped && !this.#afterStop) {
        // Back up to the answer: what each running function does after the call it was in.
        this.#afterStop = true;
        const rest = calls.slice(calls.indexOf(call) + 1);
        for (const later of rest) this.#call(later, fn, stack);
        this.#afterStop = false;
        return;
      }
    }
  }

  #call(call: ts.CallExpression | ts.NewExpression, fn: FunctionLike, stack: FunctionLike[]): void {
    const targets = this.#targets(call);
    if (targets === 'unresolved') {
      this.result.unresolved.push(`${this.#path(call)}:${lineOf(call)} ${call.expression.getText()}`);
      return;
    }
    const from = this.#path(fn);
    const caller = nameOf(fn);
    const here = targets.filter((t) => this.#path(t) === from);
    const there = targets.filter((t) => this.#path(t) !== from);
    for (const target of here) {
      if (stack.includes(target) || this.#exit(target)) continue;
      this.#visit(target, [...stack, target]);
      if (this.#stopped && !this.#afterStop) return;
    }
    if (there.length === 0) return;
    const to = [...new Set(there.map((t) => this.#path(t)))];
    const callee = [...new Set(there.map(nameOf))].join(' | ');
    const stopping = there.some((t) => nameOf(t) === this.#spec.stop);
    const carried = this.#carries(call);
    const gateway = to.some((f) => this.#inGateway(f)) || stopping;
    const entry: RoadEntry = {
      from,
      caller,
      to,
      callee,
      followed: carried && gateway && !stopping,
    };
    const running = new Set(stack.slice(0, -1).map((f) => this.#path(f)));
    const above = to.find((f) => this.#rank(f) < this.#rank(from));
    const back = to.find((f) => running.has(f) && f !== from);
    if (back) entry.climb = `into ${back}, a caller still running`;
    else if (above) entry.climb = `into ${above}, ranked above ${from}`;
    if (there.some((t) => this.#exit(t))) {
      this.result.exits.push(entry);
      return;
    }
    if (this.#afterStop) {
      if (gateway) this.result.answer.push(entry);
      return;
    }
    if (!gateway) {
      this.result.down.push(entry);
      if (entry.climb) this.result.climbs.push(entry);
      return;
    }
    this.result.road.push(entry);
    for (const f of to) if (!this.result.files.includes(f)) this.result.files.push(f);
    if (entry.climb) this.result.climbs.push(entry);
    if (stopping) {
      this.#stopped = true;
      return;
    }
    if (!entry.followed) return;
    for (const target of there) {
      if (stack.includes(target)) continue;
      this.#visit(target, [...stack, target]);
      if (this.#stopped && !this.#afterStop) return;
    }
  }

  #exit(fn: FunctionLike): boolean {
    const name = nameOf(fn);
    return this.#spec.exits.some((exit) => name === exit || name.endsWith(`.${exit}`));
  }

  /** Whether the call is handed the call: an argument, or the receiver, of a carrier type. */
  #carries(call: ts.CallExpression | ts.NewExpression): boolean {
    const values: ts.Expression[] = [...(call.arguments ?? [])];
    if (ts.isPropertyAccessExpression(call.expression)) values.push(call.expression.expression);
    return values.some((value) => this.#isCarrier(this.#checker.getTypeAtLocation(value)));
  }

  #isCarrier(type: ts.Type): boolean {
    const types = type.isUnion() ? type.types : [type];
    return types.some((t) => {
      const name = (t.aliasSymbol ?? t.getSymbol())?.getName();
      return name !== undefined && this.#spec.carriers.includes(name);
    });
  }

  /** The functions a call runs, in src/; 'unresolved' when it runs a value of src/ whose origin is not known. */
  #targets(call: ts.CallExpression | ts.NewExpression): FunctionLike[] | 'unresolved' {
    const signature = this.#checker.getResolvedSignature(call);
    let declaration = signature?.getDeclaration() as ts.Node | undefined;
    if (!declaration && ts.isNewExpression(call)) {
      const symbol = this.#checker.getSymbolAtLocation(call.expression);
      declaration = symbol?.valueDeclaration;
    }
    if (!declaration) return [];
    if (!this.#inSrc(declaration.getSourceFile().fileName)) return [];
    if (ts.isClassDeclaration(declaration)) {
      const made = declaration.members.find(ts.isConstructorDeclaration);
      return made ? [made] : [];
    }
    // A member of an interface or type literal: what implements it runs.
    const member = memberOf(declaration);
    if (member) return this.#implementationsOf(member.owner, member.name, call);
    if (ts.isFunctionLike(declaration) && 'body' in declaration && declaration.body)
      return [declaration as FunctionLike];
    if (ts.isFunctionLike(declaration)) return [];
    return 'unresolved';
  }

  #implementationsOf(
    owner: ts.InterfaceDeclaration | ts.TypeLiteralNode,
    name: string,
    call: ts.Node,
  ): FunctionLike[] | 'unresolved' {
    const symbol = ts.isInterfaceDeclaration(owner)
      ? this.#checker.getSymbolAtLocation(owner.name)
      : (owner as ts.Node as { symbol?: ts.Symbol }).symbol;
    if (!symbol) return 'unresolved';
    let found = this.#implementations.get(symbol);
    if (!found) {
      const type = this.#checker.getDeclaredTypeOfSymbol(symbol);
      found = [];
      if (ts.isInterfaceDeclaration(owner)) {
        for (const c of this.#classes) {
          if (!c.name) continue;
          const instance = this.#checker.getDeclaredTypeOfSymbol(
            this.#checker.getSymbolAtLocation(c.name) as ts.Symbol,
          );
          if (this.#checker.isTypeAssignableTo(instance, type) && hasMember(c, name)) found.push(c);
        }
      }
      for (const literal of this.#literals) {
        const contextual = this.#checker.getContextualType(literal);
        if (!contextual) continue;
        const candidates = contextual.isUnion() ? contextual.types : [contextual];
        if (candidates.some((t) => t.getSymbol() === symbol || t.aliasSymbol === symbol)) found.push(literal);
      }
      this.#implementations.set(symbol, found);
    }
    const targets: FunctionLike[] = [];
    let unknown = false;
    for (const implementation of found) {
      const target = this.#memberFunction(implementation, name);
      if (target === 'absent') continue;
      if (target === 'unresolved') unknown = true;
      else targets.push(target);
    }
    if (targets.length === 0 && (unknown || found.length === 0)) {
      this.result.unresolved.push(`${this.#path(call)}:${lineOf(call)} ${name} (no implementation found)`);
      return [];
    }
    return targets;
  }

  #memberFunction(
    implementation: ts.ClassDeclaration | ts.ObjectLiteralExpression,
    name: string,
  ): FunctionLike | 'absent' | 'unresolved' {
    const members = ts.isClassDeclaration(implementation)
      ? implementation.members
      : implementation.properties;
    const member = (members as ts.NodeArray<ts.Node>).find(
      (m) => (m as { name?: ts.PropertyName }).name?.getText() === name,
    );
    if (!member) return 'absent';
    if (ts.isMethodDeclaration(member)) return member;
    let value: ts.Node | undefined;
    if (ts.isPropertyAssignment(member) || ts.isPropertyDeclaration(member)) value = member.initializer;
    if (ts.isShorthandPropertyAssignment(member)) {
      const symbol = this.#checker.getShorthandAssignmentValueSymbol(member);
      value = symbol?.valueDeclaration;
    }
    if (!value) return 'unresolved';
    return this.#functionOf(value);
  }

  /** The function a value is: written there, or named (a function declaration, a const). */
  #functionOf(value: ts.Node): FunctionLike | 'unresolved' {
    let node: ts.Node = value;
    while (ts.isParenthesizedExpression(node) || ts.isAsExpression(node)) node = node.expression;
    if (ts.isArrowFunction(node) || ts.isFunctionExpression(node) || ts.isFunctionDeclaration(node))
      return node;
    if (ts.isVariableDeclaration(node) && node.initializer) return this.#functionOf(node.initializer);
    if (ts.isIdentifier(node)) {
      let symbol = this.#checker.getSymbolAtLocation(node);
      if (symbol && symbol.flags & ts.SymbolFlags.Alias) symbol = this.#checker.getAliasedSymbol(symbol);
      const declaration = symbol?.valueDeclaration;
      if (declaration) return this.#functionOf(declaration);
    }
    return 'unresolved';
  }
}

/** An interface's (or type literal's) member a declaration belongs to, with that owner. */
function memberOf(
  declaration: ts.Node,
): { owner: ts.InterfaceDeclaration | ts.TypeLiteralNode; name: string } | undefined {
  let node: ts.Node = declaration;
  // A function type written as a property's type: the property is the member (a function type a
  // member returns is not that member).
  if (ts.isFunctionTypeNode(node)) {
    while (ts.isParenthesizedTypeNode(node.parent) || ts.isUnionTypeNode(node.parent)) node = node.parent;
    if (!ts.isPropertySignature(node.parent) || node.parent.type !== node) return undefined;
    node = node.parent;
  }
  if (!ts.isMethodSignature(node) && !ts.isPropertySignature(node)) return undefined;
  const owner = node.parent;
  if (!ts.isInterfaceDeclaration(owner) && !ts.isTypeLiteralNode(owner)) return undefined;
  return { owner, name: node.name.getText() };
}

function hasMember(c: ts.ClassDeclaration, name: string): boolean {
  return c.members.some((m) => m.name?.getText() === name);
}

/** A call of a function written where it is called: `(async () => …)()`. */
function isInPlaceCall(call: ts.CallExpression | ts.NewExpression): boolean {
  let callee: ts.Node = call.expression;
  while (ts.isParenthesizedExpression(callee)) callee = callee.expression;
  return ts.isFunctionLike(callee);
}

function isInvokedInPlace(node: ts.Node): boolean {
  let outer = node.parent;
  let inner: ts.Node = node;
  while (ts.isParenthesizedExpression(outer)) {
    inner = outer;
    outer = outer.parent;
  }
  return ts.isCallExpression(outer) && outer.expression === inner;
}

function nameOf(fn: ts.Node): string {
  const own = (fn as { name?: ts.PropertyName }).name?.getText();
  const owner = ts.isClassLike(fn.parent) && fn.parent.name ? `${fn.parent.name.getText()}.` : '';
  if (ts.isConstructorDeclaration(fn)) return `new ${fn.parent.name?.getText() ?? '(class)'}`;
  if (own) return `${owner}${own}`;
  // A function written as a value: named by what holds it.
  const holder = fn.parent as { name?: ts.Node };
  if (holder?.name) return holder.name.getText();
  return '(function)';
}

function lineOf(node: ts.Node): number {
  return node.getSourceFile().getLineAndCharacterOfPosition(node.getStart()).line + 1;
}

export function walkRoad(spec: RoadSpec = TOOLS_CALL_ROAD, src?: string): Road {
  if (src) SRC = resolve(src);
  return new Walk(spec, SRC).run();
}

/** The bounds issue 45 set: at most 8 files from the dispatch to engine.execute, none twice, no climb. */
export const ROAD_BOUNDS = { files: 8 };

function describe(road: Road): string {
  const line = (e: RoadEntry) =>
    `  ${e.from} ${e.caller} → ${e.to.join(' | ')} ${e.callee}${e.followed ? '' : ' (not followed)'}${e.climb ? `  CLIMBS ${e.climb}` : ''}`;
  return [
    `From ${road.files[0]} to engine.execute, ${road.road.length} entries into ${road.files.length} files:`,
    ...road.road.map(line),
    `Files: ${road.files.join(', ')}`,
    `Entered twice: ${road.twice.length === 0 ? 'none' : road.twice.join(', ')}`,
    `Climbs back up: ${road.climbs.length === 0 ? 'none' : ''}`,
    ...road.climbs.map(line),
    `Steps down (below the gateway, not walked), ${road.down.length}:`,
    ...road.down.map(line),
    'Exits (a road of their own):',
    ...road.exits.map(line),
    'Back up to the answer:',
    ...road.answer.map(line),
    ...(road.unresolved.length > 0 ? ['Unresolved:', ...road.unresolved.map((u) => `  ${u}`)] : []),
  ].join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const at = process.argv.indexOf('--src');
  const src = at === -1 ? undefined : process.argv[at + 1];
  const road = walkRoad(process.argv.includes('--before') ? TOOLS_CALL_ROAD_BEFORE : TOOLS_CALL_ROAD, src);
  if (process.argv.includes('--json')) process.stdout.write(`${JSON.stringify(road, null, 2)}\n`);
  else process.stdout.write(`${describe(road)}\n`);
  const within =
    road.files.length <= ROAD_BOUNDS.files && road.twice.length === 0 && road.climbs.length === 0;
  process.exitCode = within ? 0 : 1;
}
