// The job request's schema check where Fastify's does not run: a CSV file read into the JSON body,
// and the options of a body the JSON scanner read (./json-scan.ts). Apart from ./request.ts, which
// ./schemas.ts reads its limits from.
import { bodyValidator } from '../schema-validation.js';
import { ID_RULES } from '../native/schemas.js';
import { JobRequest } from './schemas.js';

/** The codes of schema failures: the machine ids', the series', else InvalidArgument. */
export const JOB_SCHEMA_ERRORS = { fields: { machine_id: 'InvalidMachineId', series: 'InvalidSeries', series_list: 'InvalidSeries' }, patterns: ID_RULES } as const;

export const checkJobRequest = bodyValidator(JobRequest, JOB_SCHEMA_ERRORS);
