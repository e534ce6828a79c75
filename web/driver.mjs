// What the browser suite (web/run.mjs) and the web example's check (examples/web/check.mjs)
// share: a static server on 127.0.0.1, Debian's headless browsers through puppeteer-core, and
// a wait for the value a page sets when it is done that gives up at once when the page dies.
//
// puppeteer-core is found through NODE_PATH (npm install puppeteer-core; no browser download).

import { createServer } from "node:http";
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { extname, join, normalize } from "node:path";

const require = createRequire(join(process.env.NODE_PATH ?? process.cwd(), "noop.js"));
export const puppeteer = require("puppeteer-core");

const types = {
  ".html": "text/html",
  ".js": "text/javascript",
  ".wasm": "application/wasm",
  ".json": "application/json",
};

/// Serves the folder `site` on 127.0.0.1 (a secure context, so `navigator.gpu` exists); returns
/// the server and its base address.
export async function serve(site) {
  const server = createServer(async (request, response) => {
    const path = normalize(decodeURIComponent(new URL(request.url, "http://x").pathname));
    const file = join(site, path.endsWith("/") ? `${path}index.html` : path);
    try {
      const body = await readFile(file);
      response.writeHead(200, { "content-type": types[extname(file)] ?? "application/octet-stream" });
      response.end(body);
    } catch {
      response.writeHead(404);
      response.end();
    }
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, base: `http://127.0.0.1:${server.address().port}/` };
}

/// How long a call into a page may take: a page's wasm may hold its main thread for minutes.
const protocolTimeout = 30 * 60 * 1000;

/// Debian's `browser` ("chromium" or "firefox"), headless, with WebGPU on and its networking
/// kept to this machine.
export function launch(browser) {
  if (browser === "chromium") {
    return puppeteer.launch({
      executablePath: "/usr/bin/chromium",
      headless: true,
      protocolTimeout,
      args: [
        "--headless=new",
        "--no-sandbox",
        "--enable-unsafe-webgpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-quic",
      ],
    });
  }
  if (browser === "firefox") {
    return puppeteer.launch({
      browser: "firefox",
      executablePath: "/usr/bin/firefox-esr",
      headless: true,
      protocolTimeout,
      extraPrefsFirefox: {
        "dom.webgpu.enabled": true,
        "gfx.webgpu.ignore-blocklist": true,
      },
    });
  }
  throw new Error(`unknown browser ${browser}`);
}

/// Opens `url` in a new page of `instance` and waits until the page logs `done` (after setting
/// `window[done]` or `window[failed]`), a wasm panic reaches the console, the page throws, or
/// `timeout` ms pass. Listening costs the page nothing: a wasm call may hold its main thread for
/// long. Returns `{ page, value, stopped, running, errors }`: `value` is `window[done]`; `stopped`
/// says why the page stopped short; `running` is the last `start: NAME` console line's name.
export async function openAndWait(instance, url, { done, failed, timeout }) {
  const page = await instance.newPage();
  const state = { running: "(before the first check)", errors: [] };
  let finish;
  const finished = new Promise((resolve) => {
    finish = resolve;
  });
  page.on("console", (message) => {
    const text = message.text();
    if (text === "done") finish(null);
    if (text.startsWith("start: ")) state.running = text.slice(7);
    if (text.startsWith("panic: ") || message.type() === "error") state.errors.push(text);
    if (text.startsWith("panic: ")) finish(`the page died: ${text}`);
  });
  page.on("pageerror", (error) => {
    state.errors.push(String(error));
    finish(`the page died: ${error}`);
  });
  let timer;
  const late = new Promise((resolve) => {
    timer = setTimeout(() => resolve(`no result after ${timeout / 1000} s`), timeout);
  });
  let value = null;
  let stopped = null;
  try {
    await page.goto(url);
    stopped = await Promise.race([finished, late]);
    if (stopped === null) {
      value = await page.evaluate((done) => window[done] ?? null, done);
      stopped = await page.evaluate((failed) => window[failed] ?? null, failed);
    }
  } catch (error) {
    stopped = String(error);
  }
  clearTimeout(timer);
  return { page, value, stopped, running: state.running, errors: state.errors };
}
