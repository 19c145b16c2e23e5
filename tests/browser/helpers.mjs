// Shared helpers of the browser tests: start kelp on a free port, launch Debian's Chromium
// through playwright-core, watch a page for console errors and CSP violations, and edit
// dumps (multi-document YAML, as `kelp demo --dump` prints it) as text.
import { spawn, execFileSync } from 'node:child_process';
import { createServer } from 'node:net';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { chromium } from 'playwright-core';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const KELP = process.env.KELP_BIN || path.join(ROOT, 'target', 'debug', 'kelp');
export const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';

/** A port that was free a moment ago (bind 127.0.0.1:0, read it, close). */
export function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.unref();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

const running = new Set();
process.on('exit', () => { for (const p of running) { try { p.kill('SIGKILL'); } catch { /* gone */ } } });

/**
 * Start kelp with `args(ports...)` and wait for "kelp: dashboard at URL" on stdout.
 * Retries with new ports when the process exits first (e.g. a port taken in between).
 */
export async function startKelp(args, { ports = 1, timeoutMs = 60_000, attempts = 3 } = {}) {
  if (!existsSync(KELP)) throw new Error(`${KELP} not found: run cargo build first (scripts/browser does)`);
  let lastError;
  for (let i = 0; i < attempts; i++) {
    const ps = [];
    for (let j = 0; j < ports; j++) ps.push(await freePort());
    let k;
    try {
      k = await launchKelp(args(...ps), timeoutMs);
    } catch (e) {
      lastError = e;
      continue;
    }
    // The URL is printed before the first analysis pass ends (503 until then): wait for 200.
    try {
      await eventually(async () => (await fetch(k.url)).status === 200, timeoutMs, `${k.url} to answer 200`);
    } catch (e) {
      await k.stop();
      throw new Error(`${e.message}\nstderr (last 2000 chars):\n${k.stderr().slice(-2000)}`);
    }
    return k;
  }
  throw lastError;
}

function launchKelp(argv, timeoutMs) {
  return new Promise((resolve, reject) => {
    const proc = spawn(KELP, argv, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    running.add(proc);
    let out = '';
    let err = '';
    let done = false;
    const fail = (why) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      try { proc.kill('SIGKILL'); } catch { /* gone */ }
      running.delete(proc);
      reject(new Error(`kelp ${argv.join(' ')}: ${why}\nstdout:\n${out}\nstderr (last 2000 chars):\n${err.slice(-2000)}`));
    };
    const timer = setTimeout(() => fail(`no "kelp: dashboard at" line within ${timeoutMs} ms`), timeoutMs);
    proc.stdout.setEncoding('utf8');
    proc.stderr.setEncoding('utf8');
    proc.stderr.on('data', (d) => { err += d; if (err.length > 200_000) err = err.slice(-100_000); });
    proc.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/kelp: dashboard at (.+)\n/);
      if (m && !done) {
        done = true;
        clearTimeout(timer);
        // The URL as a browser would take it (kelp prints the cluster name unencoded).
        const url = new URL(m[1].trim()).href;
        resolve({
          url,
          origin: new URL(url).origin,
          proc,
          stderr: () => err,
          async stop() {
            if (proc.exitCode !== null || proc.signalCode !== null) { running.delete(proc); return; }
            const exited = new Promise((r) => proc.once('exit', r));
            proc.kill('SIGTERM');
            const t = setTimeout(() => proc.kill('SIGKILL'), 3000);
            await exited;
            clearTimeout(t);
            running.delete(proc);
          },
        });
      }
    });
    proc.on('error', (e) => fail(e.message));
    proc.on('exit', (code, sig) => fail(`exited (${code ?? sig}) before serving`));
  });
}

/** `kelp demo` on a free port. */
export function startDemo() {
  return startKelp((p) => ['demo', '--addr', `127.0.0.1:${p}`]);
}

/** `kelp serve --from FILE` on free ports (the cluster is the file's stem). */
export function startServe(file) {
  return startKelp((d, m) => ['serve', '--from', file, '--dashboard-addr', `127.0.0.1:${d}`, '--metrics-addr', `127.0.0.1:${m}`], { ports: 2 });
}

/** The bundled demo dump, as YAML text. */
export function demoDump() {
  return execFileSync(KELP, ['demo', '--dump'], { encoding: 'utf8', maxBuffer: 64 << 20 });
}

/** Debian's Chromium, headless. Tests run as root: no sandbox. */
export function launchBrowser() {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} not found: install Debian's chromium (scripts/browser does, as root)`);
  return chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
}

/**
 * Watch a page: console errors, uncaught exceptions, and CSP violations (both the console
 * report and the securitypolicyviolation event, recorded by an init script, which CSP does
 * not govern). Call before the first navigation.
 */
export async function watch(page) {
  const problems = [];
  page.on('console', (m) => {
    if (m.type() === 'error' || /Content Security Policy/i.test(m.text())) {
      const loc = m.location();
      problems.push(`console ${m.type()}: ${m.text()}${loc && loc.url ? ` (${loc.url})` : ''}`);
    }
  });
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  await page.addInitScript(() => {
    window.__csp = [];
    document.addEventListener('securitypolicyviolation', (e) => {
      window.__csp.push(`${e.violatedDirective} blocked ${e.blockedURI || '(inline)'} in ${e.sourceFile || e.documentURI}:${e.lineNumber}`);
    });
  });
  return {
    problems,
    /**
     * Everything that went wrong. `favicon: false` leaves out the browser's own /favicon.ico
     * request failing, which only the panels test holds against the page.
     */
    async all({ favicon = true } = {}) {
      const csp = await page.evaluate(() => window.__csp || []).catch(() => []);
      return problems
        .filter((p) => favicon || !/\/favicon\.ico\)$/.test(p))
        .concat(csp.map((c) => `CSP violation: ${c}`));
    },
  };
}

// ---- dumps as text: multi-document YAML

export function splitDocs(yaml) { return yaml.split(/\n---\n/); }
export function joinDocs(docs) { return docs.join('\n---\n'); }

/** The document of one object (top-level kind, metadata.name and optional namespace). */
export function findDoc(docs, kind, name, namespace) {
  const i = docs.findIndex((d) => new RegExp(`^kind: ${kind}$`, 'm').test(d)
    && new RegExp(`^metadata:\\n(?:  .*\\n)*?  name: ${escapeRe(name)}$`, 'm').test(d)
    && (namespace === undefined || new RegExp(`^metadata:\\n(?:  .*\\n)*?  namespace: ${escapeRe(namespace)}$`, 'm').test(d)));
  if (i < 0) throw new Error(`no ${kind} ${namespace ? namespace + '/' : ''}${name} in the dump`);
  return i;
}

/** Events whose involvedObject is KIND NAME. */
export function findEvents(docs, kind, name) {
  const out = [];
  docs.forEach((d, i) => {
    if (/^kind: Event$/m.test(d) && new RegExp(`^involvedObject:\\n(?:  .*\\n)*?  kind: ${kind}\\n(?:  .*\\n)*?  name: ${escapeRe(name)}$`, 'm').test(d)) out.push(i);
  });
  return out;
}

export function escapeRe(s) { return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'); }

/** A YAML single-quoted scalar. */
export function yq(s) { return `'${s.replace(/'/g, "''")}'`; }

/** Replace a top-level `key: value` (with its continuation lines) in one document. */
export function setTopLevel(doc, key, value) {
  const re = new RegExp(`^${key}: .*(?:\\n[ ].*)*`, 'm');
  if (!re.test(doc)) throw new Error(`no top-level ${key} in document`);
  return doc.replace(re, `${key}: ${value}`);
}

/** Add metadata.annotations / metadata.labels entries (the map may exist or not). */
export function addMeta(doc, field, entries) {
  const lines = Object.entries(entries).map(([k, v]) => `    ${k}: ${yq(v)}`).join('\n');
  if (new RegExp(`^metadata:\\n(?:  .*\\n)*?  ${field}:$`, 'm').test(doc)) {
    return doc.replace(new RegExp(`^(metadata:\\n(?:  .*\\n)*?  ${field}:)$`, 'm'), `$1\n${lines}`);
  }
  return doc.replace(/^metadata:$/m, `metadata:\n  ${field}:\n${lines}`);
}

/** Poll fn until it returns a truthy value (or throw with the last error after ms). */
export async function eventually(fn, ms = 5000, what = 'condition') {
  const end = Date.now() + ms;
  let last;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (e) { last = e; }
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}${last ? `: ${last.message}` : ''}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
