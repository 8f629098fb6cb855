/**
 * Which model `npm run dev` and `npm start` talk to, and the local stand-in that serves it when
 * there is no real one: without `ANTHROPIC_API_KEY` (and the default provider), the offline model
 * on a local Messages API, which the real Anthropic SDK calls; with `STEPWISE_PROVIDER=bedrock`
 * and `STEPWISE_SCRIPT`, the Bedrock stand-in replaying the script. Otherwise nothing starts.
 */
import { readScript } from '../functions/adapters/model/scripted.js';
import { startBedrockApi } from './stand-ins/bedrock-api.js';
import { replayedScript, startMessagesApi } from './stand-ins/messages-api.js';
import { defaultCharsPerSecond, offlineModelName, offlineResponder } from './offline/model.js';

export interface ModelStandIn {
  /** Environment for the handlers: where the model is, and the key the SDK needs. */
  env: Record<string, string>;
  /** What answers the runs, for the start-up line. */
  model: string;
  /** More to say at start-up, if anything. */
  notes: string[];
  close(): Promise<void>;
}

/** Starts the stand-in the environment calls for, if any. */
export async function startModelStandIn(env: NodeJS.ProcessEnv): Promise<ModelStandIn> {
  const provider = env.STEPWISE_PROVIDER ?? 'anthropic';
  const script = env.STEPWISE_SCRIPT;
  if (provider === 'bedrock' && script && !env.STEPWISE_BEDROCK_ENDPOINT) {
    const bedrock = await startBedrockApi(replayedScript(readScript(script)));
    return {
      env: { STEPWISE_BEDROCK_ENDPOINT: bedrock.url },
      model: 'bedrock',
      notes: [`Bedrock: the local stand-in at ${bedrock.url} replays ${script}.`],
      close: bedrock.close,
    };
  }
  if (provider === 'anthropic' && !env.ANTHROPIC_API_KEY) {
    const charsPerSecond = offlinePace(env.STEPWISE_OFFLINE_CHARS_PER_SECOND);
    const api = await startMessagesApi(offlineResponder({ charsPerSecond }), 0);
    return {
      // The SDK wants a key; the stand-in reads none.
      env: { ANTHROPIC_BASE_URL: api.url, ANTHROPIC_API_KEY: 'offline-stand-in', STEPWISE_MODEL: env.STEPWISE_MODEL ?? offlineModelName },
      model: 'the offline stand-in, as no ANTHROPIC_API_KEY is set',
      notes: [
        'Offline: the stand-in model works arithmetic, file, structured-output and multi-agent goals with the real tools ' +
          `(${charsPerSecond ? `${charsPerSecond} characters a second` : 'at once'}: STEPWISE_OFFLINE_CHARS_PER_SECOND); ` +
          'a goal with [script:<name>] replays local/scripts/<name>.json. Set ANTHROPIC_API_KEY to use Claude.',
      ],
      close: api.close,
    };
  }
  const notes =
    provider === 'bedrock'
      ? [`Bedrock: ${env.STEPWISE_MODEL ?? '(set STEPWISE_MODEL to a Bedrock model id)'} in ${env.AWS_REGION ?? 'us-east-1'}, with your AWS credentials.`]
      : [];
  return { env: {}, model: `provider ${provider}`, notes, close: async () => undefined };
}

/** `STEPWISE_OFFLINE_CHARS_PER_SECOND`: a number ≥ 0 (0: each turn at once). */
function offlinePace(value: string | undefined): number {
  if (value === undefined || value === '') return defaultCharsPerSecond;
  const pace = Number(value);
  if (!Number.isFinite(pace) || pace < 0) throw new Error(`STEPWISE_OFFLINE_CHARS_PER_SECOND must be a number ≥ 0 (0 writes each turn at once), not "${value}".`);
  return pace;
}
