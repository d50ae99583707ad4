// Versions for the ReplacingMergeTree rows the ClickHouse store writes. ClickHouse keeps the row with
// the greatest version, so a write must carry a version greater than (a) every version this process
// wrote before and (b) the version of the row it was computed from, even when that row came from a
// replica whose clock runs ahead. A hybrid logical clock gives both: wall-clock microseconds when they
// are ahead, otherwise one more than the greatest version seen.
//
// Versions stay below 2^53 (wall-clock microseconds reach it in the year 2255), so they travel as
// JSON numbers.
export class VersionClock {
  private last = 0;

  constructor(private readonly wallClockMs: () => number = Date.now) {}

  /** A version greater than every one issued or observed before, and than `basedOn` when given. */
  next(basedOn = 0): number {
    const wall = Math.floor(this.wallClockMs()) * 1000;
    this.last = Math.max(wall, this.last + 1, basedOn + 1);
    return this.last;
  }
}
