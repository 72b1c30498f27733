/**
 * B2/B3 (issue 34): a remote Flink checkpoint can make Spillway request only URLs under its
 * roots. Two real local http servers log every request they get: the checkpoint's store and
 * another one. Across a corpus of hostile handles — percent-encoded dot segments, backslashes,
 * control characters inside `..`, absolute forms, another port, IPv6 and user-info tricks,
 * redirects to another host and off the job dir, the same through `relocate` — every recovery is
 * refused, and neither server ever sees a request outside `/job/`.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recoverChannelState } from '../../src/index.ts';
import { CheckpointPathError, RemoteUnsupportedError } from '../../src/services/errors.ts';
import { buildFlinkMetadata, opId, type StreamSpec } from '../helpers/flink-metadata-builder.ts';
import { listSpill } from '../helpers/spill-root.ts';
import { makeTempRoot } from '../helpers/temp.ts';

/** A channel-state stream: header version 0, one entry of 2 bytes at offset 4. */
const STATE = Buffer.from([0, 0, 0, 0, 0, 0, 0, 2, 7, 8]);
/** What must never be read: a file of the same shape outside the job dir. */
const SECRET = Buffer.from([0, 0, 0, 0, 0, 0, 0, 2, 0x5e, 0xc7]);

interface LoggingServer {
  readonly url: string;
  readonly port: number;
  /** Every request as the server got it (the raw request target). */
  readonly log: string[];
  stop(): Promise<void>;
}

/** A store: files by path, redirects by path; everything asked for is logged first. */
async function startServer(
  files: Map<string, Buffer>,
  redirects: Map<string, () => string>,
): Promise<LoggingServer> {
  const log: string[] = [];
  const server: Server = createServer((req, res) => {
    const target = req.url ?? '';
    log.push(target);
    const to = redirects.get(target);
    if (to !== undefined) {
      res.writeHead(302, { location: to() }).end();
      return;
    }
    const body = files.get(target);
    if (body === undefined) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-length': body.length, etag: '"v1"' }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    log,
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A request target that stays under `/job/` whatever decoding or normalising a server does. */
function underJob(target: string): boolean {
  let path = target.replace(/[?#].*$/s, '');
  for (let round = 0; round < 4; round++) {
    try {
      path = decodeURIComponent(path);
    } catch {
      return false;
    }
  }
  if (/[\\\u0000-\u001f]/.test(path)) return false;
  const segments = path.split('/');
  return segments[1] === 'job' && !segments.some((s) => s === '..' || s === '.');
}

const operator = opId(0x51);

/** A `_metadata` whose subtask 0 has one input channel read through `delegate`. */
function metadataNaming(delegate: StreamSpec): Buffer {
  return buildFlinkMetadata({
    version: 4,
    checkpointId: 1,
    operators: [
      {
        id: operator,
        parallelism: 1,
        maxParallelism: 8,
        subtasks: [
          {
            index: 0,
            inputs: [
              { subtaskIndex: 0, gate: 0, channel: 0, offsets: [4], stateSize: 6, delegate },
            ],
          },
        ],
      },
    ],
  });
}

describe('B2/B3 a remote Flink checkpoint requests nothing outside its roots', () => {
  const files = new Map<string, Buffer>();
  const redirects = new Map<string, () => string>();
  const otherFiles = new Map<string, Buffer>();
  let store: LoggingServer;
  let other: LoggingServer;

  beforeAll(async () => {
    store = await startServer(files, redirects);
    other = await startServer(otherFiles, new Map());
    files.set('/secret.bin', SECRET);
    files.set('/job/chk-0/state', STATE);
    files.set('/job/chk-0/secret.bin', SECRET);
    otherFiles.set('/job/chk-0/state', SECRET);
    redirects.set('/job/chk-0/to-other', () => `${other.url}/job/chk-0/state`);
    redirects.set('/job/chk-0/to-root', () => '/secret.bin');
    redirects.set('/job/chk-0/to-sibling', () => '/job/chk-0/state');
  });
  afterAll(async () => {
    await store?.stop();
    await other?.stop();
  });

  /** Where both logs stand now: a case judges only the requests it made itself. */
  const marks = () => [store.log.length, other.log.length] as const;
  function expectNoRequestOutside([s0, o0]: readonly [number, number]): void {
    expect(store.log.slice(s0).filter((t) => !underJob(t))).toEqual([]);
    expect(other.log.slice(o0)).toEqual([]);
  }

  let next = 1;
  /** Serves a checkpoint naming `delegate` and recovers it; resolves to its bytes or its error. */
  async function recoverNaming(
    delegate: StreamSpec,
    relocate?: { from: string; to: string }[],
  ): Promise<{ bytes?: Buffer; error?: unknown }> {
    const dir = `/job/chk-${next++}`;
    files.set(`${dir}/_metadata`, metadataNaming(delegate));
    const root = await makeTempRoot();
    const chunks: Buffer[] = [];
    const recovery = recoverChannelState({
      checkpoint: `${store.url}${dir}/_metadata`,
      spillRoot: root,
      flink: { operator, subtask: 0, ...(relocate !== undefined ? { relocate } : {}) },
      channels: () => ({
        onBuffer: (b) => void chunks.push(Buffer.from(b)),
        onFinished: () => undefined,
      }),
    });
    const result = await recovery.done.then(
      () => ({ bytes: Buffer.concat(chunks) }),
      (error: unknown) => ({ error }),
    );
    expect(listSpill(root)).toEqual({ taskDirs: [], spillFiles: [] });
    return result;
  }

  it('the control: a handle under the job dir is read (absolute, relative and relocated)', async () => {
    const size = STATE.length;
    for (const delegate of [
      { kind: 'file', path: `${store.url}/job/chk-0/state`, size },
      { kind: 'relative', relativePath: 'state', size },
    ] as const) {
      files.set(`/job/chk-${next}/state`, STATE);
      const mark = marks();
      const { bytes, error } = await recoverNaming(delegate);
      expect(error).toBeUndefined();
      expect(bytes).toEqual(Buffer.from([7, 8]));
    }
    const moved = await recoverNaming({ kind: 'file', path: '/old/job/chk-0/state', size }, [
      { from: '/old/job', to: `${store.url}/job` },
    ]);
    expect(moved.error).toBeUndefined();
    expect(moved.bytes).toEqual(Buffer.from([7, 8]));
  });

  const s = () => store.url;
  const o = () => other.url;
  const absolute: [string, () => string][] = [
    ['%2e%2e segments', () => `${s()}/job/chk-0/%2e%2e/%2e%2e/secret.bin`],
    ['%2E%2E upper case', () => `${s()}/job/chk-0/%2E%2E/%2E%2E/secret.bin`],
    ['.%2e segments', () => `${s()}/job/chk-0/.%2e/.%2e/secret.bin`],
    ['backslashes', () => `${s()}/job/chk-0/..\\..\\secret.bin`],
    ['a TAB inside ..', () => `${s()}/job/chk-0/.\t./.\t./secret.bin`],
    ['a LF inside ..', () => `${s()}/job/chk-0/.\n./.\n./secret.bin`],
    ['a CR inside ..', () => `${s()}/job/chk-0/.\r./.\r./secret.bin`],
    ['plain .. segments', () => `${s()}/job/chk-0/../../secret.bin`],
    ['an encoded slash (..%2f)', () => `${s()}/job/chk-0/..%2f..%2fsecret.bin`],
    ['an encoded backslash (..%5c)', () => `${s()}/job/chk-0/..%5c..%5csecret.bin`],
    ['double encoding (%252e%252e)', () => `${s()}/job/chk-0/%252e%252e/%252e%252e/secret.bin`],
    ['the absolute form outside the job dir', () => `${s()}/secret.bin`],
    ['a prefix that is not a segment (/jobX)', () => `${s()}/jobX/secret.bin`],
    [
      'upper-case scheme with ..',
      () => `HTTP://127.0.0.1:${store.port}/job/chk-0/../../secret.bin`,
    ],
    ['another port', () => `${o()}/job/chk-0/state`],
    ['localhost for another port', () => `http://localhost:${other.port}/job/chk-0/state`],
    [
      'user info that looks like the host',
      () => `http://127.0.0.1:${store.port}@127.0.0.1:${other.port}/job/chk-0/state`,
    ],
    [
      'user info with a slash-like backslash',
      () => `http://127.0.0.1:${store.port}\\@127.0.0.1:${other.port}/job/chk-0/state`,
    ],
    ['IPv6 loopback', () => `http://[::1]:${other.port}/job/chk-0/state`],
    ['IPv4-mapped IPv6', () => `http://[::ffff:127.0.0.1]:${other.port}/job/chk-0/state`],
    ['a decimal IPv4 for another port', () => `http://2130706433:${other.port}/job/chk-0/state`],
    ['https of another host', () => `https://127.0.0.2:${other.port}/job/chk-0/state`],
    ['a NUL in the path', () => `${s()}/job/chk-0/\u0000/../../secret.bin`],
    ['a redirect to another host', () => `${s()}/job/chk-0/to-other`],
    ['a same-origin redirect off the job dir', () => `${s()}/job/chk-0/to-root`],
  ];
  for (const [name, url] of absolute) {
    it(`an absolute handle with ${name} is refused and requests nothing outside the roots`, async () => {
      const mark = marks();
      const { bytes, error } = await recoverNaming({ kind: 'file', path: url(), size: 10 });
      expect(bytes).toBeUndefined();
      expect(error).toBeInstanceOf(Error);
      expect([CheckpointPathError, RemoteUnsupportedError].some((c) => error instanceof c)).toBe(
        true,
      );
      expectNoRequestOutside(mark);
    });
  }

  const relative = [
    '../../secret.bin',
    '%2e%2e/%2e%2e/secret.bin',
    '.%2e/.%2e/secret.bin',
    '..\\..\\secret.bin',
    '.\t./.\t./secret.bin',
    '.\n./.\n./secret.bin',
    '..%2f..%2fsecret.bin',
    '/secret.bin',
    '//127.0.0.1/secret.bin',
    '\\\\127.0.0.1\\secret.bin',
    `http://127.0.0.1:1/x`,
    '?/../../secret.bin',
  ];
  for (const path of relative) {
    it(`a relative handle ${JSON.stringify(path)} is refused and requests nothing outside the roots`, async () => {
      const mark = marks();
      const { bytes, error } = await recoverNaming({
        kind: 'relative',
        relativePath: path,
        size: 10,
      });
      expect(bytes).toBeUndefined();
      expect(error).toBeInstanceOf(CheckpointPathError);
      expectNoRequestOutside(mark);
    });
  }

  const relocated = [
    '/old/job/chk-0/../../secret.bin',
    '/old/job/%2e%2e/secret.bin',
    '/old/job/chk-0/..%2f..%2fsecret.bin',
    '/old/job/.%2e/secret.bin',
  ];
  for (const path of relocated) {
    it(`a handle ${path} relocated to http://…/job is refused and requests nothing outside it`, async () => {
      const mark = marks();
      const { bytes, error } = await recoverNaming({ kind: 'file', path, size: 10 }, [
        { from: '/old/job', to: `${store.url}/job` },
      ]);
      expect(bytes).toBeUndefined();
      expect(error).toBeInstanceOf(CheckpointPathError);
      expectNoRequestOutside(mark);
    });
  }

  it('a redirect is not followed even inside the job dir (none is, for a file a handle names)', async () => {
    const before = store.log.length;
    const { error } = await recoverNaming({
      kind: 'file',
      path: `${store.url}/job/chk-0/to-sibling`,
      size: 10,
    });
    expect(error).toBeInstanceOf(RemoteUnsupportedError);
    expect((error as Error).message).toMatch(/redirect/);
    expect(store.log.slice(before)).not.toContain('/job/chk-0/state');
  });
});
