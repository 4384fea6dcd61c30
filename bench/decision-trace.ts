/**
 * Decision trace: 36,000 requests (8 built-in strategies × stream and non-stream × 2,250) through
 * a checkout's `RoutingCore` on 8 routes, with a small driver: every 4th request lets its
 * deadlines fire in time order (first-token or headers timeouts, fail-over), the others finish
 * (streams every 4th with a first token first). Prints per strategy and stream mode a SHA-256
 * of every action except `wait_until` (dispatch, cancel, commit, done with its metadata) and the
 * RNG's next draw, so two checkouts whose decisions and RNG state agree print the same lines.
 * `wait_until`s are left out on purpose: which waits are armed may change without changing a
 * decision; the waits that fire show up in the actions they cause. Actions of another shape
 * (an older core's dispatch fields or metadata) change the hash even where every endpoint
 * agrees; the RNG draw still compares.
 *
 * Run: `npx tsx bench/decision-trace.ts [--root DIR] [--compare-root DIR]`; with
 * `--compare-root` prints both and exits 1 when they differ.
 */
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

async function trace(root: string): Promise<string> {
  const url = (p: string) => pathToFileURL(join(root, p)).href;
  const core = await import(url('core/index.ts'));
  const registry = await import(url('core/strategies/registry.ts'));
  const out: string[] = [];
  for (const strategy of registry.BUILTIN_STRATEGIES.map((d: any) => d.name)) {
    for (const stream of [true, false]) {
      const c = new core.RoutingCore(core.parseModelsConfig({ models: [{ id: 'm', router: strategy, route: Array.from({ length: 8 }, (_, i) => ({ base_url: `sim://r${i}`, weight: 1 + (i % 3) })) }] }), { registry: new registry.StrategyRegistry() });
      const rng = core.deriveRng(7, 'trace');
      const h = createHash('sha256');
      let now = 0;
      for (let i = 0; i < 2250; i++) {
        const request = { requestId: `q${i}`, model: 'm', sessionId: null, callerId: `c${i % 5}`, inputTokens: 1000, outputTokensHint: 100, stream, modalities: [], pin: null, prefixHashes: null };
        now += 10;
        const { life, actions } = c.start(request, now, rng);
        const waits: { id: number; at: number; seq: number }[] = [];
        let seq = 0; const seen: string[] = [];
        const take = (acts: any[]) => { for (const a of acts) { if (a.kind === 'wait_until') waits.push({ id: a.deadlineId, at: a.atMs, seq: seq++ }); else seen.push(JSON.stringify(a)); } };
        take(actions);
        let guard = 0;
        while (!life.isDone && guard++ < 50) {
          const d = [...seen].reverse().map((s) => JSON.parse(s)).find((a: any) => a.kind === 'dispatch');
          if (i % 4 === 0 || !d) {
            waits.sort((x, y) => x.at - y.at || x.seq - y.seq);
            const w = waits.shift(); if (!w) break;
            take(life.step({ kind: 'deadline', deadlineId: w.id }, Math.max(now, w.at)));
          } else {
            if (i % 4 === 1 && stream) take(life.step({ kind: 'first_token', attemptId: d.attemptId }, now));
            take(life.step({ kind: 'finished', attemptId: d.attemptId, usage: { inputTokens: 1, outputTokens: 1, cachedTokens: 0 } }, now));
          }
        }
        h.update(seen.join('\n'));
      }
      out.push(`${strategy} stream=${stream} ${h.digest('hex').slice(0, 16)} rng=${rng.float()}`);
    }
  }
  return out.join('\n');
}

const { values } = parseArgs({ options: { root: { type: 'string' }, 'compare-root': { type: 'string' } } });
const mine = await trace(values.root ?? join(import.meta.dirname, '..'));
console.log(mine);
if (values['compare-root'] !== undefined) {
  const theirs = await trace(values['compare-root']);
  console.log(`--- ${values['compare-root']}\n${theirs}`);
  console.log(mine === theirs ? 'same decisions and RNG state' : 'DIFFERENT');
  if (mine !== theirs) process.exitCode = 1;
}
