/**
 * aws-local-stepfunctions 3 has no Distributed Map: it ignores `ItemReader` and iterates the
 * state's input. So locally, a Map that reads its items (`ItemReader`) runs as an inline Map over
 * them, read first by a Task of its own: `<Map> ReadItems` calls the reader's resource (S3
 * `getObject`) with the reader's parameters, its result goes to `$.<Map>Items`, and the Map
 * iterates that (`ItemsPath`). The item processor is the deployed one, unchanged; what only the
 * Distributed Map has (its processor config, tolerated failures, child executions) is held by the
 * CDK assertions instead (test/infra/evals.test.ts).
 */

type States = Record<string, Record<string, unknown>>;

/** The name of the Task that reads a Map's items, and where it puts them. */
export const readerStateOf = (mapName: string) => `${mapName} ReadItems`;
const itemsPathOf = (mapName: string) => `$.${mapName.replace(/[^A-Za-z0-9_]/g, '_')}Items`;

/** The reader Task's resource, as the local bindings recognize it. */
export const itemReaderResource = 'arn:aws:states:::s3:getObject#items';

/** The definition with each item-reading Map run inline over items a Task reads first; other definitions as they are. */
export function inlineDistributedMaps(definition: Record<string, unknown>): Record<string, unknown> {
  const states = { ...((definition.States ?? {}) as States) };
  const readers = Object.entries(states).filter(([, state]) => state.Type === 'Map' && state.ItemReader);
  if (!readers.length) return definition;
  let startAt = definition.StartAt as string;
  for (const [name, state] of readers) {
    const reader = state.ItemReader as { Parameters?: unknown };
    const { ProcessorConfig: _config, ...processor } = state.ItemProcessor as Record<string, unknown>;
    const { ItemReader: _reader, ToleratedFailurePercentage: _tolerated, ...inline } = state;
    const readerName = readerStateOf(name);
    states[readerName] = { Type: 'Task', Resource: itemReaderResource, Parameters: reader.Parameters ?? {}, ResultPath: itemsPathOf(name), Next: name };
    states[name] = { ...inline, ItemsPath: itemsPathOf(name), ItemProcessor: processor };
    // Every way into the Map now goes through its reader.
    const redirect = (target: unknown) => (target === name ? readerName : target);
    if (startAt === name) startAt = readerName;
    for (const [other, original] of Object.entries(states)) {
      if (other === readerName) continue;
      const s = { ...original };
      states[other] = s;
      if (s.Next !== undefined) s.Next = redirect(s.Next);
      if (s.Default !== undefined) s.Default = redirect(s.Default);
      if (Array.isArray(s.Choices)) s.Choices = s.Choices.map((c: Record<string, unknown>) => ({ ...c, Next: redirect(c.Next) }));
      if (Array.isArray(s.Catch)) s.Catch = s.Catch.map((c: Record<string, unknown>) => ({ ...c, Next: redirect(c.Next) }));
    }
  }
  return { ...definition, StartAt: startAt, States: states };
}
