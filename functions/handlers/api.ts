/** Lambda: the HTTP API behind API Gateway, the same Hono app `npm run dev` serves. */
import { handle } from 'hono/aws-lambda';
import { apiWiring } from '../adapters/wiring-api.js';
import { wire } from '../adapters/wiring.js';
import { createApi } from '../api/app.js';

const wiring = wire(process.env);

export const handler = handle(createApi(apiWiring(wiring)));
