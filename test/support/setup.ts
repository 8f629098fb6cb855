// Runs before every test file.
import { afterAll } from 'vitest';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
// The functions' structured logs stay out of the test output; a test that reads them turns them on.
process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';

// Files of a project that shares its workers' modules run one after another in one process: what a
// file put in the environment (a local stack sets its endpoints, model and settings there, as the
// handlers read them) is taken out again after it, so the next file starts from the same one.
const environment = { ...process.env };
afterAll(() => {
  for (const name of Object.keys(process.env)) if (!(name in environment)) delete process.env[name];
  Object.assign(process.env, environment);
});
