/**
 * Console · Audit: the newest entries of the gateway's admin audit log — who called (caller id,
 * or the key's hash prefix for a refusal), from where, what, the answer's status, and for a
 * change the records before and after.
 *
 * Reads `GET /admin/audit?limit=…` (view parameter `limit`, default 100).
 */
import type { PageContext } from '../pages/page-kit.ts';
import { h } from '../ui/dom.ts';
import { gatewayGet } from './console-client.ts';
import { consolePage, simpleTable } from './console-kit.ts';

interface AuditEntry {
  id: number;
  at: string;
  caller_id: string;
  remote_addr: string;
  method: string;
  path: string;
  status: number;
  before: unknown;
  after: unknown;
}

/** Renders the page. */
export function renderConsoleAuditPage(ctx: PageContext): Promise<HTMLElement> {
  const limit = Math.min(1000, Math.max(1, Number(ctx.route.params.limit) || 100));
  return consolePage({
    name: 'audit',
    title: 'Gateway · Audit trail',
    intro: 'Every admin call: who, from where, what, the answer, and what a change changed.',
    load: async () => {
      const { entries } = await gatewayGet<{ entries: AuditEntry[] }>(`/admin/audit?limit=${limit}`);
      return [
        simpleTable(
          'audit',
          `${entries.length} newest entr${entries.length === 1 ? 'y' : 'ies'}`,
          ['at', 'caller', 'from', 'call', 'status', 'change'],
          entries.map((e) => [
            e.at,
            e.caller_id,
            e.remote_addr,
            h('code', { 'data-audit-call': `${e.method} ${e.path}` }, `${e.method} ${e.path}`),
            String(e.status),
            e.before === null && e.after === null ? '–' : h('details', {}, h('summary', {}, 'before / after'), h('pre', { class: 'answer' }, `before: ${JSON.stringify(e.before, null, 2)}\nafter: ${JSON.stringify(e.after, null, 2)}`)),
          ]),
          'the audit log is empty',
        ),
      ];
    },
  });
}
