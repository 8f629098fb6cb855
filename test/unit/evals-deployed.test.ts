import { describe, expect, it } from 'vitest';
import { failureText } from '../../functions/core/evals/case-steps.js';
import { caseRunId, judgeRunId, newEvalId } from '../../functions/core/evals/deployed.js';
import { inlineDistributedMaps, itemReaderResource, readerStateOf } from '../../local/runtime/distributed-map.js';

describe('deployed eval ids', () => {
  it('sorts eval ids by their start, and derives each case and judge run id from the eval, the same every time', () => {
    const earlier = newEvalId(new Date('2026-01-01T00:00:00Z'), 'ffffffff-ffff');
    const later = newEvalId(new Date('2026-01-01T00:00:01Z'), '00000000-0000');
    expect(earlier < later).toBe(true);
    expect(later).toMatch(/^[0-9a-z]{9}-[0-9A-Za-z]{12}$/);
    expect(caseRunId('e1', 0)).toBe(caseRunId('e1', 0));
    expect(new Set([caseRunId('e1', 0), caseRunId('e1', 1), caseRunId('e2', 0), judgeRunId('e1', 0, 0), judgeRunId('e1', 0, 1)]).size).toBe(5);
    // A client run id as POST /runs takes them (1-56 of [A-Za-z0-9_-]).
    expect(judgeRunId('e1', 0, 3)).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("reads a step's failure as its name and the readable part of Lambda's cause", () => {
    expect(failureText({ Error: 'TooManyRuns', Cause: JSON.stringify({ errorType: 'TooManyRuns', errorMessage: 'You have 2 runs running.' }) })).toBe('TooManyRuns: You have 2 runs running.');
    expect(failureText({ Error: 'States.Timeout', Cause: 'late' })).toBe('States.Timeout: late');
    expect(failureText(undefined)).toBe('Error');
  });
});

describe('the local form of a Distributed Map', () => {
  const definition = {
    StartAt: 'Cases',
    States: {
      Cases: {
        Type: 'Map',
        ItemReader: { Resource: 'arn:aws:states:::s3:getObject', ReaderConfig: { InputType: 'JSON' }, Parameters: { Bucket: 'b', 'Key.$': '$.itemsKey' } },
        ItemProcessor: { ProcessorConfig: { Mode: 'DISTRIBUTED', ExecutionType: 'STANDARD' }, StartAt: 'Step', States: { Step: { Type: 'Pass', End: true } } },
        MaxConcurrencyPath: '$.concurrency',
        ToleratedFailurePercentage: 100,
        Catch: [{ ErrorEquals: ['States.ALL'], Next: 'Failed' }],
        Next: 'Report',
      },
      Retry: { Type: 'Choice', Choices: [{ Variable: '$.again', BooleanEquals: true, Next: 'Cases' }], Default: 'Report' },
      Report: { Type: 'Pass', End: true },
      Failed: { Type: 'Fail' },
    },
  };

  it('runs the same item processor inline over the items a Task reads first, every way in going through the reader', () => {
    const inline = inlineDistributedMaps(definition) as { StartAt: string; States: Record<string, Record<string, unknown>> };
    const reader = readerStateOf('Cases');
    expect(inline.StartAt).toBe(reader);
    expect(inline.States[reader]).toEqual({ Type: 'Task', Resource: itemReaderResource, Parameters: { Bucket: 'b', 'Key.$': '$.itemsKey' }, ResultPath: '$.CasesItems', Next: 'Cases' });
    expect(inline.States.Cases).toEqual({
      Type: 'Map',
      ItemsPath: '$.CasesItems',
      ItemProcessor: { StartAt: 'Step', States: { Step: { Type: 'Pass', End: true } } },
      MaxConcurrencyPath: '$.concurrency',
      Catch: [{ ErrorEquals: ['States.ALL'], Next: 'Failed' }],
      Next: 'Report',
    });
    expect((inline.States.Retry?.Choices as { Next: string }[])[0]?.Next).toBe(reader);
    // The definition it was given is left as it was; one without a reader comes back as it is.
    expect(definition.StartAt).toBe('Cases');
    const plain = { StartAt: 'Report', States: { Report: { Type: 'Pass', End: true } } };
    expect(inlineDistributedMaps(plain)).toBe(plain);
  });
});
