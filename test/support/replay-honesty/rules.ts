/**
 * The columns of the replay-honesty table: each rule is a contract that every
 * tool with effects in a scenario gets (the library: the tool's contract; the
 * gateway: a `tools:` entry per tool of the server). `default` is no contract
 * at all: what a user who declares nothing gets from the build under test.
 *
 * A rule whose values this build's contract schema refuses is not run (its
 * column says so); `after_failure` alone is left out where the build does not
 * know it yet, and the column says that too (failures are then replayed, as
 * today).
 */
import { type ToolContract, ToolContractSchema } from '../../../src/contracts/contract.js';

export type RuleId = 'today' | 'new_if_moved_on' | 'new' | 'read_only' | 'default';

export interface Rule {
  id: RuleId;
  label: string;
  /** The contract as the rule wants it (undefined: none declared). */
  wanted: Record<string, string> | undefined;
}

export const RULES: readonly Rule[] = [
  {
    id: 'today',
    label: "today's behaviour: a repeat inside the window gets the stored result, a failure too",
    wanted: { replay: 'review', after_completion: 'replay', after_failure: 'replay' },
  },
  {
    id: 'new_if_moved_on',
    label:
      'in one session, a repeat is new once another call with effects started after the answer and completed before the repeat; across sessions a retry; a failure is retried by a new request',
    wanted: { replay: 'review', after_completion: 'new_if_moved_on', after_failure: 'new' },
  },
  {
    id: 'new',
    label: 'a repeat after a delivered result is new; a failure is retried by a new request',
    wanted: { replay: 'review', after_completion: 'new', after_failure: 'new' },
  },
  { id: 'read_only', label: 'no deduplication: every call runs', wanted: { replay: 'read_only' } },
  {
    id: 'default',
    label: 'no contract declared: what this build gives a tool that declares nothing',
    wanted: undefined,
  },
];

/** A rule as this build can run it. */
export interface RuleAsBuilt {
  rule: Rule;
  /** False: the build's schema refuses the rule's values (`why` says which). */
  available: boolean;
  /** The contract each tool with effects gets (undefined: none). */
  contract: ToolContract | undefined;
  /** Fields of `wanted` left out because this build does not know them (e.g. `after_failure: new`). */
  dropped: string[];
  why?: string;
}

/**
 * Whether this build's schema accepts `contract` (the engine refuses what the schema refuses). The
 * wanted values are plain strings because some are not in this build's types yet; once accepted,
 * they are a contract (`asContract`).
 */
function accepted(contract: Record<string, string>): { ok: true } | { ok: false; why: string } {
  const parsed = ToolContractSchema.safeParse(contract);
  return parsed.success
    ? { ok: true }
    : {
        ok: false,
        why: parsed.error.issues.map((i) => `${i.path.join('.') || '(contract)'}: ${i.message}`).join('; '),
      };
}

const asContract = (accepted: Record<string, string>) => accepted as unknown as ToolContract;

export function asBuilt(rule: Rule): RuleAsBuilt {
  if (rule.wanted === undefined) return { rule, available: true, contract: undefined, dropped: [] };
  const full = accepted(rule.wanted);
  if (full.ok) return { rule, available: true, contract: asContract(rule.wanted), dropped: [] };
  if ('after_failure' in rule.wanted) {
    const { after_failure, ...rest } = rule.wanted;
    // Today's engine replays every failure: `after_failure: replay` is what it does anyway.
    if (accepted(rest).ok) {
      const dropped = after_failure === 'replay' ? [] : [`after_failure: ${after_failure}`];
      return { rule, available: true, contract: asContract(rest), dropped };
    }
  }
  return { rule, available: false, contract: undefined, dropped: [], why: full.why };
}

export function ruleById(id: RuleId): Rule {
  const rule = RULES.find((r) => r.id === id);
  if (!rule) throw new Error(`no rule ${id}`);
  return rule;
}

/**
 * The rule a tool that declares nothing gets (the one the script holds to "no lost-response action
 * runs twice"): `new_if_moved_on` once this build knows it, else today's.
 */
export function defaultRuleId(): RuleId {
  return asBuilt(ruleById('new_if_moved_on')).available ? 'new_if_moved_on' : 'today';
}
