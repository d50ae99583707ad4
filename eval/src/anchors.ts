// Published reference figures (issue 3; nab_dev/SCORING.md; tcpd/ANCHORS.md). Not computed here.

export interface Anchor {
  readonly name: string;
  readonly source: string;
  /** NAB dev split (35 files): standard, reward_low_FP_rate, reward_low_FN_rate. */
  readonly nab?: readonly [number, number, number];
  readonly tcpdF1?: number;
  readonly tcpdCover?: number;
}

export const ANCHORS: readonly Anchor[] = [
  { name: 'ARTime (published)', source: 'NAB per-file results renormalised to the 35 dev files', nab: [67.54, 56.59, 73.51] },
  { name: 'Numenta HTM (published)', source: 'NuPIC 0.5.6 per-file results renormalised to the 35 dev files', nab: [66.47, 59.97, 70.98] },
  { name: 'binseg default (published)', source: 'TCPDBench default scores, mean over the 25 local series', tcpdF1: 0.6901623872856498, tcpdCover: 0.6549882630836892 },
  { name: 'zero (published)', source: 'TCPDBench default scores, mean over the 25 local series', tcpdF1: 0.6468748579776149, tcpdCover: 0.5568658912670126 },
  { name: 'bocpd oracle (published)', source: 'TCPDBench oracle F1, best parameters per series', tcpdF1: 0.8760509568783725 },
];
