// Runs a wasm32-wasi command module under Node's WASI with stdin/stdout inherited.
// Used only to check the guest toolchain's output independently of gpuwasm's own engine.
import { readFileSync } from 'node:fs';
import { WASI } from 'node:wasi';

const wasi = new WASI({ version: 'preview1', args: [process.argv[2]], env: {} });
const module = await WebAssembly.compile(readFileSync(process.argv[2]));
const instance = await WebAssembly.instantiate(module, wasi.getImportObject());
process.exitCode = wasi.start(instance);
