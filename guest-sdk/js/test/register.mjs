// Lets the SDK run natively under `node --test`: the WIT import
// `toolhost:plugin/host@0.4.0` resolves to `host-stub.mjs` (an in-memory host).
import { register } from 'node:module';

register('./loader.mjs', import.meta.url);
