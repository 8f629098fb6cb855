import { Stack, Validations } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';

/**
 * Acknowledges cdk-nag's finding on a grant to `principal` whose resource, `arn`, ends in a
 * wildcard (`AwsSolutions-IAM5[Resource::…]`), with `reason`. The finding names the ARN as the
 * principal's template will read it, which for a resource of another stack (an `Fn::ImportValue`)
 * is known only once references between stacks are resolved: the name is worked out when the
 * tree is validated, which comes after that and before cdk-nag reads the acknowledgements.
 */
export function acknowledgeWildcardResource(principal: IConstruct, arn: string, reason: string): void {
  principal.node.addValidation({
    validate: () => {
      Validations.of(principal).acknowledge({ id: `AwsSolutions-IAM5[Resource::${flattened(Stack.of(principal).resolve(arn))}]`, reason });
      return [];
    },
  });
}

/** A resolved CloudFormation value as cdk-nag writes it in a finding: `<Id.Attr>` for GetAtt, `<Id>` for Ref, joins joined. */
function flattened(value: unknown): string {
  if (value === undefined) return '';
  if (typeof value === 'string') return value.replace(/\$\{/g, '<').replace(/\}/g, '>');
  const node = value as Record<string, unknown>;
  if (node['Fn::Join']) {
    const [delimiter, items] = node['Fn::Join'] as [string, unknown[]];
    return items.map(flattened).join(delimiter);
  }
  if (node['Fn::Sub']) return flattened(node['Fn::Sub']);
  if (node['Fn::GetAtt']) {
    const [resource, attribute] = node['Fn::GetAtt'] as [unknown, unknown];
    return `<${flattened(resource)}.${flattened(attribute)}>`;
  }
  if (node['Fn::ImportValue']) return flattened(node['Fn::ImportValue']);
  if (node.Ref) return `<${flattened(node.Ref)}>`;
  return JSON.stringify(value);
}
