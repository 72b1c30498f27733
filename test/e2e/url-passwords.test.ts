/**
 * B1/B4 (issue 34): a URL password is never printed, whatever its characters, and it is sent as
 * written (only the scheme and the host are case-insensitive). A real local store that asks for
 * Basic credentials serves a Flink checkpoint; the library and the real CLI read it with
 * passwords holding every printable ASCII character (raw and percent-encoded) and non-ASCII
 * ones. Nothing they print — error messages, `--json` errors, the success table and JSON,
 * `flink ls` and its JSON, what the inspector would send — holds the password.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sanitize, sanitizeError } from '../../inspector/sanitize.ts';
import { recoverChannelState } from '../../src/index.ts';
import { redactLocation, redactText } from '../../src/services/locations/redact.ts';
import { buildFlinkMetadata, oneInputChannel, opId } from '../helpers/flink-metadata-builder.ts';
import { makeTempRoot, runCli } from './harness.ts';

const STATE = Buffer.from([0, 0, 0, 0, 0, 0, 0, 2, 7, 8]);
const operator = opId(0x77);
const METADATA = buildFlinkMetadata(
  oneInputChannel({
    id: operator,
    payloadBytes: 2,
    delegate: { kind: 'relative', relativePath: 'state', size: STATE.length },
  }),
);

/** Every printable ASCII character. */
const PRINTABLE = Array.from({ length: 0x7f - 0x20 }, (_, i) => String.fromCharCode(0x20 + i));
const NON_ASCII = ['päss', '€uro', '密码', '🔑key', 'nb\u00a0sp', 'Ångström'];

interface AuthStore {
  readonly url: string;
  /** The password it accepts now; every request's Authorization is logged. */
  password: string;
  readonly seen: string[];
  stop(): Promise<void>;
}

async function startAuthStore(): Promise<AuthStore> {
  const store = { password: '', seen: [] as string[] } as AuthStore & { password: string };
  const server: Server = createServer((req, res) => {
    const auth = req.headers.authorization ?? '';
    store.seen.push(auth);
    const want = `Basic ${Buffer.from(`User:${store.password}`, 'utf8').toString('base64')}`;
    if (auth !== want) return void res.writeHead(401).end();
    const body =
      req.url === '/job/chk-1/_metadata'
        ? METADATA
        : req.url === '/job/chk-1/state'
          ? STATE
          : undefined;
    if (body === undefined) return void res.writeHead(404).end();
    res.writeHead(200, { 'content-length': body.length, etag: '"v1"' }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return Object.assign(store, {
    url: `127.0.0.1:${port}`,
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  });
}

/** The forms of `password` that would give it away. */
function forms(password: string): string[] {
  return [...new Set([password, encodeURIComponent(password)])];
}

function expectNoPassword(text: string, password: string, where: string): void {
  for (const form of forms(password)) {
    expect(text.includes(form), `${where} prints ${JSON.stringify(form)}: ${text}`).toBe(false);
  }
}

describe('B1 a URL password with any character is never printed', () => {
  let store: AuthStore;
  beforeAll(async () => {
    store = await startAuthStore();
  });
  afterAll(async () => {
    await store?.stop();
  });

  const url = (password: string, encode: boolean) =>
    `http://User:${encode ? encodeURIComponent(password) : password}@${store.url}/job/chk-1/_metadata`;

  it('the library: every printable ASCII and non-ASCII character, raw and encoded, in error messages and the inspector', async () => {
    const leaks: string[] = [];
    const passwords = [
      ...PRINTABLE.map((c) => `Pw${c}Secret9`),
      ...NON_ASCII.map((c) => `Pw${c}9`),
    ];
    for (const password of passwords) {
      for (const encode of [false, true]) {
        // The store wants another password: the read fails and its error is what is shown.
        store.password = 'not-this-one';
        const location = url(password, encode);
        const root = await makeTempRoot();
        const error = await recoverChannelState({
          checkpoint: location,
          spillRoot: root,
          flink: { operator, subtask: 0 },
          channels: () => ({ onBuffer: () => undefined, onFinished: () => undefined }),
        }).done.then(
          () => new Error('read with a wrong password'),
          (e: unknown) => e as Error,
        );
        const shown = [
          error.message,
          String(error),
          JSON.stringify({ ...error }),
          redactLocation(location),
          redactText(`GET ${location} failed`),
          JSON.stringify(sanitize({ checkpoint: location, log: [`reading ${location}`] })),
          JSON.stringify(sanitizeError(error)),
        ].join('\n');
        for (const form of forms(password)) {
          if (shown.includes(form)) leaks.push(`${JSON.stringify(password)} (encoded: ${encode})`);
        }
      }
    }
    expect(leaks).toEqual([]);
  }, 120_000);

  const cli: [string, string, boolean][] = [
    ['every printable ASCII character, raw', PRINTABLE.join(''), false],
    ['every printable ASCII character, percent-encoded', PRINTABLE.join(''), true],
    [
      "the characters a URL's user info may hold raw (' \" < > space @ : …)",
      PRINTABLE.filter((c) => !'/?#\\%'.includes(c)).join(''),
      false,
    ],
    ['non-ASCII, raw', NON_ASCII.join(''), false],
  ];
  for (const [name, password, encode] of cli) {
    it(`the CLI: ${name} — recover, recover --json, flink ls, flink ls --json, and the failures`, async () => {
      const root = await makeTempRoot();
      const location = url(password, encode);
      // B4: the password is sent as written, case and all; with a raw '/', '?', '#' or '%' the
      // URL cannot carry it, and the refusal must not print it either.
      const usable = encode || !/[/?#\\%]/.test(password);
      const runs: [string, string[]][] = [];
      for (const accept of usable ? [password, 'wrong-one'] : ['wrong-one']) {
        store.password = accept;
        for (const json of [[], ['--json']]) {
          const out = join(root, `out-${runs.length}`);
          const recover = await runCli([
            'recover',
            location,
            '--out',
            out,
            '--spill-root',
            root,
            '--operator',
            operator,
            '--subtask',
            '0',
            ...json,
          ]);
          if (accept === password) expect(recover.code, recover.stderr).toBe(0);
          else expect(recover.code).not.toBe(0);
          runs.push([
            `recover ${json.join('')} (store wants ${accept})`,
            [recover.stdout, recover.stderr],
          ]);
          const ls = await runCli(['flink', 'ls', location, ...json]);
          if (accept === password) expect(ls.code, ls.stderr).toBe(0);
          runs.push([`flink ls ${json.join('')} (store wants ${accept})`, [ls.stdout, ls.stderr]]);
        }
      }
      for (const [where, texts] of runs) {
        for (const text of texts) expectNoPassword(text, password, where);
      }
    }, 120_000);
  }
});

describe('B4 mixed-case credentials are sent as written', () => {
  it('http://Alice:PassWord9@… reads the _metadata and its channel state with the same case', async () => {
    const store = await startAuthStore();
    try {
      store.password = 'PassWord9';
      const root = await makeTempRoot();
      const chunks: Buffer[] = [];
      await recoverChannelState({
        checkpoint: `HTTP://User:PassWord9@${store.url.toUpperCase()}/job/chk-1/_metadata`,
        spillRoot: root,
        flink: { operator, subtask: 0 },
        channels: () => ({
          onBuffer: (b) => void chunks.push(Buffer.from(b)),
          onFinished: () => undefined,
        }),
      }).done;
      expect(Buffer.concat(chunks)).toEqual(Buffer.from([7, 8]));
      const want = `Basic ${Buffer.from('User:PassWord9').toString('base64')}`;
      expect(store.seen.length).toBeGreaterThan(1);
      expect(store.seen.every((a) => a === want)).toBe(true);
    } finally {
      await store.stop();
    }
  });
});
