// Waiting in the screenshot scripts: a sleep, and a poll until a probe gives a value.
export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `probe` every 10 ms until it returns something other than undefined or false. */
export async function until(what, probe, timeoutMs = 120_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}
