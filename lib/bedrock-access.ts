import { ArnFormat, Stack, Validations } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';

/** Geography prefixes of Bedrock's system-defined (cross-Region) inference profiles. */
const profileGeographies = new Set(['us', 'eu', 'apac', 'jp', 'au', 'ca', 'us-gov', 'global']);

/** A Claude model on Bedrock: called directly in the stack's Region, or through a cross-Region inference profile. */
export type BedrockModel =
  | { readonly kind: 'foundation-model'; readonly modelId: string }
  | { readonly kind: 'inference-profile'; readonly profileId: string; readonly modelId: string };

/** Reads a Bedrock model id for Claude; throws, naming the id and the expected forms, when it is not one. */
export function bedrockModel(id: string): BedrockModel {
  const match = /^(?:([a-z-]+)\.)?(anthropic\.claude[A-Za-z0-9.:_-]*)$/.exec(id);
  const [, geography, modelId] = match ?? [];
  if (!modelId || (geography && !profileGeographies.has(geography))) {
    throw new Error(
      `"${id}" is not a Claude model id on Amazon Bedrock. Use a model id such as anthropic.claude-sonnet-4-5-20250929-v1:0, ` +
        'or a cross-Region inference profile id such as us.anthropic.claude-sonnet-4-5-20250929-v1:0 (stepwise:model, stepwise:allowedModels).',
    );
  }
  return geography ? { kind: 'inference-profile', profileId: id, modelId } : { kind: 'foundation-model', modelId };
}

/**
 * Lets `role` call InvokeModel (Stepwise does not stream) on the given Claude models and nothing
 * else. A foundation model is granted in the stack's Region. A cross-Region inference profile is
 * granted in the stack's Region, and so is its foundation model in any Region, but only when the
 * call comes through that profile: Bedrock, not the caller, picks the Region it routes to.
 */
export function grantBedrockInvoke(role: iam.Role, modelIds: readonly string[]): void {
  const stack = Stack.of(role);
  const arn = (resource: string, resourceName: string, region?: string) =>
    stack.formatArn({
      service: 'bedrock',
      resource,
      resourceName,
      arnFormat: ArnFormat.SLASH_RESOURCE_NAME,
      ...(resource === 'foundation-model' ? { account: '' } : {}),
      ...(region ? { region } : {}),
    });
  const models = [...new Set(modelIds)].map(bedrockModel);
  const direct = models.flatMap((m) => (m.kind === 'foundation-model' ? [arn('foundation-model', m.modelId)] : []));
  if (direct.length) role.addToPolicy(new iam.PolicyStatement({ actions: ['bedrock:InvokeModel'], resources: direct }));
  for (const model of models) {
    if (model.kind !== 'inference-profile') continue;
    const profile = arn('inference-profile', model.profileId);
    role.addToPolicy(new iam.PolicyStatement({ actions: ['bedrock:InvokeModel'], resources: [profile] }));
    role.addToPolicy(
      new iam.PolicyStatement({
        actions: ['bedrock:InvokeModel'],
        resources: [arn('foundation-model', model.modelId, '*')],
        conditions: { StringEquals: { 'bedrock:InferenceProfileArn': profile } },
      }),
    );
    Validations.of(role).acknowledge({
      id: `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:bedrock:*::foundation-model/${model.modelId}]`,
      reason:
        `The inference profile ${model.profileId} routes each call to a Region Bedrock picks; the grant names one model ` +
        'and holds only for calls through that profile (bedrock:InferenceProfileArn).',
    });
  }
}
