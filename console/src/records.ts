/**
 * The records the console reads from the API, as the API's own route declarations type them (the
 * shared client's answers): a run, and one message of its transcript.
 */
import type { ApiClient } from './api.js';

/** A run as `GET /runs/{runId}` answers: the record, the calls waiting for a reviewer, the decisions made. */
export type RunRecord = Awaited<ReturnType<ApiClient['getRun']>>;

/** One agent or workflow as `GET /agents` lists it. */
export type AgentRecord = Awaited<ReturnType<ApiClient['agents']>>['items'][number];

/** One message as `GET /runs/{runId}/messages` lists it. */
export type MessageRecord = Awaited<ReturnType<ApiClient['messages']>>['items'][number];
