// Opens the built web example (examples/web/site) in headless Chromium and Firefox ESR, checks
// that the page reports the boxes of www/expected.json (class and box index, best first) and
// keeps a screenshot of each. Exits 1 on any difference.
//
//   node examples/web/check.mjs SITE_DIR [--out DIR] [--browsers chromium,firefox]

import { mkdir, readFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import { launch, openAndWait, serve } from "../../web/driver.mjs";

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const at = args.indexOf(`--${name}`);
  return at >= 0 ? args[at + 1] : fallback;
};
const site = args[0];
const out = option("out", null);
const browsers = option("browsers", "chromium,firefox").split(",");
const here = dirname(fileURLToPath(import.meta.url));
const expected = JSON.parse(await readFile(join(here, "www", "expected.json"), "utf8"));

const { server, base } = await serve(site);
let failures = 0;
for (const browser of browsers) {
  const instance = await launch(browser);
  const { page, value, stopped, errors } = await openAndWait(instance, `${base}index.html`, {
    done: "exampleResult",
    failed: "exampleError",
    timeout: 300_000,
  });
  const kept = (value?.kept ?? []).map((k) => ({ class: k.class, index: k.index }));
  if (stopped) {
    failures += 1;
    console.log(`FAIL [${browser}] the example stopped: ${stopped}`);
    for (const error of errors.slice(-5)) console.log(`    ${error}`);
  } else if (JSON.stringify(kept) !== JSON.stringify(expected)) {
    failures += 1;
    console.log(`FAIL [${browser}] kept ${JSON.stringify(kept)}, expected ${JSON.stringify(expected)}`);
  } else {
    console.log(
      `[${browser}] the example kept the expected ${kept.length} boxes on ${value.device}: ` +
        `${value.firstMs.toFixed(0)} ms first, ${value.againMs.toFixed(0)} ms the next call`,
    );
    // A bad call is a JavaScript exception, and the page's device serves the next call.
    const after = await page.evaluate(async () => {
      const { detect } = await import("./pkg/burn_dml_ops_web_example.js");
      let error = null;
      try {
        await detect('{"classes": ["a"], "boxes": [[1, 2, 3]], "scores": [[0.5]]}');
      } catch (caught) {
        error = String(caught);
      }
      const text = await (await fetch("detections.json")).text();
      return { error, again: JSON.parse(await detect(text)).kept.length };
    });
    if (after.error === null || after.again !== expected.length) {
      failures += 1;
      console.log(`FAIL [${browser}] after a malformed call: ${JSON.stringify(after)}`);
    } else {
      console.log(`[${browser}] a malformed call threw (${after.error}); the next call ran`);
    }
  }
  if (out) {
    await mkdir(out, { recursive: true });
    await page.screenshot({ path: join(out, `example-${browser}.png`) }).catch(() => {});
  }
  await instance.close();
}
server.close();
process.exit(failures === 0 ? 0 : 1);
