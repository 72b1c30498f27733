/**
 * `spillway demo` removes its temp dir (`spillway-demo-*`: the checkpoint's copies, tens of
 * MiB) on the endings that do not pass through its own cleanup, each in a real child with a
 * private TMPDIR:
 * - the terminal goes away without a hang-up signal (a pseudo-terminal that is not the child's
 *   controlling one, its master closed): every progress write then fails with EIO, and the run
 *   must stop and clean up rather than loop on with no one watching — without the stop the
 *   child keeps its dir until its last loop;
 * - a third signal exits at once (`process.exit`, docs/cli.md): only the `'exit'` hook removes
 *   the dir then — without it the dir stays behind.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { spawnTracked, waitFor } from '../helpers/processes.ts';
import { makeTempRoot } from '../helpers/temp.ts';
import { demoDirs, spillwayBin, startDemo } from './harness.ts';

const havePython = (() => {
  try {
    execFileSync('python3', ['-c', 'import pty, os'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

/**
 * Runs argv with stdout and stderr on a fresh pty that is NOT its controlling terminal (a new
 * session that never opens it), relays what it writes to our stdout, and closes the master
 * when a line arrives on our stdin: the child sees EIO on its next write and no SIGHUP.
 */
const PTY_HOLDER = `
import os, subprocess, sys, threading
master, slave = os.openpty()
child = subprocess.Popen(sys.argv[1:], stdin=slave, stdout=slave, stderr=slave,
                         start_new_session=True)
os.close(slave)
print("pid", child.pid, flush=True)
def relay():
    try:
        while True:
            data = os.read(master, 65536)
            if not data: break
            sys.stdout.buffer.write(data); sys.stdout.flush()
    except OSError:
        pass
threading.Thread(target=relay, daemon=True).start()
sys.stdin.readline()
os.close(master)
rc = child.wait()
sys.exit(128 - rc if rc < 0 else rc)
`;

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Whether signal `number` is still pending for the process `pid` (its shared pending set). */
function pending(pid: number, number: number): boolean {
  try {
    const mask = /^ShdPnd:\s+([0-9a-f]+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return mask !== undefined && (BigInt(`0x${mask}`) & (1n << BigInt(number - 1))) !== 0n;
  } catch {
    return false; // exited: nothing is pending
  }
}

describe('demo temp dir removed on endings outside its own cleanup', () => {
  it.skipIf(!havePython)(
    'terminal gone without SIGHUP (EIO on every write): the demo stops, exits 1 and leaves no spillway-demo-* dir',
    async () => {
      const tmp = await makeTempRoot();
      const holder = spawnTracked(
        'python3',
        [
          '-c',
          PTY_HOLDER,
          process.execPath,
          spillwayBin,
          'demo',
          '--tasks',
          '2',
          '--loops',
          '1000000',
          '--state-mb',
          '1',
        ],
        { env: { TMPDIR: tmp, SPILLWAY_SPILL_ROOT: '' } },
      );
      let pid: number | undefined;
      try {
        // The demo draws its progress on the pty: it is running and writing there.
        await waitFor(
          'the progress bar on the pty',
          () => (holder.stdout.includes('/1000000') ? true : undefined),
          { child: holder },
        );
        pid = Number(/^pid (\d+)$/m.exec(holder.stdout)![1]);
        expect(await demoDirs(tmp)).toHaveLength(1);
        holder.proc.stdin!.write('close\n');
        // Within 20 s (it stops at the next progress write, ~100 ms), not at its last loop.
        let timer: NodeJS.Timeout | undefined;
        const ended = await Promise.race([
          holder.exited,
          new Promise<'still running'>((resolve) => {
            timer = setTimeout(() => resolve('still running'), 20_000);
          }),
        ]);
        clearTimeout(timer);
        expect(ended).not.toBe('still running');
        const { code } = await holder.exited;
        // Stopped (cut short with no one to tell: 1), not a loop on to the millionth recovery.
        expect(code).toBe(1);
        expect(await demoDirs(tmp)).toEqual([]);
      } finally {
        if (pid !== undefined && alive(pid)) process.kill(pid, 'SIGKILL');
      }
    },
    60_000,
  );

  it("a third signal exits before cleanup finished: exit 129 (the first signal's), and the exit hook leaves no spillway-demo-* dir", async () => {
    const { tmp, child } = await startDemo([
      '--tasks',
      '4',
      '--loops',
      '1000000',
      '--state-mb',
      '8',
    ]);
    // Recoveries under way, so a cancel has work to do when the signals come.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    // Three different signals (the same one twice may merge while pending): the first cancels,
    // the second is told to wait, the third exits at once from inside the cancel's cleanup.
    // One after the other, each sent once the kernel has delivered the one before (it left the
    // process's shared pending set): sent at once, the three could be handled in any order
    // (each may land on another thread). Delivery takes microseconds, so the cleanup the first
    // one starts is still running when the third comes.
    for (const [name, number] of [
      ['SIGHUP', 1],
      ['SIGTERM', 15],
      ['SIGINT', 2],
    ] as const) {
      child.proc.kill(name);
      await waitFor(
        `${name} delivered`,
        () => (pending(child.proc.pid!, number) ? undefined : true),
        {
          child,
        },
      );
    }
    const { code, signal } = await child.exited;
    expect({ code, signal }).toEqual({ code: 129, signal: null });
    // Ended by the third signal's exit, not by the cancel's own end (which says so).
    expect(child.stderr).not.toMatch(/cancelled by/);
    expect(await demoDirs(tmp)).toEqual([]);
  });
});
