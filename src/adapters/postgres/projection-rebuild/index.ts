export { rebuildProjections } from './rebuild-projections';
export type {
  DifferenceKind,
  ProjectionReport,
  RebuildDifference,
  RebuildOptions,
  RebuildProgress,
  RebuildReport,
} from './types';
