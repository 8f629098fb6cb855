/**
 * How an agent loop ends when one of its steps failed for good: a Fail state with the error's
 * name and a readable cause. Lambda puts a JSON document in the cause; its `errorMessage` is what
 * a person needs. An error that names only where the step failed (Lambda's service, a timeout)
 * reaches here once its retries are spent, so the run fails with `RetriesExhausted`, naming that
 * error and its cause, rather than with an opaque name.
 */
import * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import type { Construct } from 'constructs';
import type { ErrorName } from '../functions/core/errors/table.js';

/** The `DescribeFailure` Choice that a loop's tasks `Catch` into (with `resultPath: '$.failure'`). */
export function stepFailure(scope: Construct, exhaustible: readonly string[]): sfn.Choice {
  const parseCause = new sfn.Pass(scope, 'ParseCause', {
    parameters: { 'parsed.$': 'States.StringToJson($.failure.Cause)' },
    resultPath: '$.cause',
  });
  const failWithMessage = new sfn.Fail(scope, 'StepFailed', {
    errorPath: '$.failure.Error',
    causePath: '$.cause.parsed.errorMessage',
  });
  const failPlain = new sfn.Fail(scope, 'StepFailedPlain', { errorPath: '$.failure.Error', causePath: '$.failure.Cause' });
  return new sfn.Choice(scope, 'DescribeFailure')
    .when(sfn.Condition.or(...exhaustible.map((name) => sfn.Condition.stringEquals('$.failure.Error', name))), retriesExhausted(scope))
    .when(
      sfn.Condition.stringMatches('$.failure.Cause', '{*'),
      parseCause.next(
        new sfn.Choice(scope, 'HasErrorMessage')
          .when(sfn.Condition.isPresent('$.cause.parsed.errorMessage'), failWithMessage)
          .otherwise(failPlain),
      ),
    )
    .otherwise(failPlain);
}

/**
 * The end of a step whose retries are spent: `RetriesExhausted`, its cause saying which error
 * kept coming and what it said (Lambda's `errorMessage` when the cause is its JSON document).
 */
function retriesExhausted(scope: Construct): sfn.IChainable {
  const fail = new sfn.Fail(scope, 'RetriesExhausted', { error: 'RetriesExhausted' satisfies ErrorName, causePath: '$.exhausted.message' });
  const format = (id: string, cause: string) =>
    new sfn.Pass(scope, id, {
      parameters: { 'message.$': `States.Format('The step failed with {} until its retries were spent: {}', $.failure.Error, ${cause})` },
      resultPath: '$.exhausted',
    }).next(fail);
  const plain = format('DescribeExhausted', '$.failure.Cause');
  const bare = new sfn.Pass(scope, 'DescribeExhaustedBare', {
    parameters: { 'message.$': "States.Format('The step failed with {} until its retries were spent.', $.failure.Error)" },
    resultPath: '$.exhausted',
  }).next(fail);
  const parse = new sfn.Pass(scope, 'ParseExhaustedCause', { parameters: { 'parsed.$': 'States.StringToJson($.failure.Cause)' }, resultPath: '$.cause' });
  const hasCause = sfn.Condition.and(sfn.Condition.isPresent('$.failure.Cause'), sfn.Condition.isString('$.failure.Cause'));
  return new sfn.Choice(scope, 'ExhaustedCause')
    .when(
      sfn.Condition.and(hasCause, sfn.Condition.stringMatches('$.failure.Cause', '{*')),
      parse.next(
        new sfn.Choice(scope, 'ExhaustedHasMessage')
          .when(sfn.Condition.isPresent('$.cause.parsed.errorMessage'), format('DescribeExhaustedMessage', '$.cause.parsed.errorMessage'))
          .otherwise(plain),
      ),
    )
    .when(hasCause, plain)
    .otherwise(bare);
}
