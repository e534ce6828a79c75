// Runs the browser suite: serves a built site (index.html and wasm-bindgen's pkg/) on
// 127.0.0.1, opens it in headless Chromium and Firefox ESR (Debian's, through puppeteer-core)
// at the adapter's limits and at WebGPU's default limits, and prints every failure with its
// browser, then `N passed, N failed` per run and in all. Exits 1 on any failure.
//
//   node web/run.mjs SITE_DIR [--browsers chromium,firefox] [--limits adapter,default]
//                    [--timeout SECONDS] [--out DIR]

import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";

import { launch, openAndWait, serve } from "./driver.mjs";

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const at = args.indexOf(`--${name}`);
  return at >= 0 ? args[at + 1] : fallback;
};
const site = args.find((a, i) => !a.startsWith("--") && !args[i - 1]?.startsWith("--"));
if (!site) {
  console.error("usage: node web/run.mjs SITE_DIR [--browsers ..] [--limits ..] [--out DIR]");
  process.exit(2);
}
const browsers = option("browsers", "chromium,firefox").split(",");
const limitsList = option("limits", "adapter,default").split(",");
const timeout = Number(option("timeout", "900")) * 1000;
const out = option("out", null);

const { server, base } = await serve(site);
let passed = 0;
let failed = 0;
for (const browser of browsers) {
  const instance = await launch(browser);
  for (const limits of limitsList) {
    const label = `${browser}, ${limits} limits`;
    const { page, value: report, stopped, running, errors } = await openAndWait(
      instance,
      `${base}index.html?limits=${limits}`,
      { done: "suiteReport", failed: "suiteError", timeout },
    );
    let runPassed = 0;
    let runFailed = 0;
    if (report) {
      console.log(`[${label}] ${report.device}`);
      for (const check of report.checks) {
        if (check.passed) {
          runPassed += 1;
        } else {
          runFailed += 1;
          console.log(`FAIL [${label}] ${check.name}: ${check.detail}`);
        }
      }
    }
    if (stopped) {
      runFailed += 1;
      console.log(`FAIL [${label}] the page stopped in "${running}": ${stopped}`);
      for (const error of errors.slice(-5)) console.log(`    ${error}`);
    }
    console.log(`${label}: ${runPassed} passed, ${runFailed} failed`);
    if (out) {
      await mkdir(out, { recursive: true });
      const stem = join(out, `${browser}-${limits}`);
      await writeFile(`${stem}.json`, JSON.stringify({ report, stopped, errors }, null, 1));
      await page.screenshot({ path: `${stem}.png`, fullPage: true }).catch(() => {});
    }
    passed += runPassed;
    failed += runFailed;
    await page.close().catch(() => {});
  }
  await instance.close();
}
server.close();
console.log(`browsers: ${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
