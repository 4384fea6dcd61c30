/**
 * `GET /v1/models` and `GET /v1/models/{id}`: the published models (ids and aliases) a caller may
 * use, as OpenAI's model objects. An unknown name, an unpublished model and one the caller may
 * not use all get the same 404, so a key cannot probe which models exist. Auto models (while
 * they are on) are listed to callers who may use one of their candidates, with the largest
 * context window, the input types and the tool support their usable candidates offer.
 */
import type { RoutingCore } from '../../core/index.ts';
import { Callers, type Caller } from '../callers.ts';
import { clientMessage, errorJson } from '../errors.ts';
import { autoModelsFor, type AutoModelEntry, type GatewayAuto } from '../auto/gateway-auto.ts';

/** An OpenAI model object. */
function modelObject(name: string, createdSec: number): Record<string, unknown> {
  return { id: name, object: 'model', created: createdSec, owned_by: 'switchyard' };
}

/** An auto model's object: the model object plus what its usable candidates offer at most. */
function autoModelObject(e: AutoModelEntry, createdSec: number): Record<string, unknown> {
  return { ...modelObject(e.name, createdSec), context_window: e.contextWindow, input_modalities: e.inputModalities, supports_tools: e.supportsTools };
}

/** Body of `GET /v1/models`: every published id and alias `caller` may use, then the auto models it may use (`auto`: null when off). */
export function listModels(core: RoutingCore, caller: Caller, createdSec: number, auto: GatewayAuto | null = null): string {
  const data: Array<Record<string, unknown>> = [];
  for (const m of core.allModels()) {
    if (!m.published) continue;
    for (const name of [m.id, ...m.aliases]) if (Callers.mayUse(caller, name)) data.push(modelObject(name, createdSec));
  }
  if (auto) for (const e of autoModelsFor(auto, core, caller)) data.push(autoModelObject(e, createdSec));
  return JSON.stringify({ object: 'list', data });
}

/**
 * `GET /v1/models/{id}`: status and body. `rawId` is the path segment as sent (percent-decoded
 * here, so ids with `/` work as the OpenAI client encodes them).
 */
export function retrieveModel(core: RoutingCore, caller: Caller, rawId: string, createdSec: number, auto: GatewayAuto | null = null): { status: number; body: string } {
  let name: string;
  try {
    name = decodeURIComponent(rawId);
  } catch {
    name = rawId;
  }
  if (auto?.router.profile(name)) {
    const e = autoModelsFor(auto, core, caller).find((x) => x.name === name);
    if (e) return { status: 200, body: JSON.stringify(autoModelObject(e, createdSec)) };
  }
  const m = core.model(name);
  // `core.model` resolves aliases; the object is named as the caller asked.
  if (!m || !m.published || !Callers.mayUse(caller, name)) return { status: 404, body: errorJson('model_not_found', clientMessage('model_not_found', name, ''), 'model', 404) };
  return { status: 200, body: JSON.stringify(modelObject(name, createdSec)) };
}
