// s3rver 3.7.1 ships no types; the tests use only this much of it.
declare module 's3rver' {
  import type { AddressInfo } from 'node:net';
  export default class S3rver {
    constructor(options: {
      address?: string;
      port?: number;
      directory: string;
      silent?: boolean;
      configureBuckets?: { name: string; configs: unknown[] }[];
    });
    run(): Promise<AddressInfo>;
    close(): Promise<void>;
  }
}
