#!/usr/bin/env node
// The `stepwise` command of the package: runs the TypeScript CLI through tsx.
import { register } from 'tsx/esm/api';

register();
await import('./stepwise.ts');
