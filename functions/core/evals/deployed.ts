/**
 * Deployed evals (`POST /evals`, docs/evals.md "Deployed"): a suite is kept in the bucket beside
 * the items the Distributed Map reads, recorded for its owner, and its execution started, named
 * after the eval. Ids, keys and the answer of `GET /evals/{evalId}` are here too.
 */
import { createHash } from 'node:crypto';
import { NotFound } from '../errors/errors.js';
import type { EvalExecutionInput, EvalItem, EvalObjects, EvalRecord, EvalReport, EvalStarter, EvalStore, EvalSuite } from './types.js';

/** Cases at once when the request names no concurrency, and the most it may name. */
export const evalConcurrency = { default: 10, max: 40 } as const;

/** Where an eval's documents are kept in the bucket. */
export function evalKeys(evalId: string) {
  const prefix = `evals/${evalId}`;
  return {
    suite: `${prefix}/suite.json`,
    items: `${prefix}/cases.json`,
    result: (index: number) => `${prefix}/results/${index}.json`,
    report: `${prefix}/report.json`,
  };
}

/** An eval id that sorts by its start (base-36 milliseconds) then a random part: the owner's list is newest first by key alone. */
export function newEvalId(now: Date, random: string): string {
  return `${now.getTime().toString(36).padStart(9, '0')}-${random.replace(/[^A-Za-z0-9]/g, '').slice(0, 12)}`;
}

/** A UUID-shaped id derived from `parts`: the same case (or judge) of an eval always names the same run, so a retried step starts it once. */
export function derivedRunId(...parts: (string | number)[]): string {
  const hex = createHash('sha256').update(parts.join(':')).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

/** The run of case `index` of an eval. */
export const caseRunId = (evalId: string, index: number) => derivedRunId('eval', evalId, 'case', index);

/** The run that grades check `check` of case `index` of an eval. */
export const judgeRunId = (evalId: string, index: number, check: number) => derivedRunId('eval', evalId, 'case', index, 'judge', check);

export interface StartEvalDeps {
  evals: EvalStore;
  objects: EvalObjects;
  starter: EvalStarter;
  newId: () => string;
  clock?: () => Date;
}

/**
 * Starts a checked suite as a deployed eval for `owner`: the suite and the map's items written,
 * the eval recorded `running`, its execution started. A start that fails marks the eval failed.
 */
export async function startEval(suite: EvalSuite, concurrency: number, owner: EvalRecord['owner'], deps: StartEvalDeps): Promise<{ evalId: string; status: 'running' }> {
  const now = (deps.clock ?? (() => new Date()))();
  const evalId = newEvalId(now, deps.newId());
  const keys = evalKeys(evalId);
  const items: EvalItem[] = suite.cases.map((kase, index) => ({ index, id: kase.id }));
  await deps.objects.put(keys.suite, suite);
  await deps.objects.put(keys.items, items);
  const at = now.toISOString();
  await deps.evals.create({ evalId, name: suite.name, owner, status: 'running', cases: items.length, concurrency, createdAt: at, updatedAt: at });
  const input: EvalExecutionInput = { evalId, owner: { principal: owner.principal, ...(owner.tenant ? { tenant: owner.tenant } : {}) }, itemsKey: keys.items, concurrency };
  try {
    await deps.starter.start(input);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    await deps.evals.finish(owner, evalId, { status: 'failed', error: `The eval could not be started: ${reason}` }, new Date().toISOString());
    throw error;
  }
  return { evalId, status: 'running' };
}

/** An eval as `GET /evals/{evalId}` answers it: with its report once written. */
export interface EvalView {
  evalId: string;
  name: string;
  status: EvalRecord['status'];
  cases: number;
  concurrency: number;
  createdAt: string;
  updatedAt: string;
  summary?: EvalRecord['summary'];
  error?: string;
  report?: EvalReport;
}

/** The caller's eval with its report; `NotFound` for an eval that is not the caller's, as for one that does not exist. */
export async function evalView(owner: EvalRecord['owner'], evalId: string, deps: Pick<StartEvalDeps, 'evals' | 'objects'>): Promise<EvalView> {
  const record = await deps.evals.get(owner, evalId);
  if (!record) throw new NotFound(`No eval ${evalId}.`);
  const report = record.status === 'succeeded' ? ((await deps.objects.get(evalKeys(evalId).report)) as EvalReport | undefined) : undefined;
  return { ...summaryOf(record), ...(report ? { report } : {}) };
}

/** An eval as listed: without owner or report. */
export function summaryOf(record: EvalRecord): Omit<EvalView, 'report'> {
  const { owner: _owner, ...rest } = record;
  return rest;
}
