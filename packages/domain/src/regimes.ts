// A machine's operating regimes, in the order every schema lists them (the Avro enum, the
// ClickHouse Enum8, the API's answers): the one list the engine, the stores and the alerts share.
export const REGIMES = ['HEALTHY', 'ACTIVE', 'TRANSITION', 'SHOCK', 'UNKNOWN'] as const;
export type Regime = (typeof REGIMES)[number];
