/** The OpenAPI 3.1 document of the HTTP API, generated from the same zod schemas the routes use. */
import * as z from 'zod';
import { type ZodOpenApiResponsesObject, createDocument } from 'zod-openapi';
import {
  Accepted,
  CreateRunBody,
  DecisionBody,
  DecisionRecorded,
  ErrorBody,
  FilesPage,
  Health,
  IdempotencyKey,
  MessagesPage,
  MessagesQuery,
  RunId,
  RunView,
  ToolUseId,
} from './schemas.js';

const json = (schema: z.ZodType) => ({ 'application/json': { schema } });
const error = (description: string) => ({ description, content: json(ErrorBody) });
const runPath = { path: z.object({ runId: RunId }) };

export function openApiDocument(): ReturnType<typeof createDocument> {
  const notFound: ZodOpenApiResponsesObject = { '404': error('No such run.') };
  return createDocument({
    openapi: '3.1.0',
    info: {
      title: 'Stepwise',
      version: '1.0.0',
      description: 'Start and follow tool-using LLM agent runs: one agent, or an Architect that plans and a Coder that builds.',
    },
    paths: {
      '/runs': {
        post: {
          summary: 'Start a run',
          requestParams: { header: z.object({ 'Idempotency-Key': IdempotencyKey.optional() }) },
          requestBody: { required: true, content: json(CreateRunBody) },
          responses: {
            '202': { description: 'Accepted.', content: json(Accepted) },
            '400': error('Invalid input; `issues` names each bad field.'),
            '409': error('The Idempotency-Key was used with another body, or the session has a running run.'),
          },
        },
      },
      '/runs/{runId}': {
        get: { summary: 'A run', requestParams: runPath, responses: { '200': { description: 'The run.', content: json(RunView) }, ...notFound } },
      },
      '/runs/{runId}/messages': {
        get: {
          summary: "A run's transcript, in pages",
          requestParams: { ...runPath, query: MessagesQuery },
          responses: { '200': { description: 'One page of messages.', content: json(MessagesPage) }, '400': error('Invalid query.'), ...notFound },
        },
      },
      '/runs/{runId}/files': {
        get: { summary: "The run's workspace files", requestParams: runPath, responses: { '200': { description: 'The files.', content: json(FilesPage) }, ...notFound } },
      },
      '/runs/{runId}/files/{path}': {
        get: {
          summary: 'One file of the workspace',
          requestParams: { path: z.object({ runId: RunId, path: z.string().meta({ description: 'The file path; it may contain "/".' }) }) },
          responses: {
            '200': { description: 'The file bytes.', content: { 'application/octet-stream': { schema: z.string().meta({ format: 'binary' }) } } },
            '400': error('The path is not a valid workspace path.'),
            ...notFound,
          },
        },
      },
      '/runs/{runId}/cancel': {
        post: {
          summary: 'Cancel a running run',
          requestParams: runPath,
          responses: { '202': { description: 'Cancelled.', content: json(Accepted) }, '409': error('The run is not running.'), ...notFound },
        },
      },
      '/runs/{runId}/approvals/{toolUseId}': {
        post: {
          summary: 'Approve or deny a tool call that waits for a reviewer',
          description:
            'Approve: the tool runs. Deny: the model gets an error result saying a reviewer denied the call (with the reason), and the run goes on.',
          requestParams: { path: z.object({ runId: RunId, toolUseId: ToolUseId }) },
          requestBody: { required: true, content: json(DecisionBody) },
          responses: {
            '202': { description: 'Recorded; the run goes on.', content: json(DecisionRecorded) },
            '400': error('Invalid body; `issues` names each bad field.'),
            '404': error('No such run, or no approval request for that tool call.'),
            '409': error('The call was already decided (by a reviewer or by the timeout), or the run is not running.'),
          },
        },
      },
      '/openapi.json': { get: { summary: 'This document', responses: { '200': { description: 'OpenAPI 3.1.' } } } },
      '/health': { get: { summary: 'Liveness (local server)', responses: { '200': { description: 'Up.', content: json(Health) } } } },
    },
  });
}
