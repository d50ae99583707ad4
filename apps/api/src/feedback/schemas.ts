// Wire schemas of /v1/machines/{machine_id}/feedback (routes.ts).
import { Type } from 'typebox';

export const ErrorBody = Type.Object({ error: Type.Object({ code: Type.String(), message: Type.String() }) }, { description: 'A coded error: `error.code` is stable.' });
const Timestamp = Type.String({ format: 'date-time' });

export const FeedbackBody = Type.Object(
  {
    from: Type.String({ maxLength: 64, description: 'Start of the span (ISO 8601, included).' }),
    to: Type.String({ maxLength: 64, description: 'End of the span (ISO 8601, excluded).' }),
    label: Type.String({ maxLength: 32, description: 'not_anomaly or anomaly.' }),
  },
  { additionalProperties: false },
);

export const FeedbackView = Type.Object({
  feedback_id: Type.String(),
  machine_id: Type.String(),
  from: Timestamp,
  to: Timestamp,
  label: Type.Union([Type.Literal('not_anomaly'), Type.Literal('anomaly')]),
  pattern: Type.Union(
    [
      Type.Object({
        low: Type.Number(),
        high: Type.Number(),
        direction: Type.Union([Type.Literal('up'), Type.Literal('down'), Type.Literal('both')]),
        points: Type.Integer(),
      }),
      Type.Null(),
    ],
    { description: 'What alerting recognises from the span (its flagged points\' value range and side); null when the span held no stored points.' },
  ),
  created_at: Timestamp,
});

// A machine id is at most 128 characters (a longer one could pass the server's path-segment limit
// and answer 414); its characters are the handler's to check, for a coded InvalidMachineId.
const MachineIdParam = Type.String({ maxLength: 128, description: 'Machine id: 1..128 of A-Z a-z 0-9 . _ : - starting with a letter or digit.' });
export const MachineParams = Type.Object({ machine_id: MachineIdParam });
export const FeedbackParams = Type.Object({ machine_id: MachineIdParam, feedback_id: Type.String({ maxLength: 128 }) });

export const FeedbackList = Type.Object({ feedback: Type.Array(FeedbackView) });
