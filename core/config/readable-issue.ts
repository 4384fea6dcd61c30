/**
 * One zod issue as a sentence a config author (or an API caller) can act on: what is wrong and
 * how to fix it, without zod's own wording (`Invalid discriminator value`, `expected number to be
 * >=0`). The gateway's files, the simulator's experiments and the admin API's bodies all word
 * their problems with it, so the same mistake reads the same everywhere.
 */
import type { z } from 'zod';
import { allowedKeys } from './field-names.ts';

/** A problem's wording: `message` says what is wrong; `fix` what to write instead (null: none known). */
export interface ReadableIssue {
  message: string;
  fix: string | null;
}

/**
 * Words `issue`, raised while parsing against `root`, as a message and a fix.
 *
 * Handles unknown fields (listing the allowed ones at that path), wrong types and missing fields,
 * enum and literal values, discriminated unions (`kind`, `backend`: the allowed values), and
 * ranges; any other code keeps zod's message with no fix. Parse with `{ reportInput: true }` so
 * a wrong value is quoted and a missing field told from a wrong one. Never throws.
 */
export function readableIssue(issue: z.core.$ZodIssue, root: z.ZodType): ReadableIssue {
  const i = issue as z.core.$ZodIssue & { keys?: string[]; values?: unknown[]; expected?: string; input?: unknown; minimum?: unknown; maximum?: unknown; inclusive?: boolean; origin?: string; discriminator?: string; options?: unknown[]; note?: string };
  // A schema's own message (`z.boolean({ message: 'expected true or false' })`) already reads well.
  if (!/^(Invalid|Too (small|big)|Unrecognized)/.test(issue.message)) return { message: issue.message, fix: null };
  switch (i.code) {
    case 'unrecognized_keys': {
      const allowed = allowedKeys(root, issue.path as (string | number)[]);
      // gateway.yaml once listed the demo's emulators; they now live in emulators.yaml.
      if (issue.path.length === 0 && i.keys!.includes('emulators')) {
        return { message: `unknown field 'emulators' (the gateway starts no emulators)`, fix: 'move the list to emulators.yaml beside models.yaml and start it with switchyard demo' };
      }
      return {
        message: `unknown field${i.keys!.length > 1 ? 's' : ''} ${i.keys!.map((k) => `'${k}'`).join(', ')}`,
        fix: allowed ? `remove it or fix the spelling; allowed here: ${allowed.join(', ')}` : 'remove it or fix the spelling',
      };
    }
    case 'invalid_type':
      // zod 4 carries the offending value only when parsed with `{ reportInput: true }`.
      if (!('input' in i)) return { message: `expected ${typeNoun(i.expected)}`, fix: `write ${withArticle(typeNoun(i.expected))}` };
      if (i.input === undefined) return { message: `required field is missing (expected ${typeNoun(i.expected)})`, fix: `add it` };
      return { message: `expected ${typeNoun(i.expected)}, got ${describeValue(i.input)}`, fix: `write ${withArticle(typeNoun(i.expected))}` };
    case 'invalid_value':
      return { message: `${'input' in i ? describeValue(i.input) : 'this value'} is not allowed`, fix: `use one of: ${(i.values ?? []).map((v) => JSON.stringify(v)).join(', ')}` };
    case 'invalid_union':
      if (i.discriminator !== undefined && Array.isArray(i.options)) {
        const options = i.options.map((v) => JSON.stringify(v)).join(', ');
        return { message: `missing or not one of ${options}`, fix: `write one of: ${options}` };
      }
      return { message: issue.message, fix: null };
    case 'too_small':
      return { message: rangeMessage(issue.message), fix: i.origin === 'array' ? `list at least ${String(i.minimum)} item(s)` : i.origin === 'string' ? 'write a non-empty value' : `use a value ${i.inclusive === false ? '>' : '≥'} ${String(i.minimum)}` };
    case 'too_big':
      return { message: rangeMessage(issue.message), fix: `use a value ${i.inclusive === false ? '<' : '≤'} ${String(i.maximum)}` };
    default:
      return { message: issue.message, fix: null };
  }
}

function describeValue(v: unknown): string {
  if (typeof v === 'string') return `the string ${JSON.stringify(v)}`;
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'object') return 'a mapping';
  return `${typeof v} ${String(v)}`;
}

/** zod's type name as a noun a config author reads: `int` → `integer`. */
function typeNoun(expected: string | undefined): string {
  return expected === 'int' ? 'integer' : (expected ?? 'value');
}

/** `noun` with its indefinite article: `an integer`, `an array`, `a number`. */
function withArticle(noun: string): string {
  return /^[aeiou]/.test(noun) ? `an ${noun}` : `a ${noun}`;
}

/** zod's `Too small: expected number to be >0` as `too small: must be > 0` (the bound spaced, ≥/≤ spelt out). */
function rangeMessage(message: string): string {
  const m = /^Too (small|big): expected \w+ to be (>=|<=|>|<)\s*(.+)$/.exec(message);
  if (!m) return message;
  const op = m[2] === '>=' ? '≥' : m[2] === '<=' ? '≤' : m[2];
  return `too ${m[1]}: must be ${op} ${m[3]}`;
}
