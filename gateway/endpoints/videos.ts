/**
 * `POST /v1/videos` (a video job submit: JSON, or multipart with an input reference image;
 * `prompt` required), and through it `GET /v1/videos/{id}` and `GET /v1/videos/{id}/content`
 * (`video-id.ts`, `server/video-routes.ts`). A submit that failed after its upstream answered
 * is never retried nor failed over: a paid job may have been created (seed 003). The id the
 * client gets names the target that accepted the job, so the status and content requests go
 * back to it; the status body echoes the model the client submitted on.
 * On a multi-target alias a target that cannot serve videos ends the request with a 501.
 */
import type { EndpointFamily } from './endpoint-family.ts';
import { invalid, jsonTypeOf, promptTokens } from './openai-fields.ts';

/** The video family. */
export const videos: EndpointFamily = {
  endpoint: 'video',
  path: '/v1/videos',
  streams: false,
  multipart: true,
  targetMustServe: { status: 501, notProviderStatus: 501 },
  noReplayAfterAnswer: true,
  check(body) {
    if (typeof body.prompt !== 'string' || body.prompt.length === 0) return invalid('prompt', `You must provide a 'prompt' (a non-empty string), but got ${jsonTypeOf(body.prompt)}.`);
    return null;
  },
  prompt(body) {
    return { inputTokens: promptTokens(body.prompt), modalities: [] };
  },
};
