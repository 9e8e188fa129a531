/**
 * Scenario 2 (issue 24, defect 2): PostgreSQL restarted in immediate mode (`pg_ctl stop -m
 * immediate`, down ~6 s, then started) while webhook calls are in flight (10% of calls take 2 s, so
 * there always are some). No app process is interrupted. Bounds: exactly one effect per webhook-id
 * (a call the executor itself cut does not count), recovery within 5 s of the database's return,
 * nothing lost or early.
 */
import { recoveryMs } from '../harness/oracle';
import { STEADY } from '../harness/receiver';
import { runScenario, seconds, type Scenario } from '../harness/scenario';
import { sleep, waitUpTo } from '../harness/wait';

/** How long PostgreSQL stays stopped before it is started again (its start-up adds 1-4 s). */
const DOWN_MS = 5_000;
const RECOVERY_BOUND_MS = 5_000;

export const databaseRestart: Scenario = {
  name: 'database-restart',
  title: 'PostgreSQL restart in immediate mode (~6 s down) with webhook calls in flight',
  bound: `one effect per webhook-id unless the call was cut; recovery ≤ ${RECOVERY_BOUND_MS / 1000} s after the database is back; nothing lost or early`,
  run: (ctx) => {
    const restarts = ctx.short ? 1 : 2;
    const observeMs = ctx.short ? 25_000 : 45_000;
    return runScenario(
      ctx,
      {
        name: 'database-restart',
        title: databaseRestart.title,
        deployment: { schedulers: 2, executors: 2, behaviour: { ...STEADY, slowShare: 0.1, slowMs: 2_000 } },
        plannedMs: 10_000 + restarts * (DOWN_MS + observeMs) + 10_000,
      },
      async (run) => {
        const { d } = run;
        const pg = d.stack.postgres;
        const faults: { down: number; back: number; inFlight: number }[] = [];
        await sleep(run.baselineMs); // baseline
        for (let i = 1; i <= restarts; i++) {
          // Stop when calls are in flight (there nearly always are: 10% take 2 s).
          await waitUpTo(
            () => (d.receiver.calls.filter((c) => c.outcome === 'pending').length >= 3 ? true : undefined),
            10_000,
            20,
          );
          const inFlight = d.receiver.calls.filter((c) => c.outcome === 'pending').length;
          const down = run.fault(
            `restart ${i}: stopping PostgreSQL (immediate mode) with ${inFlight} webhook calls in flight`,
          );
          await pg.stopImmediate();
          run.mark(`restart ${i}: PostgreSQL stopped`);
          await sleep(DOWN_MS);
          await pg.start();
          const back = run.mark(
            `restart ${i}: PostgreSQL accepts connections again (down ${seconds(Date.now() - down)})`,
          );
          faults.push({ down, back, inFlight });
          await sleep(observeMs);
        }
        run.endWindow();
        return ({ verdicts, figures, to, recovery }) => {
          run.check(
            'one effect per webhook-id',
            '0 effects beyond the first (calls cut by the caller do not count)',
            `${figures.duplicateEffects} duplicate effects (${figures.duplicateSameAttempt} with the same attempt number)`,
            figures.duplicateEffects === 0,
          );
          const recoveries = faults.map((f, i) =>
            recoveryMs(verdicts, f.back, f.down - 1_000, faults[i + 1]?.down ?? to, recovery),
          );
          run.details.restarts = faults.map((f, i) => ({
            down: new Date(f.down).toISOString(),
            back: new Date(f.back).toISOString(),
            downMs: f.back - f.down,
            callsInFlight: f.inFlight,
            recoveryMs: recoveries[i] ?? null,
          }));
          run.recoveryBoundMs = RECOVERY_BOUND_MS;
          run.recoveryMs = recoveries.some((r) => r === undefined)
            ? null
            : Math.max(...recoveries.map((r) => r!));
          run.check(
            'recovery after the database is back',
            `≤ ${RECOVERY_BOUND_MS / 1000} s after each restart`,
            recoveries.map((r) => (r === undefined ? 'never' : seconds(r))).join(', '),
            recoveries.every((r) => r !== undefined && r <= RECOVERY_BOUND_MS),
          );
          const late3s = verdicts.filter(
            (v) => v.firstArrival !== undefined && v.firstArrival - v.scheduled > 3_000,
          ).length;
          run.note(`${late3s} occurrences arrived more than 3 s late`);
        };
      },
    );
  },
};
