/**
 * The one length limit both an SPWC entry (formats/spwc) and a rescaled record (rescale/) obey:
 * a record is written back as one entry, so it can be no longer than an entry. It lives here,
 * beside both folders, so that formats/ may use rescale/'s key-group maths while rescale/ never
 * imports formats/ (the folder arrows run one way).
 */

/**
 * Largest valid payload length of one entry (256 MiB, inclusive).
 *
 * @example
 * ```ts
 * if (payload.length > MAX_ENTRY_LENGTH) throw new RangeError('entry too large');
 * ```
 */
export const MAX_ENTRY_LENGTH = 268435456;
