/** What each handler's bundle leaves out: shared by the function construct, the bench and the bundle tests. */
/**
 * Modules a handler's bundle leaves out. The Bedrock SDK can fall back to the whole
 * `@aws-sdk/credential-providers` index (Cognito, SSO, … ~55 KiB) through a dynamic import it
 * never takes, since Stepwise hands it the function's credentials; left out, that bundle stays
 * under 1.5 MB. Were it ever taken, the Node.js 22 Lambda runtime ships that module.
 */
export function externalModulesOf(handler: string): string[] {
  return handler === 'inference-bedrock' ? ['@aws-sdk/credential-providers'] : [];
}
