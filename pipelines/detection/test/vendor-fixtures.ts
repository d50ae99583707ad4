// The vendor's v1.1 example series (EntireDetect.json / LastDetect.json in
// reference/vendor-api/v1.1/examples): 48 monthly points from 1972-01, period 12, one
// obvious spike (index 25, 1030). Inlined so the unit tier needs nothing outside the package.
import { parseIsoTimestamp, type SeriesInput } from '../src/index.js';

export const VENDOR_MONTHLY_VALUES = [
  826, 799, 890, 900, 961, 935, 894, 855, 809, 810, 766, 805, 821, 773, 883, 898, 957, 924, 881, 837, 784, 791, 760, 802,
  828, 1030, 889, 902, 969, 947, 908, 867, 815, 812, 773, 813, 834, 782, 892, 903, 966, 937, 896, 858, 817, 827, 797, 843,
] as const;

export function vendorMonthlyInput(overrides: Partial<SeriesInput> = {}): SeriesInput {
  const timestampsMs = VENDOR_MONTHLY_VALUES.map((_, i) => {
    const year = 1972 + Math.floor(i / 12);
    const month = String((i % 12) + 1).padStart(2, '0');
    return parseIsoTimestamp(`${year}-${month}-01T00:00:00Z`)!;
  });
  return {
    timestampsMs,
    values: [...VENDOR_MONTHLY_VALUES],
    granularity: 'monthly',
    customInterval: 1,
    imputeMode: 'auto',
    ...overrides,
  };
}
