/** Every scenario of the fault suite, in the order it runs them. */
import type { Scenario } from '../harness/scenario';
import { brokerRestart } from './broker-restart';
import { databaseRestart } from './database-restart';
import { executorKill9, executorRestartLoop, executorRolling } from './executor-kill';
import { poisonJob } from './poison-job';
import { schedulerFreeze } from './scheduler-freeze';
import { slowReceiver } from './slow-receiver';

export const SCENARIOS: readonly Scenario[] = [
  schedulerFreeze,
  databaseRestart,
  executorKill9,
  executorRestartLoop,
  executorRolling,
  slowReceiver,
  brokerRestart,
  poisonJob,
];
