/**
 * External tools at the inference step: the run's MCP and Lambda tools, from the catalog listed once
 * per run and stored, so every step sends the same bytes (invariant 4, docs/ARCHITECTURE.md).
 */
import type { InferenceFeature } from '../../steps/hooks.js';
import { externalSpecs, unavailableNote } from './external-tools.js';

/** Offers the agent the run's external tools, and names those whose source was down when the run began. */
export const externalToolsFeature: InferenceFeature = {
  name: 'external-tools',
  async request(step, request) {
    const { deps, input, profile } = step;
    if (!deps.externalTools) return;
    const catalog = await deps.externalTools.forRun(input.runId);
    request.catalog = catalog;
    request.system += unavailableNote(catalog, (source) => profile.usesSource(source));
    request.tools.push(...externalSpecs(catalog, (tool) => profile.hasExternal(tool)));
  },
};
