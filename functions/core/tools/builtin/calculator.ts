import * as z from 'zod';
import { ToolFailure } from '../types.js';
import { defineTool } from '../registry.js';

const CalculatorInput = z
  .object({
    operation: z.enum(['add', 'subtract', 'multiply', 'divide']).describe('The arithmetic operation.'),
    a: z.number().describe('The first operand.'),
    b: z.number().describe('The second operand.'),
  })
  .strict();

/** Exact IEEE-754 arithmetic on two numbers; division by zero is a tool error. */
export const calculator = defineTool({
  name: 'calculator',
  description:
    'Performs one arithmetic operation on two numbers and returns the result as text. ' +
    'Use it instead of doing arithmetic in your head. Operations: add, subtract, multiply, divide (a / b).',
  input: CalculatorInput,
  async run({ operation, a, b }) {
    const result = compute(operation, a, b);
    if (!Number.isFinite(result)) throw new ToolFailure(`the result of ${operation}(${a}, ${b}) is not a finite number.`);
    return String(result);
  },
});

function compute(operation: z.infer<typeof CalculatorInput>['operation'], a: number, b: number): number {
  switch (operation) {
    case 'add':
      return a + b;
    case 'subtract':
      return a - b;
    case 'multiply':
      return a * b;
    case 'divide':
      if (b === 0) throw new ToolFailure('division by zero is undefined; b must not be 0.');
      return a / b;
  }
}
