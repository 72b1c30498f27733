/**
 * The bench's JVM peer phase (bench/jvm-peer.ts) in quick mode, on a small REAL Flink 1.20
 * checkpoint the harness's MiniCluster job makes: the JVM extractor (Flink's own classes) and
 * `spillway recover --all` write the same files with the same bytes (the phase throws
 * otherwise), every figure is there with both sides' peak RSS, and the phase's work dir is
 * gone afterwards. Skips with a printed reason where java or mvn is missing. Timings are never
 * asserted.
 */
import { readdir } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { whyNoJvm } from '../../bench/jvm-harness.ts';
import { measureJvmPeer } from '../../bench/jvm-peer.ts';
import { makeTempRoot } from '../helpers/temp.ts';

const why = whyNoJvm();
if (why !== undefined) console.log(`bench JVM peer: skipped, ${why}`);

describe.skipIf(why !== undefined)('bench: Spillway vs the JVM on a real Flink checkpoint', () => {
  it('recover --all and the JVM extractor write identical trees; ratios, JVM read time and RSS of both are reported; nothing is left', async () => {
    const dir = await makeTempRoot();
    const peer = await measureJvmPeer({ dir, minMiB: 2, pairs: 1 });
    if ('skipped' in peer) throw new Error(`the phase skipped: ${peer.skipped}`);
    expect(peer.sameBytes).toBe(true);
    expect(peer.checkpoint.bytes).toBeGreaterThanOrEqual(2 * 1024 * 1024);
    expect(peer.checkpoint.files).toBeGreaterThan(0);
    expect(peer.checkpoint.entries).toBeGreaterThan(0);
    for (const s of [
      peer.recoverAllVsJvm,
      peer.lsVsJvm,
      peer.jvmReadMs,
      peer.jvmMetadataLoadMs,
      peer.recoverAllFloorMs,
      peer.recoverAllFloorVsJvm,
      peer.recoverAllVsFloor,
    ]) {
      expect(s.median).toBeGreaterThan(0);
    }
    for (const rss of Object.values(peer.peakRssMiB)) {
      if (rss !== null) expect(rss).toBeGreaterThan(0);
    }
    expect(await readdir(dir)).toEqual([]);
  }, 600_000);
});
