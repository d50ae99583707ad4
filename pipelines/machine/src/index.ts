export { fitMachineModel, machineThreshold, scoreMachine, MACHINE_MODEL_TUNING, MIN_MACHINE_MODEL_ROWS } from './model.js';
export type { ChannelMatrix, MachineModel, MachineScores, ScoreContext } from './model.js';
export { judgeMachine, episodeDrivers, DRIVER_SHARE } from './judge.js';
export type { MachineEpisode, MachineVerdict } from './judge.js';
export { symmetricEigen } from './linalg.js';
export { initialStreamState, streamMachine } from './stream.js';
export type { MachineStreamState, OpenEpisode, StreamedPoint, StreamEpisode, StreamStep } from './stream.js';
export { decodeMachineModel, encodeMachineModel } from './codec.js';
