/**
 * Deployed evals (docs/evals.md, "Deployed"): `POST /evals` runs a suite's cases on the evals
 * state machine, `GET /evals` lists the caller's, `GET /evals/{evalId}` reads one with its report.
 * An eval is its owner's alone: another caller's is a 404, as a missing one (DESIGN §7).
 */
import { createRoute } from '@hono/zod-openapi';
import * as z from 'zod';
import { evalConcurrency, evalView, startEval, summaryOf, type StartEvalDeps } from '../../core/evals/deployed.js';
import { parseSuite } from '../../core/evals/suite.js';
import { caseBody } from '../../core/evals/run-body.js';
import { EvalReport, EvalStatus, ReportSummary, type SuiteIssue } from '../../core/evals/types.js';
import { createRunBody } from '../../core/intake/request.js';
import { Owner } from '../../core/callers/types.js';
import { NotImplemented, ValidationFailed } from '../errors.js';
import { json, jsonBody, refusal, routes } from '../middleware.js';
import type { ApiDeps } from '../types.js';

const EvalsBody = z
  .object({
    suite: z.unknown().meta({ description: 'The suite (docs/evals.md): `{ name, agent? | workflow? | mode?, cases: [{ id, goal, files?, expect }] }`.' }),
    concurrency: z.number().int().min(1).max(evalConcurrency.max).optional().meta({ description: `Cases running at once (default ${evalConcurrency.default}).` }),
  })
  .strict();

const EvalId = z.string().regex(/^[A-Za-z0-9_-]{1,80}$/, 'must be an eval id');

const EvalSummary = z.object({
  evalId: z.string(),
  name: z.string(),
  status: EvalStatus,
  cases: z.number().int(),
  concurrency: z.number().int(),
  createdAt: z.string(),
  updatedAt: z.string(),
  summary: ReportSummary.optional(),
  error: z.string().optional(),
});

const EvalView = EvalSummary.extend({ report: EvalReport.optional().meta({ description: 'The report, once the eval has succeeded.' }) });

const noEval = { 404: refusal('No such eval (or not the caller\'s).') };

/** Every problem of a suite: its schema's, then each case's run body as `POST /runs` would refuse it. */
function suiteIssues(suite: unknown, deps: ApiDeps): { issues: SuiteIssue[]; parsed?: ReturnType<typeof parseSuite> } {
  const parsed = parseSuite(suite);
  if (!parsed.ok) return { issues: parsed.issues.map((i) => ({ path: `suite.${i.path}`, message: i.message })) };
  const body = createRunBody(deps);
  const issues = parsed.suite.cases.flatMap((kase, index) => {
    const checked = body.safeParse(caseBody(parsed.suite, kase));
    return checked.success ? [] : checked.error.issues.map((issue) => ({ path: ['suite', 'cases', index, ...issue.path].map(String).join('.'), message: issue.message }));
  });
  return { issues, parsed };
}

function ownerOf(caller: { principal: string; tenant?: string | undefined }) {
  return Owner.parse({ principal: caller.principal, tenant: caller.tenant });
}

/** `POST /evals`, `GET /evals` and `GET /evals/{evalId}`. */
export function evalRoutes(deps: ApiDeps) {
  const evals = (): StartEvalDeps => {
    if (!deps.evals) throw new NotImplemented('This deployment runs no evals.');
    return deps.evals;
  };
  return routes()
    .openapi(
      createRoute({
        method: 'post',
        path: '/evals',
        summary: "Run a suite's cases on the deployment",
        description: "Each case is a real run of the orchestrator, owned by the caller, on a Step Functions Distributed Map; `GET /evals/{evalId}` reports.",
        middleware: [jsonBody] as const,
        request: { body: { required: true, content: json(EvalsBody) } },
        responses: {
          202: { description: 'Started.', content: json(z.object({ evalId: z.string(), status: z.literal('running') })) },
          400: refusal('Invalid input; `issues` names every bad path of the suite.'),
        },
      }),
      async (c) => {
        const { suite, concurrency } = c.req.valid('json');
        const { issues, parsed } = suiteIssues(suite, deps);
        if (issues.length || !parsed?.ok) throw new ValidationFailed(`The suite is invalid (${issues.length} problem${issues.length === 1 ? '' : 's'}).`, issues);
        return c.json(await startEval(parsed.suite, concurrency ?? evalConcurrency.default, ownerOf(c.var.caller), evals()), 202);
      },
    )
    .openapi(
      createRoute({
        method: 'get',
        path: '/evals',
        summary: "The caller's evals, newest first",
        request: { query: z.object({ limit: z.coerce.number().int().min(1).max(100).default(50) }) },
        responses: { 200: { description: "The caller's evals.", content: json(z.object({ items: z.array(EvalSummary) })) } },
      }),
      async (c) => {
        const items = await evals().evals.list(ownerOf(c.var.caller), c.req.valid('query').limit);
        return c.json({ items: items.map(summaryOf) }, 200);
      },
    )
    .openapi(
      createRoute({
        method: 'get',
        path: '/evals/{evalId}',
        summary: 'An eval, with its report once done',
        request: { params: z.object({ evalId: EvalId }) },
        responses: { 200: { description: 'The eval.', content: json(EvalView) }, ...noEval },
      }),
      async (c) => c.json(await evalView(ownerOf(c.var.caller), c.req.valid('param').evalId, evals()), 200),
    );
}
