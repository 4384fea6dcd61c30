/**
 * Console · RouteWise: for every model on the `routewise` router, its settings (each key's value
 * in effect and where it comes from: `override`, `router_params`, `fallback`, `default`) and the
 * latency profile it has learnt per route — observations in the window (successes, failures,
 * censored attempts), the mean TTFT the planner minimises, the age of the latest observation and
 * the TTFT CDF at the profile's own query points (where it is exact).
 *
 * Reads `GET /admin/routewise/profiles` and `GET /admin/routewise/model-settings?model_id=…`.
 */
import { fmtMs, fmtPct } from '../format.ts';
import type { PageContext } from '../pages/page-kit.ts';
import { h, note } from '../ui/dom.ts';
import { enc, gatewayGet } from './console-client.ts';
import { consolePage, simpleTable } from './console-kit.ts';

interface ProfileRoute {
  endpoint_id: string;
  profiled?: false;
  successes?: number;
  failures?: number;
  censored?: number;
  mean_ttft_ms?: number | null;
  last_observed_age_ms?: number | null;
  cdf?: Array<{ ttft_ms: number; probability: number }>;
}
interface ProfilesBody {
  models: Array<{ model_id: string; routes: ProfileRoute[] }>;
}
interface SettingsBody {
  model_id: string;
  in_effect: boolean;
  settings: Record<string, { value: unknown; source: string; override: { updated_by: string } | null }>;
}

/** Renders the page. */
export function renderConsoleRouteWisePage(_ctx: PageContext): Promise<HTMLElement> {
  return consolePage({
    name: 'routewise',
    title: 'Gateway · RouteWise',
    intro: 'Per-model RouteWise settings and the latency profiles the router has learnt.',
    load: async () => {
      const profiles = await gatewayGet<ProfilesBody>('/admin/routewise/profiles');
      if (profiles.models.length === 0) return [note('No model uses the routewise router now. Switch one on the Models and routes page, or set router: routewise in models.yaml.')];
      const settings = await Promise.all(profiles.models.map((m) => gatewayGet<SettingsBody>(`/admin/routewise/model-settings?model_id=${enc(m.model_id)}`)));
      return profiles.models.flatMap((m, i) => {
        const s = settings[i]!;
        return [
          h(
            'section',
            { class: 'card wide', 'data-routewise-model': m.model_id },
            h('h2', {}, m.model_id),
            simpleTable(
              `profiles-${m.model_id}`,
              'Learnt TTFT profiles (rolling window)',
              ['endpoint', 'successes', 'failures', 'censored', 'mean TTFT', 'last observed', 'P(TTFT ≤ t)'],
              m.routes.map((r) =>
                r.profiled === false
                  ? [h('code', {}, r.endpoint_id), 'no profile', '', '', '', '', '']
                  : [h('code', {}, r.endpoint_id), String(r.successes), String(r.failures), String(r.censored), r.mean_ttft_ms == null ? 'no samples' : fmtMs(r.mean_ttft_ms), r.last_observed_age_ms == null ? 'never' : `${fmtMs(r.last_observed_age_ms)} ago`, (r.cdf ?? []).map((p) => `≤ ${fmtMs(p.ttft_ms)}: ${fmtPct(p.probability)}`).join(' · ') || 'no query points'],
              ),
            ),
            simpleTable(
              `settings-${m.model_id}`,
              'Settings in effect',
              ['key', 'value', 'source'],
              Object.entries(s.settings).map(([k, v]) => [h('code', {}, k), JSON.stringify(v.value), v.source + (v.override ? ` (by ${v.override.updated_by})` : '')]),
            ),
          ),
        ];
      });
    },
  });
}
