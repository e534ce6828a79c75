// Validates WGSL files with Tint, the WGSL compiler of Chrome's WebGPU (Dawn for node, npm
// `webgpu`, null backend: no GPU needed), as a page that asks for no limits gets them: each
// file through createShaderModule, getCompilationInfo and createComputePipeline, uniformity
// analysis included.
//
// node validate.cjs DIR FEATURE...   (FEATURE: shader-f16, subgroups)
// Prints one line per file: `ok FILE`, or `error FILE` and its messages, each on a line of its
// own starting with a tab. Exits 2 when Dawn or a feature is missing.
'use strict';

const fs = require('node:fs');
const path = require('node:path');

let webgpu;
try {
  webgpu = require('webgpu');
} catch (err) {
  console.error(`no npm package webgpu: ${err.message}`);
  process.exit(2);
}

async function main() {
  const [dir, ...features] = process.argv.slice(2);
  Object.assign(globalThis, webgpu.globals);
  const gpu = webgpu.create(['backend=null']);
  const adapter = await gpu.requestAdapter();
  const missing = features.filter((f) => !adapter.features.has(f));
  if (missing.length > 0) {
    console.error(`the adapter lacks ${missing.join(', ')}`);
    process.exit(2);
  }
  // Default limits: none are asked for.
  const device = await adapter.requestDevice({ requiredFeatures: features });
  const files = fs.readdirSync(dir).filter((f) => f.endsWith('.wgsl')).sort();
  for (const file of files) {
    const code = fs.readFileSync(path.join(dir, file), 'utf8');
    const messages = [];
    device.pushErrorScope('validation');
    const module = device.createShaderModule({ code });
    const info = await module.getCompilationInfo();
    for (const m of info.messages) {
      if (m.type === 'error') {
        messages.push(`${m.lineNum}:${m.linePos} ${m.message}`);
      }
    }
    device.createComputePipeline({ layout: 'auto', compute: { module } });
    const error = await device.popErrorScope();
    if (error) {
      messages.push(error.message);
    }
    if (messages.length === 0) {
      console.log(`ok ${file}`);
    } else {
      console.log(`error ${file}`);
      for (const message of messages) {
        console.log(`\t${message.replace(/\n/g, '\n\t')}`);
      }
    }
  }
  device.destroy();
  process.exit(0);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
