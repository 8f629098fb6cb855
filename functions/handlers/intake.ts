/** Lambda: `Stepwise Run Requested` events from the bus, through the same intake as POST /runs. */
import { deadLettersFrom, intakeWiring } from '../adapters/wiring-intake.js';
import { wire } from '../adapters/wiring.js';
import { type IntakeOutcome, intakeEvent } from '../core/intake.js';

const wiring = wire(process.env);
const deps = { ...intakeWiring(wiring), deadLetters: deadLettersFrom(wiring.env) };

export async function handler(event: unknown): Promise<IntakeOutcome> {
  return intakeEvent(event, deps);
}
