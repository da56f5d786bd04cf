// Baseline for bench_serve.sh: an HTTP server in Node.js that, like gpuwasm, instantiates the
// module afresh for every request (compiled once at start) and answers with its output.
//   node node_baseline.mjs MODULE.wasm PORT
import { readFileSync } from "node:fs";
import { createServer } from "node:http";

const [file, port] = process.argv.slice(2);
const module = new WebAssembly.Module(readFileSync(file));

const server = createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    const out = [];
    let memory;
    const instance = new WebAssembly.Instance(module, {
      gpuwasm: {
        output_write: (ptr, len) => {
          out.push(Buffer.from(new Uint8Array(memory.buffer, ptr, len)));
          return len;
        },
      },
    });
    memory = instance.exports.memory;
    const status = instance.exports.run();
    res.writeHead(200, { "content-type": "application/octet-stream", "x-exit-status": String(status) });
    res.end(Buffer.concat(out));
  });
});
// Port 0 picks a free one: the line says which.
server.listen(Number(port), "127.0.0.1", () => console.log(`node baseline listening on ${server.address().port}`));
