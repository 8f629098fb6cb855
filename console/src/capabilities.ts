/**
 * What this deployment's API takes, read from its OpenAPI document (`GET /openapi.json`), so the
 * console offers a control only where the API accepts it: a budget on `POST /runs`, and edited
 * input and a message on a decision. An API that cannot say (the document is unreachable) gets
 * the controls every version takes.
 */
import type { ApiClient } from './api.js';

export interface Capabilities {
  /** `POST /runs` takes `budget: { maxUsd?, maxTokens? }`. */
  budget: boolean;
  /** A decision takes `input` (approve with edited input). */
  decisionInput: boolean;
  /** A decision takes `message` (shown to the model); otherwise a denial's words go in `reason`. */
  decisionMessage: boolean;
}

export const basicCapabilities: Capabilities = { budget: false, decisionInput: false, decisionMessage: false };

type Schema = { $ref?: string; properties?: Record<string, unknown>; allOf?: Schema[]; anyOf?: Schema[] };
interface Document {
  paths?: Record<string, Record<string, { requestBody?: { content?: Record<string, { schema?: Schema }> } }>>;
  components?: { schemas?: Record<string, Schema> };
}

/** The properties a route's JSON body may have. */
export function bodyProperties(doc: Document, path: string, method: string): string[] {
  const resolve = (schema: Schema | undefined, depth = 0): Schema | undefined => {
    if (!schema || depth > 8) return schema;
    const ref = schema.$ref?.match(/^#\/components\/schemas\/(.+)$/)?.[1];
    return ref ? resolve(doc.components?.schemas?.[ref], depth + 1) : schema;
  };
  const collect = (schema: Schema | undefined, depth = 0): string[] => {
    const s = resolve(schema);
    if (!s || depth > 8) return [];
    return [...Object.keys(s.properties ?? {}), ...[...(s.allOf ?? []), ...(s.anyOf ?? [])].flatMap((part) => collect(part, depth + 1))];
  };
  return collect(doc.paths?.[path]?.[method]?.requestBody?.content?.['application/json']?.schema);
}

/** The capabilities a document describes. */
export function capabilitiesOf(doc: Document): Capabilities {
  const decision = bodyProperties(doc, '/runs/{runId}/approvals/{toolUseId}', 'post');
  return {
    budget: bodyProperties(doc, '/runs', 'post').includes('budget'),
    decisionInput: decision.includes('input'),
    decisionMessage: decision.includes('message'),
  };
}

let loaded: Promise<Capabilities> | undefined;

/** This API's capabilities, read once per page load. */
export function capabilities(api: Pick<ApiClient, 'document'>): Promise<Capabilities> {
  // The document's route declares no schema of it: read as the OpenAPI document it is.
  loaded ??= api.document().then((doc) => capabilitiesOf(doc as Document), () => {
    loaded = undefined; // asked again next time (a sign-in may have been missing)
    return basicCapabilities;
  });
  return loaded;
}
